"""`rr export`: one folder that rr rebuilds the tiny run's model from with bitwise-equal logits (and that
transformers loads: tests/test_hf_export.py), with provenance and a model card; exports of an earlier rr
still load; a folder's files are never overwritten."""

from __future__ import annotations

import inspect
import json

import torch
from conftest import rr
from safetensors.torch import load_file

from rr_core.variants import NAMES, residual_rule
from rr_model.checkpoint import state as checkpoint
from rr_model.model import GPT, LAYERS
from rr_model.uses.export import FILES
from rr_model.uses.inference import load_trained


def test_an_export_loads_back_with_bitwise_equal_logits_and_refuses_to_overwrite(tiny_run, tmp_path):
    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    out = tmp_path / "export"
    result = rr("export", "--checkpoint", str(final), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.split() == [str(out / name) for name in (*FILES, "SHA256SUMS")]

    rng = torch.get_rng_state()
    model = GPT.from_pretrained(out)
    assert torch.equal(torch.get_rng_state(), rng)  # loading draws nothing from the caller's stream
    assert model.transformer.wte.weight is model.lm_head.weight  # tied again
    idx = torch.randint(0, 257, (2, 64), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], load_trained(final).model(idx)[0])
    stored = load_file(out / "model.safetensors")  # the tied matrix once, under the embedding's name
    assert "lm_head.weight" not in stored and torch.equal(
        stored["transformer.wte.weight"], model.lm_head.weight
    )
    config = json.loads((out / "config.json").read_text())
    assert config["auto_map"]["AutoModelForCausalLM"] == "modeling_rr.RRForCausalLM"
    assert config["rr"]["run"] == {"size": "tiny", "variant": "standard", "seed": 0}
    layers = (out / "rr_layers.py").read_text()  # rr's own source, so the two models cannot drift apart
    rules = [residual_rule(name) for name in NAMES]  # rr's own, as the variant registry names them
    assert all(inspect.getsource(obj) in layers for obj in (*LAYERS, *rules))

    assert json.loads((out / "provenance.json").read_text())["run_id"] == tiny_run["run_id"]
    card = (out / "README.md").read_text()
    for words in ("Standard", "ladder size **tiny**", "12 steps", "synthetic", "Kramer (2026)", "Apache-2.0"):
        assert words in card

    before = {name: (out / name).read_bytes() for name in FILES}
    again = rr("export", "--checkpoint", str(final), "--out", str(out))
    assert again.exit_code == 2 and "already holds model.safetensors" in again.output
    assert {name: (out / name).read_bytes() for name in FILES} == before


def test_an_export_of_an_earlier_rr_still_loads(tiny_run, tmp_path):
    """Format 1: the shape under "model" in config.json, the tied matrix stored as lm_head.weight."""
    from dataclasses import asdict

    from safetensors.torch import save_file

    trained = load_trained(checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0))
    state = {k: v for k, v in trained.model.state_dict().items() if k != "transformer.wte.weight"}
    save_file(state, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = {"format": 1, "model": asdict(trained.model.config), "tokenizer": "bytes"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = GPT.from_pretrained(tmp_path)
    assert model.transformer.wte.weight is model.lm_head.weight
    idx = torch.randint(0, 257, (1, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], trained.model(idx)[0])


def test_an_interrupted_export_leaves_no_folder_and_the_rerun_completes_it(tiny_run, tmp_path, monkeypatch):
    import os

    import pytest

    from rr_model.uses.export import export

    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    out = tmp_path / "export"
    fsync, calls = os.fsync, []

    def ctrl_c_at_the_second_file(fd):  # the first file is on disk, the second is being made
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", ctrl_c_at_the_second_file)
    with pytest.raises(KeyboardInterrupt):
        export(final, out)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []  # no export that loads as one, no temporary folder
    result = rr("export", "--checkpoint", str(final), "--out", str(out))
    assert result.exit_code == 0, result.output  # no "already holds"
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "SHA256SUMS"])


def test_a_damaged_export_is_refused_before_it_loads(tiny_run, tmp_path):
    import pytest

    from rr_core.files.checksums import Damaged

    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    out = tmp_path / "export"
    assert rr("export", "--checkpoint", str(final), "--out", str(out)).exit_code == 0
    weights = out / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 4096] = bytes(4096)
    weights.write_bytes(bytes(raw))
    with pytest.raises(Damaged) as err:
        GPT.from_pretrained(out)
    assert str(err.value) == (
        f"{weights}: damaged: its sha256 is not the one SHA256SUMS records for it; export it again from the "
        "run's weights (rr export)"
    )


def test_a_plugin_run_exported_without_its_plugin_names_the_file_and_the_setting(
    tiny_run, tmp_path, monkeypatch
):
    """Issue 49.6: the final weights keep the plugin's provenance; without RR_PLUGINS the refusal names the
    file that defined the rule and the setting that loads it (it said only "unknown variant 'diaggate'")."""
    monkeypatch.delenv("RR_PLUGINS", raising=False)
    saved = checkpoint.read(checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0))
    plugin = {"module": "diaggate", "file": str(tmp_path / "diaggate.py"), "sha256": "0" * 64}
    saved["config"] = {**saved["config"], "variant": "diaggate"}
    saved["record"] = {**saved["record"], "variant": "diaggate", "plugin": plugin}
    final = tmp_path / "diaggate.final.pt"
    checkpoint.save(final, saved)
    result = rr("export", "--checkpoint", str(final), "--out", str(tmp_path / "export"))
    assert result.exit_code == 2 and not (tmp_path / "export").exists()
    assert result.stderr.count("\n") == 1 and "unknown variant 'diaggate'" in result.stderr
    assert (
        f"plugin rule of {plugin['file']}" in result.stderr
        and f"RR_PLUGINS={plugin['file']}" in result.stderr
    )
