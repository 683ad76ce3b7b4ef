"""Shared helpers and fixtures: `rr(...)` in-process, the published sweep, a stand-in `Tokens`, one offline
token cache and ONE trained tiny run for the end-to-end tests.

Training is the slow part of the suite, so the tests that compare against an uninterrupted run (resume
after a checkpoint, SIGKILL and resume, two DDP processes, out-of-memory accumulation) all read the same
run, trained once per session. Test modules import the plain helpers (`from conftest import rr`); the
fixtures they name as arguments.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest

if TYPE_CHECKING:
    import pandas as pd
    from click.testing import Result

    from rr_model.data.token_cache import Tokens

# The run every end-to-end comparison uses: 12 steps of tiny standard on the synthetic corpus, with a
# checkpoint every 4 steps (the loss curve is read at checkpoints too, so a resumed run must match it).
RR = str(Path(sys.executable).with_name("rr"))  # this interpreter's console script: no PATH lookup
TINY_RUN = {"size": "tiny", "variant": "standard", "data": "synthetic", "steps": 12, "checkpoint_every": 4}


def rr(*args: object, env: dict[str, str] | None = None) -> Result:
    """`rr ARGS` in-process through typer's CliRunner, each argument as its string; `env` (e.g. COLUMNS)
    set for the call only."""
    from typer.testing import CliRunner

    from cli.main import app

    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def refuse_files_in(folder: Path, monkeypatch) -> None:
    """Make creating a file directly in `folder` fail with EACCES, as the kernel answers a user without write
    permission there (the tests run as root on some machines, where chmod refuses nothing)."""
    real = os.open

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and Path(path).parent == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


def close(got: Any, expected: Any, rel: float = 1e-6) -> bool:
    """Whether two JSON values are equal, floats to a relative tolerance `rel` (strings, bools, None, ints and
    structure exactly): for records whose numbers come from optimisers that move in the last digits between
    library releases."""
    import math

    if isinstance(expected, float) and isinstance(got, int | float) and not isinstance(got, bool):
        return math.isclose(got, expected, rel_tol=rel, abs_tol=0.0) or got == expected
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(close(got[k], expected[k], rel) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(close(g, e, rel) for g, e in zip(got, expected, strict=True))
        )
    return type(got) is type(expected) and got == expected


def stub_tokens(**kw: Any) -> Tokens:
    """A `Tokens` with empty streams that describes the published data (TinyStories, GPT-2, the recipe's
    n_text); `kw` changes any field."""
    import numpy as np

    from rr_core.ladder import RECIPE
    from rr_model.data.corpus import TINYSTORIES
    from rr_model.data.token_cache import Tokens

    base = dict(source=TINYSTORIES, tokenizer="gpt2", n_text=RECIPE.n_text, vocab_size=50257, eos_id=50256)
    return Tokens(train=np.zeros(0), val=np.zeros(0), key="k", **{**base, **kw})


@pytest.fixture(scope="module")
def sweep() -> pd.DataFrame:
    """The published sweep (`load_sweep()` of the packaged copy), loaded once per test module."""
    from rr_core.sweepfile.dataset import load_sweep

    return load_sweep()


@pytest.fixture
def published_copy(tmp_path) -> Path:
    """A copy of the packaged sweep in the test's own folder (tmp_path / "published.csv"), to append to."""
    from rr_core.sweepfile.dataset import bundled_path

    return Path(shutil.copy(bundled_path(), tmp_path / "published.csv"))


@pytest.fixture(scope="session")
def token_cache(tmp_path_factory) -> Path:
    """One token cache folder ($RR_CACHE) for the session: the synthetic corpus is tokenized once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def offline(token_cache, monkeypatch) -> Path:
    """No hub, and the session's token cache."""
    monkeypatch.setenv("RR_CACHE", str(token_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return token_cache


@pytest.fixture(scope="session")
def tiny_run(token_cache, tmp_path_factory) -> dict[str, Any]:
    """The provenance record of TINY_RUN trained without interruption, and its dataset at record["out"].

    It logs to TensorBoard and to W&B in offline mode too (no network, no account; W&B's own folders in
    the run's temporary folder), so tests/test_metrics.py reads back real event files.
    """
    from rr_model.config import TrainConfig
    from rr_model.run.trainer import train

    out = tmp_path_factory.mktemp("tiny_run") / "whole.csv"
    wandb_env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    wandb_env |= {
        f"WANDB_{k}_DIR": str(out.parent / f"wandb-{k.lower()}") for k in ("CONFIG", "CACHE", "DATA")
    }
    with mock.patch.dict(os.environ, wandb_env):
        cfg = TrainConfig(**TINY_RUN, cache_dir=str(token_cache), log=("tensorboard", "wandb"))
        record = train(cfg, out)
    return {**record, "out": out}
