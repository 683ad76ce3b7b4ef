"""Shared helpers and fixtures: `rr(...)` in-process, the published sweep, a stand-in `Tokens`, one offline
token cache and ONE trained tiny run for the end-to-end tests.

Training is the slow part of the suite, so the tests that compare against an uninterrupted run (resume
after a checkpoint, SIGKILL and resume, two DDP processes, out-of-memory accumulation) all read the same
run, trained once per session. Test modules import the plain helpers (`from conftest import rr`); the
fixtures they name as arguments.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Collection
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


# Numbers recorded once (golden outputs) are compared to this relative tolerance: the optimiser results (REML,
# Kenward-Roger, the power-law fit's amplitude on its flat ridge) move up to 1.2e-6 when the losses move by a
# few units of their last float digit, which is what another numpy, scipy or pandas does to them; the printed
# text shows 4 significant digits, so a real change moves them far past it.
REL = 1e-5


def close(got: Any, expected: Any, rel: float = REL, values: Collection[float] = ()) -> bool:
    """Whether two JSON values are equal, floats to a relative tolerance `rel` and strings as `same_printed`
    reads them with `values` (bools, None, ints and structure exactly): for records whose numbers come from
    optimisers that move in the last digits between library releases."""
    import math

    if isinstance(expected, float) and isinstance(got, int | float) and not isinstance(got, bool):
        return math.isclose(got, expected, rel_tol=rel, abs_tol=0.0) or got == expected
    if isinstance(expected, str) and isinstance(got, str):
        return same_printed(got, expected, values, rel)
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(close(got[k], expected[k], rel, values) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(close(g, e, rel, values) for g, e in zip(got, expected, strict=True))
        )
    return type(got) is type(expected) and got == expected


# a number printed with decimals, standing alone (not part of a name, a colour or a number in e-notation)
_DECIMAL = re.compile(r"(?<![\w.#])(\d+\.\d+)(?![\w.])")


def same_printed(got: str, want: str, values: Collection[float] = (), rel: float = REL) -> bool:
    """Whether two printed texts read the same: equal, but that a decimal number may read one unit of its last
    digit away where the two readings are the two roundings of one of `values` (to `rel`).

    Such a value sits on a rounding edge (0.00405 at four decimals, to within the digits the library versions
    move it), so it prints either way; anything else printed is compared exactly.
    """
    if got == want:
        return True
    a, b = _DECIMAL.split(got), _DECIMAL.split(want)
    return len(a) == len(b) and all(
        x == y or (i % 2 == 1 and _on_edge(x, y, values, rel))
        for i, (x, y) in enumerate(zip(a, b, strict=True))
    )


def _on_edge(x: str, y: str, values: Collection[float], rel: float) -> bool:
    """Whether `x` and `y`, digits as printed, are one unit of the last digit apart around one of `values`."""
    import math

    if len(x) != len(y) or x.find(".") != y.find("."):
        return False
    if abs(int(x.replace(".", "")) - int(y.replace(".", ""))) != 1:
        return False
    edge = (float(x) + float(y)) / 2
    return any(math.isclose(abs(v), edge, rel_tol=rel) for v in values)


def floats_in(value: Any) -> list[float]:
    """Every float in a JSON value, however deeply nested: the values its printed forms may round."""
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [n for v in value for n in floats_in(v)] if isinstance(value, list) else []


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


@pytest.fixture(scope="module")
def table(sweep) -> pd.DataFrame:
    """The published sweep's gap table (`gap_table`, its primary family: Holm-adjusted), once per module."""
    from rr_analysis.stats.gap_tests import gap_table

    return gap_table(sweep)


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


@pytest.fixture
def gpt2(monkeypatch):
    """A small byte-level BPE tokenizer (400 ids) with GPT-2's EOT, trained on the first 60 synthetic stories
    and served by `Tokenizer.from_pretrained("gpt2")`: GPT-2's code path, offline (HF_HUB_OFFLINE=1, so rr
    never probes the hub). The copy rr keeps of the tokenizer it loaded is forgotten before and after."""
    import tokenizers
    from tokenizers import models, pre_tokenizers, trainers

    from rr_model.data import synthetic
    from rr_model.data.tokenizers import EOT, gpt2_tokenizer

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(synthetic.stories(60), trainer)

    class Hub:
        @staticmethod
        def from_pretrained(identifier, revision="main", token=None):
            assert identifier == "gpt2"
            return tok

    monkeypatch.setattr(tokenizers, "Tokenizer", Hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    gpt2_tokenizer.cache_clear()
    yield tok
    gpt2_tokenizer.cache_clear()


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


def budget_grid(seed: int = 1) -> pd.DataFrame:
    """A constructed sweep of 3 sizes x 3 budgets (the worked example of docs/statistics.md, "Scale or
    tokens?"): sizes 10M, 30M and 100M, each trained for 1000, 3000 and 9000 steps (the published 64 x 256
    tokens a step, so D/N spans 0.16 to 15), 4 seeds, Review and Standard. Standard's gap depends on tokens
    per parameter only, 0.002 - 0.006 log10(D/N), plus each cell's own deviation (SD 0.0005, the size-level
    scatter tau), so at fixed D/N it does not change with size; a seed's effect is shared by both arms of a
    cell, and each run adds noise of SD 0.0006."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for size, params in (("10M", 10.0), ("30M", 30.0), ("100M", 100.0)):
        for steps in (1000, 3000, 9000):
            dn = steps * 64 * 256 / (params * 1e6)
            gap = 0.002 - 0.006 * np.log10(dn) + rng.normal(0, 0.0005)
            for s in range(4):
                base = 3.0 - 0.2 * np.log10(params) - 0.1 * np.log10(steps) + rng.normal(0, 0.004)
                for variant, shift in (("review_neutral", 0.0), ("standard", gap)):
                    rows.append(
                        {
                            "size": size,
                            "variant": variant,
                            "seed": s,
                            "params_M": params,
                            "steps": steps,
                            "val_loss": base + shift + rng.normal(0, 0.0006),
                            "ece": np.nan,
                            "minutes": np.nan,
                        }
                    )
    return pd.DataFrame(rows)
