"""`rr export`: a trained run as one folder that rr and Hugging Face transformers both load.

The folder holds ``model.safetensors`` (the state dict; the matrix the head shares with the token
embedding stored once, under the embedding's name ``transformer.wte.weight``, which transformers 4 and 5
both tie from), ``config.json`` (the model's shape in rr's field names, what transformers needs to find the
code: ``auto_map``, ``model_type``, the tie and token ids; rr's own details under "rr"),
``generation_config.json``, the code transformers runs (``configuration_rr.py``, ``modeling_rr.py``,
``rr_layers.py`` and a plugin's rule: `rr_model.uses.hf_code`), the run's tokenizer (``tokenizer.json`` and
``tokenizer_config.json``: the byte tokenizer or GPT-2's), ``provenance.json`` (the run's record from its
sidecar) and ``README.md`` (a model card). rr reads it back with `rr_model.model.GPT.from_pretrained`,
transformers with ``AutoModelForCausalLM.from_pretrained(FOLDER, trust_remote_code=True)``.

Beside them ``SHA256SUMS`` holds the sha256 of each file, which `rr_model.model.GPT.from_pretrained` checks
before it loads (a damaged export is refused). The folder is built aside and published by one rename
(`rr_core.files.replacing.create_dir`), so it is whole or absent: an interrupted export leaves no folder that loads,
and running it again works. Nothing is overwritten: a folder that exists and holds anything is refused
before anything is written.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rr_core.errors import InputError
from rr_core.files.checksums import SUMS
from rr_core.files.replacing import create_dir
from rr_core.variants import label
from rr_model.data.tokenizers import EOT, eos_id, tokenizer_json
from rr_model.model import INIT_STD
from rr_model.uses.hf_code import ARCHITECTURE, AUTO_MAP, MODEL_TYPE, PluginRule, remote_code
from rr_model.uses.inference import Trained, load_trained

__all__ = ["export", "PAPER", "FORMAT"]

# What every export holds, in the order written (a plugin's rule file comes after rr_layers.py).
FILES = (
    "model.safetensors",
    "config.json",
    "generation_config.json",
    "configuration_rr.py",
    "modeling_rr.py",
    "rr_layers.py",
    "tokenizer.json",
    "tokenizer_config.json",
    "provenance.json",
    "README.md",
)
PAPER = (
    'Kramer (2026), "Review Residuals: Update-Conditioned Residual Gating for Transformers", '
    "arXiv 2606.31859, DOI 10.5281/zenodo.21053343, released under Apache-2.0"
)
FORMAT = 2  # of config.json: 1 held the shape under "model" and the tied matrix as lm_head.weight


def _toolkit() -> str | None:
    try:
        return version("rr-toolkit")
    except PackageNotFoundError:
        return None


def _config(trained: Trained) -> dict[str, Any]:
    """config.json: transformers' keys, the shape in rr's field names (both read them), rr's own under "rr"."""
    eos = eos_id(trained.tokenizer)
    dtype = trained.model.lm_head.weight.dtype
    cfg = trained.config
    return {
        "architectures": [ARCHITECTURE],
        "auto_map": AUTO_MAP,
        "model_type": MODEL_TYPE,
        **asdict(trained.model.config),
        "initializer_range": INIT_STD,
        "tie_word_embeddings": True,
        "use_cache": True,
        "bos_token_id": eos,
        "eos_token_id": eos,
        "pad_token_id": eos,
        "dtype": str(dtype).removeprefix("torch."),
        "rr": {
            "format": FORMAT,
            "tokenizer": trained.tokenizer,
            "toolkit": _toolkit(),
            "run": {"size": cfg["size"], "variant": cfg["variant"], "seed": cfg["seed"]},
        },
    }


def _tokenizer_config(trained: Trained) -> dict[str, Any]:
    """tokenizer_config.json: transformers' fast tokenizer over tokenizer.json, EOS as every special token
    (GPT-2's convention; padding with it lets batches pad without a new token), no BOS added."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **{f"{role}_token": EOT for role in ("bos", "eos", "unk", "pad")},
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": trained.model.config.block_size,
    }


def _card(trained: Trained, plugin: PluginRule | None) -> str:
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
        "- load in rr: `from rr_model.model import GPT; model = GPT.from_pretrained(FOLDER)`",
        "- load in transformers (5.24 or later; the folder's own code, so `trust_remote_code=True`): "
        "`AutoModelForCausalLM.from_pretrained(FOLDER, trust_remote_code=True)` and "
        "`AutoTokenizer.from_pretrained(FOLDER, trust_remote_code=True)`",
        *_plugin_lines(plugin),
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
        lines += [
            f"- trained on {env.get('device_name')} with torch {env.get('torch')}, rr {env.get('toolkit')} "
            f"(commit {env.get('git_commit')}); run {record.get('run_id')}"
        ]
    lines += [
        "",
        "## Method and licence",
        _method(plugin),
        "",
    ]
    return "\n".join(lines)


def _method(plugin: PluginRule | None) -> str:
    """Whose method the model is: the paper's, or for a plugin's rule the plugin's rule in the paper's trunk
    and recipe (the paper's authors did not design a rule someone plugged in)."""
    if plugin is None:
        return f"The architecture and recipe are those of {PAPER}. The full run record is in provenance.json."
    return (
        f"The residual rule `{plugin.class_name}` is a plugin's ({plugin.origin.name}), not the paper's; the "
        f"rest of the architecture (the GPT trunk) and the training recipe are those of {PAPER}. The full run "
        "record is in provenance.json."
    )


def _plugin_lines(plugin: PluginRule | None) -> list[str]:
    if plugin is None:
        return []
    return [
        f"- residual rule: `{plugin.class_name}`, a plugin's, in {plugin.file_name}: a byte-for-byte copy of "
        f"{plugin.origin.name} (sha256 {plugin.sha256})"
    ]


def export(checkpoint_path: str | os.PathLike, out: str | os.PathLike) -> list[Path]:
    """Write a run's model to the folder `out` as rr and transformers load it; the files written.

    Parameters
    ----------
    checkpoint_path
        What `rr_model.uses.inference.load_trained` reads: final weights, a checkpoint or a checkpoint folder.
    out
        The folder; made (its parent must exist), or an empty folder that is there already.

    Returns
    -------
    The paths written: `FILES` in order, a plugin's rule file after rr_layers.py, then SHA256SUMS.

    Raises
    ------
    InputError
        `out` is a file, its parent is missing, it holds files already, or the run's variant is a plugin's
        whose rule cannot travel (`rr_model.uses.hf_code.plugin_rule` says why).
    """
    out = Path(out)
    trained = load_trained(checkpoint_path)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: a file, not a folder")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: its parent {out.parent} does not exist")
    if out.is_dir() and (held := sorted(p.name for p in out.iterdir())):
        taken = [name for name in (*FILES, SUMS) if name in held] or held[:3]
        raise InputError(
            f"--out {out} already holds {', '.join(taken)}: not overwriting; choose a new folder"
        )
    contents = _contents(trained)

    def build(folder: Path) -> None:
        for name, data in contents.items():
            (folder / name).write_bytes(data)

    if not create_dir(out, build):  # built aside, SHA256SUMS last, then one rename
        raise InputError(f"--out {out}: files appeared in it while exporting: not overwriting them")
    return [out / name for name in (*contents, SUMS)]


def _contents(trained: Trained) -> dict[str, bytes]:
    """Every file of the export, by name, in the order written."""
    from safetensors.torch import save  # the 'export' extra

    weights = {k: v.contiguous() for k, v in trained.model.state_dict().items() if k != "lm_head.weight"}
    code, plugin = remote_code(trained.model.config.variant, _toolkit())
    record = trained.record or {"status": "unfinished", "config": trained.config}
    eos = eos_id(trained.tokenizer)
    contents = {
        "model.safetensors": save(weights, metadata={"format": "pt"}),
        "config.json": _json(_config(trained)),
        "generation_config.json": _json({"bos_token_id": eos, "eos_token_id": eos, "pad_token_id": eos}),
        **code,
        "tokenizer.json": tokenizer_json(trained.tokenizer).encode("utf-8"),
        "tokenizer_config.json": _json(_tokenizer_config(trained)),
        "provenance.json": (json.dumps(record, indent=1, sort_keys=True) + "\n").encode(),
        "README.md": _card(trained, plugin).encode(),
    }
    return contents


def _json(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=1) + "\n").encode()
