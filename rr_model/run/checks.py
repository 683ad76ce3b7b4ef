"""A run's checks before its first step, made once per run (`check_run`: the trainer's and `--dry-run`'s
alike), what is asked again once the run is claimed (`check_claimed`), and what only its loaded tokens
tell (`check_windows`). Torch-free, so dry runs check at once.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING

from rr_core.errors import InputError, Note
from rr_core.shapes import GPTConfig, model_config
from rr_model.checkpoint.paths import final_path, found_checkpoints
from rr_model.config import TrainConfig
from rr_model.data.token_cache import Corpus
from rr_model.parallel.hardware import host_memory
from rr_model.parallel.memory import refuse_unbuildable, refuse_unfit, refuse_windows
from rr_model.run.output_file import OutputPlan

if TYPE_CHECKING:
    from rr_model.data.token_cache import Tokens

__all__ = ["check_run", "check_claimed", "check_windows", "say_within_warmup"]


def check_run(
    cfg: TrainConfig,
    output: OutputPlan,
    corpus: Corpus,
    world: int,
    gpu_gib: float | None,
    resume: bool = False,
    *,
    here: bool = True,
) -> GPTConfig:
    """Refuse a run that may not go ahead, before it creates anything; the model it trains otherwise.

    The one list of a run's checks before its first step, made once per run: by `Runs.check` (`--dry-run`,
    and a command's runs before the first trains), or by the trainer (`rr_model.run.trainer`) for a run not
    checked so against `output` (`OutputPlan.checked`), always with `check_data`'s `Corpus`, before the run is
    claimed; so a dry run refuses what the run would refuse, and a refused run leaves no file behind. Once
    claimed, the trainer asks only what may have changed since (`check_claimed`) and what only the loaded
    tokens tell (`check_windows`). Its batch splits over
    `world` processes and `--micro-batches`; the recipe guard (`OutputPlan.guard`); its row fits the
    file (`OutputPlan.check_fits`); its memory plan fits `gpu_gib` per process (None: not checked) and,
    where it trains `here` (not a job planned for other machines), this machine's memory holds it
    (`refuse_unbuildable`); a checkpoint of it, or its final weights (kept when its row could not be
    written), is there only where `resume` continues it (`_check_left`; what the checkpoint holds is checked
    when the trainer reads it). The numbers of the run
    alone are checked where they are made (`rr_core.ladder.Recipe`, `rr_core.ladder.Size`, `TrainConfig`).
    """
    r = cfg.recipe
    if r.batch_size % world:
        raise InputError(f"the batch of {r.batch_size} sequences does not split over {world} processes")
    if (r.batch_size // world) % cfg.micro_batches:
        raise InputError(
            f"--micro-batches {cfg.micro_batches} does not split each process's {r.batch_size // world} "
            "sequences evenly"
        )
    output.guard(cfg, corpus)
    if cfg.tokens_per_param is not None and corpus.vocab_size != cfg.vocab_size:
        raise InputError(
            f"--tokens-per-param counts the reference's parameters at a vocabulary of {cfg.vocab_size}, but "
            f"{corpus.source} has {corpus.vocab_size}: give --tokenizer {corpus.tokenizer}"
        )
    mcfg = replace(
        model_config(cfg.size, cfg.variant, corpus.vocab_size, cfg.ladder, cfg.reference),
        block_size=r.block_size,
    )
    output.check_fits(cfg, mcfg.n_params)
    refuse_unfit(cfg, mcfg, world, gpu_gib)
    refuse_unbuildable(cfg, mcfg, world, host_memory() if here else None, on_host=gpu_gib is None)
    if cfg.eval_every:
        host = host_memory() if here else None
        refuse_windows(
            cfg.eval_windows, r.block_size, mcfg.vocab_size, "--eval-windows", host, batch=r.batch_size
        )
    _check_left(cfg, output, resume)
    output.checked[cfg, world, resume] = mcfg
    return mcfg


def say_within_warmup(cfg: TrainConfig) -> None:
    """Note a run whose steps end inside its warmup: said by the dry run's plan (`describe_runs`) and by the
    trainer under its start line, once every refusal has passed (a refused run says only why). A note, not a
    refusal (a ladder's size is refused for it, `rr_core.ladder.Size`): a few steps of the tiny size are how
    rr's own checks and a first try run, honest runs of what they are, though not of the schedule the recipe
    describes."""
    r = cfg.recipe
    if r.warmup_steps < cfg.steps:
        return
    share = cfg.steps / r.warmup_steps
    warnings.warn(
        Note(
            f"the run's {cfg.steps} steps end inside the warmup of {r.warmup_steps} steps: the learning rate "
            f"rises to {share * r.lr:.3g} ({share:.0%} of its peak {r.lr:g}) and never decays; train more "
            f"than {r.warmup_steps} steps, or set a shorter warmup_steps in a ladder file (--ladder)"
        ),
        stacklevel=2,
    )


def check_claimed(cfg: TrainConfig, output: OutputPlan, params: int, resume: bool) -> None:
    """What another process may have changed between a run's checks (`check_run`) and its claim, asked again
    once the run is claimed (`rr_model.run.trainer`): a row of it (the file is read again only where it
    changed, `OutputPlan.refresh`), or a checkpoint or final weights it left (`_check_left`)."""
    if output.refresh():
        output.check_fits(cfg, params)
    _check_left(cfg, output, resume)


def _check_left(cfg: TrainConfig, output: OutputPlan, resume: bool) -> None:
    """Refuse a run that left a checkpoint, or final weights (kept when its row could not be written),
    unless `resume` continues it."""
    if not resume and (found := found_checkpoints(output.out, **cfg.stem)):
        raise InputError(f"{found[-1]} holds a checkpoint of this run: pass --resume to continue it")
    if not resume and (final := final_path(output.out, *cfg.key)).exists():  # its row could not be written
        raise InputError(
            f"{final} holds the final weights of this run, whose row is not in {output.out}: pass --resume to "
            "write its row from them without training, or delete the file to train the run again"
        )


def check_windows(cfg: TrainConfig, tokens: Tokens) -> None:
    """Refuse tokens too few for the run's windows: each training batch and each of the evaluation's
    `eval_batches` draws windows of `block_size` + 1 tokens from a stream of at least `block_size` + 2
    (`rr_model.data.windows.sample_batch`), so a short corpus is refused now, not after training."""
    r = cfg.recipe
    for part, stream in (("training", tokens.train), ("validation", tokens.val)):
        if len(stream) < r.block_size + 2:
            n = len(tokens.train) + len(tokens.val)
            raise InputError(
                f"--corpus {cfg.data}: its {n:,} tokens ({tokens.n_text:,} documents) leave {len(stream):,} "
                f"for {part} (val_frac {r.val_frac}), fewer than one window of block_size {r.block_size} needs "
                f"({r.block_size + 2}); give a longer corpus, or a smaller block_size in a ladder file"
            )
