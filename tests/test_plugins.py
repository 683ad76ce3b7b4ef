"""Residual rules from plugins: registered, found through RR_PLUGINS and entry points, seen by every command.

A plugin changes the registry of the process that imports it, so each check that loads one runs in a
child process of its own (`in_child`), and the registry of this test session stays rr's.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rr_core.errors import InputError
from rr_core.plugins import ENV
from rr_core.variants import VARIANTS, register_residual

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = '''
"""Two rules for rr's tests: a per-channel scale at 0.1, and a gated rule with a custom init."""
import torch
import torch.nn as nn

import rr_model


class ChannelScale(nn.Module):
    """h + s * u, s = 0.1 per channel at init."""

    def __init__(self, d_model):
        super().__init__()
        self.scale = nn.Parameter(torch.full((d_model,), 0.1))

    def forward(self, h, u):
        return h + self.scale * u


class UpdateGate(nn.Module):
    """h + sigmoid(w . u + b) (u + c): one gate per position from the update, and a shift c (init 0.25)."""

    def __init__(self, d_model):
        super().__init__()
        self.gate = nn.Linear(d_model, 1)
        self.shift = nn.Parameter(torch.zeros(d_model))

    def init_published(self):
        nn.init.constant_(self.shift, 0.25)

    def r(self, h, u):
        return torch.sigmoid(self.gate(u))

    def forward(self, h, u):
        return h + self.r(h, u) * (u + self.shift)


rr_model.register_residual("myrule", ChannelScale, label="Channel scale", matched=True)
rr_model.register_residual("mygate", UpdateGate, colour="#000000")
'''


@pytest.fixture
def plugin(tmp_path) -> Path:
    path = tmp_path / "myplugin.py"
    path.write_text(PLUGIN)
    return path


def in_child(code: str, plugins: str, tmp_path: Path, extra_path: str = "") -> dict:
    """Run `code` (which sets `out`, a JSON-able value) in a child interpreter with RR_PLUGINS=`plugins`."""
    script = "import json\n" + textwrap.dedent(code) + "\nprint('RESULT', json.dumps(out))\n"
    env = {**__import__("os").environ, ENV: plugins}
    env["PYTHONPATH"] = ":".join(p for p in (extra_path, str(ROOT), env.get("PYTHONPATH", "")) if p)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.rpartition("RESULT ")[2])


COMMANDS = """
from typer.testing import CliRunner
from cli.main import app
out = [[r.exit_code, r.output] for r in (CliRunner().invoke(app, args) for args in COMMANDS)]
"""


def commands(*args: list[str]) -> str:
    return f"COMMANDS = {[list(a) for a in args]!r}\n{COMMANDS}"


def test_a_plugins_rule_is_built_counted_and_initialised_as_rr_s_own(plugin, tmp_path):
    got = in_child(
        """
        import torch
        from rr_core.shapes import model_config
        from rr_model.model import GPT
        from rr_core.plugins import provenance
        out = {}
        for variant in ("myrule", "mygate", "review_neutral"):
            cfg = model_config("tiny", variant, 257)
            torch.manual_seed(0)
            model = GPT(cfg)
            out[variant] = {"d_model": cfg.d_model, "counted": cfg.n_params,
                            "built": sum(p.numel() for p in model.parameters())}
        gated = GPT(model_config("tiny", "mygate", 257)).transformer.h
        out["gate_std"] = torch.cat([b.res_attn.gate.weight for b in gated]).std().item()
        out["shift"] = torch.cat([b.res_mlp.shift for b in gated]).unique().tolist()
        out["provenance"] = provenance("myrule")
        """,
        str(plugin),
        tmp_path,
    )
    for variant in ("myrule", "mygate", "review_neutral"):
        assert got[variant]["counted"] == got[variant]["built"], variant
    assert got["mygate"]["d_model"] == 128 and got["myrule"]["d_model"] > 128  # matched=True: widened
    widened = got["myrule"]["d_model"]
    assert (widened - 128) % 4 == 0 and got["myrule"]["counted"] >= got["review_neutral"]["counted"]
    assert got["gate_std"] == pytest.approx(0.02, rel=0.15)  # drawn with the sublayers' Linears
    assert got["shift"] == [0.25]  # the plugin's init_published ran
    sha = hashlib.sha256(plugin.read_bytes()).hexdigest()
    assert got["provenance"] == {"module": "myplugin", "file": str(plugin), "sha256": sha}


def test_a_rule_named_as_module_colon_class_is_imported_when_first_counted(tmp_path):
    """As rr's own rules are registered: the registry names the class, and torch and the rule's module load
    only when a parameter count or a model asks for the rule."""
    (tmp_path / "lazyrule.py").write_text(PLUGIN.split("rr_model.register_residual")[0])
    (tmp_path / "lazyplugin.py").write_text(
        'import rr_model\nrr_model.register_residual("mylazy", "lazyrule:UpdateGate")\n'
    )
    got = in_child(
        """
        import sys
        from rr_core.plugins import load_plugins
        load_plugins()
        out = {"loaded": ["lazyrule" in sys.modules, "torch" in sys.modules]}
        from rr_core.shapes import model_config
        from rr_model.model import GPT
        cfg = model_config("tiny", "mylazy", 257)
        out["counted"], out["built"] = cfg.n_params, sum(p.numel() for p in GPT(cfg).parameters())
        out["shift"] = GPT(cfg).transformer.h[0].res_mlp.shift.unique().tolist()
        from pathlib import Path
        from rr_core.plugins import provenance
        Path("lazyrule.py").write_text("# edited after the rule was imported\\n")
        out["provenance"] = provenance("mylazy")  # the code imported, not the file as it is now
        """,
        str(tmp_path / "lazyplugin.py"),
        tmp_path,
        str(tmp_path),
    )
    assert got["loaded"] == [False, False]
    assert got["counted"] == got["built"] and got["shift"] == [0.25]
    sha = hashlib.sha256(PLUGIN.split("rr_model.register_residual")[0].encode()).hexdigest()
    assert got["provenance"] == {"module": "lazyrule", "file": str(tmp_path / "lazyrule.py"), "sha256": sha}


def test_a_rule_s_parameters_given_as_shapes_or_a_count_are_what_its_build_holds(tmp_path):
    """params= as (name, shape) pairs gives the memory plan the exact pieces without torch; params= as a
    count leaves the shapes to a build on the meta device. Either way they are the model's parameters, in
    named_parameters() order (a module's own parameters before its submodules')."""
    (tmp_path / "lazyrule.py").write_text(PLUGIN.split("rr_model.register_residual")[0])
    (tmp_path / "twoways.py").write_text(
        "import rr_model\n"
        'shapes = lambda d: [("shift", (d,)), ("gate.weight", (1, d)), ("gate.bias", (1,))]\n'
        'rr_model.register_residual("myshaped", "lazyrule:UpdateGate", params=shapes)\n'
        'rr_model.register_residual("mycounted", "lazyrule:UpdateGate", params=lambda d: 2 * d + 1)\n'
    )
    got = in_child(
        """
        import sys
        from rr_core.plugins import load_plugins
        from rr_core.shapes import model_config, param_shapes
        load_plugins()
        shaped = param_shapes(model_config("tiny", "myshaped", 257))
        out = {"torch_for_shapes": "torch" in sys.modules}
        counted = param_shapes(model_config("tiny", "mycounted", 257))
        from rr_model.model import GPT
        for name, planned in (("myshaped", shaped), ("mycounted", counted)):
            model = GPT(model_config("tiny", name, 257))
            plain = json.loads(json.dumps(planned))  # (name, shape) pairs as lists
            out[name] = [plain == [[n, list(p.shape)] for n, p in model.named_parameters()],
                         model.config.n_params == sum(p.numel() for p in model.parameters())]
        out["shaped"] = json.loads(json.dumps(shaped))
        """,
        str(tmp_path / "twoways.py"),
        tmp_path,
        str(tmp_path),
    )
    assert got["torch_for_shapes"] is False
    assert got["myshaped"] == [True, True] and got["mycounted"] == [True, True]
    assert ["transformer.h.0.res_attn.shift", [128]] in got["shaped"]


def test_every_command_sees_the_plugin_s_rules(plugin, tmp_path):
    (sizes, gates, depth, train, sweep) = in_child(
        commands(
            ["sizes", "--vocab", "257", "--format", "json"],
            ["gates", "--variant", "mygate"],
            [
                "depth-check",
                "--variant",
                "mygate",
                "--variant",
                "myrule",
                "--layers",
                "2",
                "--format",
                "json",
            ],
            [
                "train",
                "--size",
                "tiny",
                "--variant",
                "myrule",
                "--corpus",
                "synthetic",
                "--out",
                "own.csv",
                "--dry-run",
            ],
            [
                "sweep",
                "--sizes",
                "tiny",
                "--seeds",
                "0",
                "--variant",
                "myrule",
                "--variant",
                "standard",
                "--corpus",
                "synthetic",
                "--out",
                "own.csv",
                "--dry-run",
            ],
        ),
        str(plugin),
        tmp_path,
    )
    assert sizes[0] == 0, sizes[1]
    rows = {(r["size"], r["variant"]): r for r in json.loads(sizes[1])}
    assert [v for (s, v) in rows if s == "tiny"] == [*VARIANTS, "myrule", "mygate"]
    assert rows[("tiny", "myrule")]["d_model"] > 128 and rows[("tiny", "mygate")]["d_model"] == 128
    assert gates[0] == 0 and gates[1].count("\n") > 8, gates[1]  # 8 gated sublayers, title and header
    assert depth[0] == 0 and [r["variant"] for r in json.loads(depth[1])] == ["mygate", "myrule"]
    assert train[0] == 0 and "tiny  myrule" in train[1], train[1]
    assert sweep[0] == 0 and "2 run(s) to train" in sweep[1], sweep[1]


def test_a_run_of_a_plugin_rule_records_the_plugin_s_file(plugin, tmp_path, offline):
    ladder = tmp_path / "small.toml"  # a shape that trains and evaluates in a second
    ladder.write_text(
        '["0.01M"]\nd_model = 16\nn_layer = 1\nn_head = 2\nsteps = 2\nseeds = 1\n'
        "batch_size = 2\nblock_size = 32\neval_batches = 2\nwarmup_steps = 1\n"
    )
    got = in_child(
        commands(
            [
                "train",
                "--ladder",
                str(ladder),
                "--size",
                "0.01M",
                "--variant",
                "myrule",
                "--corpus",
                "synthetic",
                "--out",
                "mine.csv",
            ]
        ),
        str(plugin),
        tmp_path,
    )
    assert got[0][0] == 0, got[0][1]
    assert (tmp_path / "mine.csv").read_text().splitlines()[1].startswith("0.01M,myrule,0,")
    (record,) = [json.loads(line) for line in (tmp_path / "mine.runs.jsonl").read_text().splitlines()]
    assert record["variant"] == "myrule" and record["status"] == "ok"
    assert record["plugin"]["sha256"] == hashlib.sha256(plugin.read_bytes()).hexdigest()


def test_an_installed_package_s_entry_point_is_found(tmp_path):
    site = tmp_path / "site"
    (site / "epplug-1.0.dist-info").mkdir(parents=True)
    (site / "epplug-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: epplug\nVersion: 1.0\n"
    )
    (site / "epplug-1.0.dist-info" / "entry_points.txt").write_text("[rr.residuals]\nrules = epplug_rules\n")
    (site / "epplug_rules.py").write_text(
        PLUGIN.replace('"myrule"', '"eprule"').replace('"mygate"', '"epgate"')
    )
    got = in_child(
        "from rr_core.shapes import size_table\nout = sorted({r['variant'] for r in size_table()})",
        "",
        tmp_path,
        str(site),
    )
    assert "eprule" in got and "epgate" in got


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        (
            "no_such_plugin_module",
            "RR_PLUGINS names the plugin 'no_such_plugin_module', which cannot be imported: "
            "ModuleNotFoundError: No module named 'no_such_plugin_module'",
        ),
        (
            "missing.py",
            "RR_PLUGINS names the plugin 'missing.py', which cannot be imported: FileNotFoundError",
        ),
        ("broken.py", "which cannot be imported: ZeroDivisionError: division by zero"),
    ],
)
def test_a_plugin_that_fails_to_import_is_one_error_paragraph_and_help_stays_light(
    tmp_path, plugins, message
):
    (tmp_path / "broken.py").write_text("1 / 0\n")
    env = {**__import__("os").environ, ENV: plugins}
    for args in (["sizes"], ["train", "--size", "tiny", "--variant", "myrule", "--dry-run"]):
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(ROOT)},
        )
        assert result.returncode == 2 and result.stderr.startswith("rr: error: "), result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "cli.main", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert helped.returncode == 0  # no command asked for variants: no plugin was imported


@pytest.mark.parametrize(
    ("name", "rule", "colour", "message"),
    [
        ("MyRule", "module", None, "the name must be a variant name"),
        ("highway", "module", None, "highway is one of rr's own variants"),
        ("myrule", "function", None, "the rule must be an nn.Module class"),
        ("myrule", "mylab.rules.MyRule", None, "must name a class as 'module:Class'"),
        ("myrule", "module", "red", "colour 'red' must be #RRGGBB"),
    ],
)
def test_register_residual_refuses_what_could_not_be_a_rule(name, rule, colour, message):
    import torch.nn as nn

    with pytest.raises(InputError, match=message):
        given = {"module": nn.Identity, "function": len}.get(rule, rule)
        register_residual(name, given, colour=colour)
    assert "myrule" not in VARIANTS  # nothing was registered


def test_a_byte_for_byte_copy_of_a_plugin_s_file_registers_as_the_rule_held(plugin, tmp_path):
    """An export carries the plugin's file under another module name (rr_model.uses.hf_code); importing that copy
    where the plugin is registered already keeps the rule held, and a file that differs is still refused."""
    (tmp_path / "rule_copy.py").write_bytes(plugin.read_bytes())
    (tmp_path / "rule_edited.py").write_bytes(plugin.read_bytes() + b"# edited\n")
    code = """
    import importlib.util
    import sys
    from rr_core.plugins import load_plugins
    from rr_core.variants import VARIANTS, residual_rule

    def imported(name):  # as an import does (transformers' of an export's code too): in sys.modules first
        spec = importlib.util.spec_from_file_location(name, name + ".py")
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)

    load_plugins()
    held = residual_rule("myrule")
    imported("rule_copy")
    out = {"kept": residual_rule("myrule") is held, "module": VARIANTS["myrule"].module}
    try:
        imported("rule_edited")
    except ValueError as e:
        out["edited"] = str(e)
    """
    out = in_child(code, str(plugin), tmp_path)
    assert out["kept"] and out["module"] == "myplugin"
    assert out["edited"] == (
        f"register_residual('myrule'): myplugin.ChannelScale from {plugin} is registered under that name "
        f"already; rule_edited.ChannelScale from {tmp_path / 'rule_edited.py'} may not replace it"
    )


def test_a_slurm_job_carries_the_submitter_s_plugins(monkeypatch):
    pytest.importorskip("submitit")
    from rr_model.config import TrainConfig
    from rr_model.sweep.slurm import TrainJob

    monkeypatch.setenv(ENV, "mylab.rules,./myrule.py")
    assert TrainJob(TrainConfig("tiny"), "out.csv").plugins == "mylab.rules,./myrule.py"


RULE = '''
import torch.nn as nn
import rr_model


class Scale(nn.Module):
    """h + u * {factor}"""

    def __init__(self, d_model):
        super().__init__()

    def forward(self, h, u):
        return h + {factor} * u


rr_model.register_residual({name!r}, Scale)
'''


@pytest.mark.slow
def test_two_plugin_files_of_one_module_name_never_replace_each_other(tmp_path):
    first, second = tmp_path / "a" / "rules.py", tmp_path / "b" / "rules.py"
    for path, (name, factor) in zip((first, second), (("halfrule", 0.5), ("quarterrule", 0.25)), strict=True):
        path.parent.mkdir()
        path.write_text(RULE.format(name=name, factor=factor))
    got = in_child(
        """
        from rr_core.errors import InputError
        from rr_core.plugins import load_plugins, provenance
        try:
            load_plugins()
            out = "loaded"
        except InputError as e:
            out = [str(e), provenance("halfrule")]
        """,
        f"{first},{second}",
        tmp_path,
    )
    message, kept = got
    assert (
        f"{second} would be imported as the module rules, which is imported already from {first}" in message
    )
    assert "rename one of them" in message
    by_name = in_child(  # the second named as a module on the path: never left unimported in silence
        """
        from rr_core.errors import InputError
        from rr_core.plugins import load_plugins
        try:
            load_plugins()
            out = "loaded"
        except InputError as e:
            out = str(e)
        """,
        f"{first},rules",
        tmp_path,
        extra_path=str(second.parent),
    )
    assert (
        f"{second} would be imported as the module rules, which is imported already from {first}" in by_name
    )
    assert kept == {
        "module": "rules",
        "file": str(first),
        "sha256": hashlib.sha256(first.read_bytes()).hexdigest(),
    }


def test_two_plugins_registering_one_name_are_refused_with_both_paths(tmp_path):
    first, second = tmp_path / "one.py", tmp_path / "two.py"
    first.write_text(RULE.format(name="samerule", factor=0.5))
    second.write_text(RULE.format(name="samerule", factor=0.25))
    got = in_child(
        """
        from rr_core.errors import InputError
        from rr_core.plugins import load_plugins
        try:
            load_plugins()
            out = "loaded"
        except InputError as e:
            out = str(e)
        """,
        f"{first},{second}",
        tmp_path,
    )
    assert f"one.Scale from {first} is registered under that name already" in got
    assert f"two.Scale from {second} may not replace it" in got


def test_a_run_records_the_code_that_built_its_rule_not_the_file_edited_since(tmp_path):
    plugin = tmp_path / "edited.py"
    plugin.write_text(RULE.format(name="editedrule", factor=0.5))
    ran = hashlib.sha256(plugin.read_bytes()).hexdigest()
    got = in_child(
        f"""
        from pathlib import Path
        from rr_core.plugins import load_plugins, provenance
        load_plugins()
        Path({str(plugin)!r}).write_text("# edited after the import\\n")
        out = provenance("editedrule")
        """,
        str(plugin),
        tmp_path,
    )
    assert got == {"module": "edited", "file": str(plugin), "sha256": ran}


def test_a_reference_of_a_plugin_s_matches_the_baselines_to_its_own_count(tmp_path):
    """issue 36.3(a): `--reference myrule` widens (or narrows) the matched baselines to myrule's parameter
    count, in steps of n_head; they were matched to Review's (0.16M beside myrule's 0.12M at 0.1M)."""
    ladder = ROOT / "docs" / "extending" / "pilot.toml"
    code = f"""
        from dataclasses import replace
        from rr_core.ladder import BYTE_EOS, ladder_sizes
        from rr_core.shapes import model_config
        from rr_model.config import TrainConfig
        from rr_model.run.identity import recipe_differences
        from rr_model.run.planning import planned_model

        ladder, out = {str(ladder)!r}, []
        for size in ladder_sizes(ladder):
            mine = model_config(size, "myrule", BYTE_EOS + 1, ladder).n_params
            for baseline in ("highway", "standard"):
                c = model_config(size, baseline, BYTE_EOS + 1, ladder, reference="myrule")
                planned = planned_model(TrainConfig(size, baseline, data="synthetic", ladder=ladder, reference="myrule"))
                step = replace(c, d_model=c.d_model - c.n_head).n_params
                out.append([size, baseline, mine, c.n_params, step, planned.n_params])
        """
    got = in_child(code, str(ROOT / "docs" / "extending" / "myrule.py"), tmp_path)
    assert [(size, baseline) for size, baseline, *_ in got] == [
        (s, b) for s in ("0.03M", "0.05M", "0.1M") for b in ("highway", "standard")
    ]
    for size, baseline, mine, params, one_step_less, planned in got:
        assert one_step_less < mine <= params == planned, (size, baseline)
    assert got[-1][2:4] == [120_576, 134_368]  # 0.1M standard: d_model 68 (was 76: 164,768, Review's match)


def test_rr_train_reference_trains_it_and_its_matched_baselines_and_records_it(tmp_path, offline):
    ladder = str(ROOT / "docs" / "extending" / "pilot.toml")
    train = ["train", "--size", "0.03M", "--ladder", ladder, "--reference", "myrule", "--corpus", "synthetic"]
    code = commands(
        [*train, "--out", "p.csv", "--dry-run"],
        [*train, "--variant", "standard", "--steps", "2", "--out", "p.csv"],
        ["train", "--size", "tiny", "--reference", "reviw", "--dry-run"],
    ) + (
        "from rr_core.ladder import BYTE_EOS\n"
        "from rr_core.shapes import model_config\n"
        "from rr_core.sweepfile.dataset import load_sweep\n"
        "from rr_core.sweepfile.provenance import read_records, sidecar_path\n"
        f"matched = model_config('0.03M', 'standard', BYTE_EOS + 1, {ladder!r}, 'myrule').n_params\n"
        "records = read_records(sidecar_path('p.csv'))\n"
        "out.append([load_sweep('p.csv')['params_M'].tolist(), matched, [r['config']['reference'] for r in records]])\n"
    )
    dry, trained, typo, (params_m, matched, references) = in_child(
        code, str(ROOT / "docs" / "extending" / "myrule.py"), tmp_path
    )
    assert dry[0] == 0 and trained[0] == 0, (dry, trained)
    table = dry[1].split(" run(s), ")[0]  # the plan, before the memory plan
    plan = [line.split() for line in table.splitlines() if line.startswith("0.03M")]
    assert [p[1] for p in plan] == [
        "myrule",
        "highway",
        "standard",
    ]  # the reference and its matched baselines
    assert params_m == [round(matched / 1e6, 2)] and references == [
        "myrule"
    ]  # the record keeps the reference
    assert typo[0] == 2 and "reference: unknown variant 'reviw' (did you mean review_neutral?)" in typo[1]
