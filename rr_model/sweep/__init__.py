"""Launching many runs: `local` (one process per run, biggest first), `slurm` (a submitit job array,
requeued from checkpoints) and `jobs` (the state file of submitted jobs). Above the trainer: it plans with
`rr_model.config` and starts `rr_model.run.trainer` in children or jobs."""
