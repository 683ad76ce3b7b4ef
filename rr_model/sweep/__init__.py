"""Launching many runs: `local` (one process per run, biggest first), `slurm` (a submitit job array,
requeued from checkpoints) and `jobs` (the state file of submitted jobs). Above the trainer: it plans with
`rr_model.runs` and starts `rr_model.train` in children or jobs."""
