"""The transformers and lm-evaluation-harness checks of tests/test_hf_export.py, in one fresh process.

Run as ``python hf_checks.py WORKDIR TINY_FINAL TINY_CSV`` with HF_HUB_OFFLINE=1: importing transformers and
lm-eval costs seconds, so every check that needs them runs here once and writes what it measured to
WORKDIR/report.json, which the tests read. For every variant of rr and a plugin's rule: a tiny model with
perturbed weights (every gate and scale away from its initial value) is saved as a checkpoint, exported by
`rr_model.uses.export.export` and loaded back by transformers; then lm-evaluation-harness scores one export on
the local task of tests/lm_eval_task, and `rr eval --tasks ... --join` runs on the session's tiny run.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

torch.set_num_threads(1)

SHAPE = dict(vocab_size=257, block_size=32, n_layer=2, n_head=4, d_model=64)
PROMPTS = ["Once upon a time", "Tom", "héllo wörld ✓", "The little frog ran to his friend Lily"]
TEXTS = [*PROMPTS, "a<|endoftext|>b", "", " two  spaces\tand\nlines", "\u00e9\u0301 \U0001f600"]
NEW = 40  # new tokens: the prompts of up to 38 tokens run past block_size 32 on the way
TASK = Path(__file__).with_name("lm_eval_task")


def checkpoint(variant: str, seed: int, folder: Path) -> Path:
    """A checkpoint of a tiny model of `variant`, every parameter moved off its initial value."""
    from rr_model.checkpoint import state as ckpt
    from rr_model.config import TrainConfig
    from rr_model.model import GPT, GPTConfig
    from rr_model.run.identity import result_config

    torch.manual_seed(seed)
    config = GPTConfig(**SHAPE, variant=variant)
    model = GPT(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    run = result_config(TrainConfig(size="tiny", variant=variant, seed=seed, data="synthetic", steps=1))
    path = folder / f"tiny-{variant}-seed{seed}.pt"
    ckpt.save(path, ckpt.Final(step=1, config=run, model=model.state_dict(), model_config=asdict(config)))
    return path


def imports_of(folder: Path) -> dict[str, list[str]]:
    """What transformers reads as each exported file's imports (its own get_imports)."""
    from transformers.dynamic_module_utils import get_imports

    return {p.name: sorted(get_imports(p)) for p in sorted(folder.glob("*.py"))}


@torch.no_grad()
def logits_checks(hf, rr) -> dict:
    from transformers import DynamicCache

    g = torch.Generator().manual_seed(1)
    bitwise = []
    for B, T in [(1, 1), (1, 7), (3, 32), (2, 17)]:
        idx = torch.randint(0, 257, (B, T), generator=g)
        ref = rr(idx)[0]
        bitwise += [
            torch.equal(ref, hf(idx).logits),
            torch.equal(ref, hf(idx, use_cache=False).logits),
            torch.equal(ref, hf(idx, attention_mask=torch.ones_like(idx)).logits),
        ]
    idx = torch.randint(0, 257, (2, 20), generator=g)
    full = rr(idx)[0]
    diffs = {}
    for name in ("cache", "past_key_values"):  # transformers' name since 5.24, and the one before
        first = hf(idx[:, :12], **{name: DynamicCache(config=hf.config)})
        step = hf(idx[:, 12:13], **{name: first.cache})
        rest = hf(idx[:, 13:], **{name: step.cache})  # several new tokens after a past
        both = torch.cat([first.logits, step.logits, rest.logits], 1)
        diffs[name] = float((both - full).abs().max())
        diffs[f"{name}_length"] = rest.cache.get_seq_length()
    try:
        hf(torch.zeros(1, SHAPE["block_size"] + 1, dtype=torch.long))
        past_block = None
    except ValueError as e:
        past_block = str(e)
    return {"bitwise": bitwise, "cached_max_diff": diffs, "past_block": past_block}


def generation_checks(hf, rr, tok) -> dict:
    from rr_model.data.tokenizers import encode_text

    greedy, singles = {}, []
    for prompt in PROMPTS:
        ids = torch.tensor([tok.encode(prompt)])
        kw = dict(max_new_tokens=NEW, do_sample=False, eos_token_id=None, pad_token_id=256)
        runs = {
            "rr_no_cache": rr.generate(ids, NEW, temperature=0, use_cache=False),
            "rr_cache": rr.generate(ids, NEW, temperature=0),
            "hf_cache": hf.generate(ids, use_cache=True, **kw),
            "hf_no_cache": hf.generate(ids, use_cache=False, **kw),
        }
        greedy[prompt] = {k: v[0].tolist() for k, v in runs.items()}
        singles.append(runs["hf_cache"][0, ids.shape[1] :].tolist())
    tok.padding_side = "left"
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    batch = hf.generate(**enc, max_new_tokens=NEW, do_sample=False, eos_token_id=None, pad_token_id=256)
    padded = batch[:, enc["input_ids"].shape[1] :].tolist()
    tokens = {t: [tok.encode(t), encode_text(t, "bytes").tolist(), tok.decode(tok.encode(t))] for t in TEXTS}
    return {"greedy": greedy, "padded_batch": padded, "one_at_a_time": singles, "tokenizer": tokens}


def fresh_rules(hf, rr) -> dict[str, bool]:
    """Whether transformers' fresh model of the export's config (its `_init_weights`) starts each residual rule's
    parameter where rr's init does, for every such parameter that rr starts at one value throughout (a zeroed
    gate, LayerScale's 0.1, the gate bias's 0); by parameter name."""
    from transformers import AutoModelForCausalLM

    from rr_model.model import GPT

    torch.manual_seed(0)
    ours = GPT(rr.config).state_dict()
    theirs = AutoModelForCausalLM.from_config(hf.config, trust_remote_code=True).state_dict()
    fixed = [k for k, v in ours.items() if ".res_" in k and bool((v == v.flatten()[0]).all())]
    return {k: torch.equal(theirs[k], ours[k]) for k in fixed}


def check_export(folder: Path) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rr_model.model import GPT

    hf, info = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True, output_loading_info=True)
    rr = GPT.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    hf_state, rr_state = hf.state_dict(), rr.state_dict()
    return {
        "loading": {k: sorted(map(str, v)) for k, v in info.items()},
        "tied": hf.lm_head.weight is hf.transformer.wte.weight,
        "names": list(hf_state) == list(rr_state),
        "weights_bitwise": all(torch.equal(hf_state[k], rr_state[k]) for k in rr_state),
        "module": type(hf).__module__,
        "imports": imports_of(folder),
        "fresh_rules": fresh_rules(hf, rr),
        **logits_checks(hf.eval(), rr),
        **generation_checks(hf, rr, tok),
    }


@torch.no_grad()
def direct_loglik(model, tok, context: str, continuation: str) -> float:
    """log P(continuation | context) summed over its tokens, split as lm-eval's causal models split them."""
    stripped = context.rstrip()  # lm-eval moves trailing whitespace onto the continuation
    ctx = tok.encode(stripped, add_special_tokens=False)
    whole = tok.encode(context + continuation, add_special_tokens=False)
    cont = whole[len(ctx) :]
    ids = torch.tensor([whole])[:, -(model.config.block_size + 1) :][:, :-1]
    logp = torch.log_softmax(model(ids)[0][0], -1)
    return float(logp[-len(cont) :].gather(1, torch.tensor(cont)[:, None]).sum())


def lm_eval_checks(folder: Path, task_dir: Path) -> dict:
    from transformers import AutoTokenizer

    from rr_model.model import GPT
    from rr_model.uses.downstream import task_scores

    (scores,) = task_scores(
        [folder], ["rr_local_mc"], include_path=task_dir, batch=4, device="cpu", log_samples=True
    )
    rr, tok = GPT.from_pretrained(folder), AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    items = []
    for s in scores.samples["rr_local_mc"]:
        for arg, resp in zip(s["arguments"], s["filtered_resps"], strict=True):
            context, continuation = (arg["arg_0"], arg["arg_1"]) if isinstance(arg, dict) else arg
            items.append(
                [
                    s["doc_id"],
                    s["target"],
                    float(resp[0]),
                    direct_loglik(rr, tok, context, continuation),
                    len(continuation),
                ]
            )
    return {"scores": scores.scores, "run": scores.run, "items": items}


def cli_checks(final: Path, sweep: Path, task_dir: Path, work: Path) -> dict:
    from typer.testing import CliRunner

    from cli.main import app

    out = work / "evals.csv"
    args = ["eval", "--checkpoint", str(final), "--tasks", "rr_local_mc", "--include-path", str(task_dir),
            "--limit", "12", "--batch", "4", "--device", "cpu", "--join", str(sweep), "--out", str(out), "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    return {"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr, "out": str(out)}


def task_folder(work: Path) -> Path:
    """The local task with its documents' absolute path (lm-eval reads data_files relative to the cwd)."""
    folder = work / "tasks"
    folder.mkdir()
    text = (
        (TASK / "rr_local_mc.yaml")
        .read_text()
        .replace("test: rr_local_mc.jsonl", f"test: {TASK / 'rr_local_mc.jsonl'}")
    )
    (folder / "rr_local_mc.yaml").write_text(text)
    return folder


def main(work: Path, final: Path, sweep: Path) -> None:
    from transformers import AutoConfig

    from rr_core.errors import InputError
    from rr_core.variants import NAMES
    from rr_model.uses.export import export

    report = {"variants": {}}
    for seed, variant in enumerate([*NAMES, "myrule"]):
        folder = work / f"export-{variant}"
        export(checkpoint(variant, seed, work), folder)
        report["variants"][variant] = check_export(folder)
        report["variants"][variant]["card_method"] = (
            (folder / "README.md").read_text().rstrip().splitlines()[-1]
        )
    try:
        export(checkpoint("stuck", 0, work), work / "export-stuck")
    except InputError as e:
        report["refused"] = str(e)
    config = AutoConfig.from_pretrained(work / "export-review_neutral", trust_remote_code=True)
    report["config_defaults"] = {**type(config)().to_dict(), "model_type": type(config).model_type}
    tasks = task_folder(work)
    report["lm_eval"] = lm_eval_checks(work / "export-review_neutral", tasks)
    report["cli"] = cli_checks(final, sweep, tasks, work)
    (work / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:4]))
