"""`rr export`: a trained run as a folder others can load: safetensors weights, config, provenance, card.

The folder holds ``model.safetensors`` (the state dict; the head's matrix, tied to the token embedding,
stored once as ``lm_head.weight``), ``config.json`` (the model's shape and tokenizer: what
`rr_model.model.GPT.from_pretrained` rebuilds it from), ``provenance.json`` (the run's record from its
sidecar) and ``README.md`` (a model card). Nothing in an existing folder is overwritten: an export that
would replace a file is refused before anything is written, and each file is created whole or not at all.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.files import create_new
from rr_core.variants import label
from rr_model.inference import Trained, load_trained

__all__ = ["export", "FILES", "PAPER"]

FILES = ("model.safetensors", "config.json", "provenance.json", "README.md")
PAPER = (
    'Kramer (2026), "Review Residuals: Update-Conditioned Residual Gating for Transformers", '
    "arXiv 2606.31859, DOI 10.5281/zenodo.21053343, released under Apache-2.0"
)
FORMAT = 1  # of config.json


def _toolkit() -> str | None:
    try:
        return version("rr-toolkit")
    except PackageNotFoundError:
        return None


def _config(trained: Trained) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "architecture": "rr GPT (rr_model.model.GPT)",
        "model": asdict(trained.model.config),
        "tokenizer": trained.tokenizer,
        "rr_toolkit": _toolkit(),
    }


def _card(trained: Trained) -> str:
    """The model card: what was trained, on what, how, with which result, and whose method it is."""
    cfg, mcfg, record = trained.config, trained.model.config, trained.record or {}
    r, data, result = cfg["recipe"], trained.data or {}, record.get("result") or {}
    n = sum(p.numel() for p in trained.model.parameters())
    lines = [
        f"# rr {cfg['size']} {label(cfg['variant'])} (seed {cfg['seed']})",
        "",
        f"A {n / 1e6:.2f}M-parameter GPT whose residual rule is **{label(cfg['variant'])}** "
        f"(`{cfg['variant']}`), trained with the rr toolkit at ladder size **{cfg['size']}**.",
        "",
        "## Model",
        f"- d_model {mcfg.d_model}, {mcfg.n_layer} layers, {mcfg.n_head} heads, context {mcfg.block_size}, "
        f"vocabulary {mcfg.vocab_size} ({trained.tokenizer} tokenizer); LM head tied to the token embedding",
        "- load: `from rr_model.model import GPT; model = GPT.from_pretrained(FOLDER)`",
        "",
        "## Training",
        f"- recipe: {cfg['steps']} steps, batch {r['batch_size']} x {r['block_size']} tokens, AdamW lr "
        f"{r['lr']:g} (betas {r['beta1']:g}, {r['beta2']:g}, weight decay {r['weight_decay']:g}), warmup "
        f"{r['warmup_steps']}, cosine to {r['lr'] * r['min_lr_frac']:g}, grad clip {r['grad_clip']:g}; "
        f"precision {cfg['precision']}",
        f"- data: {data.get('source', cfg['data'])} ({data.get('n_text', '?')} documents, "
        f"{data.get('train_tokens', '?')} training tokens)",
    ]
    if result:
        lines += [
            f"- result: val_loss {result['val_loss']:.4f}, ECE {result['ece']:.4f}, {result['minutes']:.1f} min"
        ]
    if record.get("environment"):
        env = record["environment"]
        lines += [f"- trained on {env.get('device_name')} with torch {env.get('torch')}, rr {env.get('toolkit')} "
                  f"(commit {env.get('git_commit')}); run {record.get('run_id')}"]  # fmt: skip
    lines += [
        "",
        "## Method and licence",
        f"The architecture and recipe are those of {PAPER}. The full run record is in provenance.json.",
        "",
    ]
    return "\n".join(lines)


def export(checkpoint_path: str | os.PathLike, out: str | os.PathLike) -> list[Path]:
    """Write a run's weights, config, provenance and model card to the folder `out`; the files written.

    Parameters
    ----------
    checkpoint_path
        What `rr_model.inference.load_trained` reads: final weights, a checkpoint or a checkpoint folder.
    out
        The folder; made if missing (its parent must exist). None of `FILES` may exist in it yet.

    Raises
    ------
    InputError
        `out` is a file, its parent is missing, or it already holds one of `FILES`.
    """
    from safetensors.torch import save  # the 'export' extra

    out = Path(out)
    trained = load_trained(checkpoint_path)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: a file, not a folder")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: its parent {out.parent} does not exist")
    taken = [name for name in FILES if (out / name).exists()]
    if taken:
        raise InputError(
            f"--out {out} already holds {', '.join(taken)}: not overwriting; choose a new folder"
        )
    weights = {
        k: v.contiguous() for k, v in trained.model.state_dict().items() if k != "transformer.wte.weight"
    }
    record = trained.record or {"status": "unfinished", "config": trained.config}
    contents = {
        "model.safetensors": save(weights, metadata={"format": "pt"}),
        "config.json": (json.dumps(_config(trained), indent=1) + "\n").encode(),
        "provenance.json": (json.dumps(record, indent=1, sort_keys=True) + "\n").encode(),
        "README.md": _card(trained).encode(),
    }
    out.mkdir(exist_ok=True)
    written = []
    for name, data in contents.items():
        if not create_new(out / name, lambda f, data=data: f.write(data)):
            raise InputError(f"{out / name} appeared while exporting: not overwriting it")
        written.append(out / name)
    return written
