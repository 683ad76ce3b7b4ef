"""Checkpoints: where a run's files live (`paths`, torch-free), what a checkpoint holds and how it is saved,
checked and read (`state`), and a sharded run's checkpoint folder (`sharded`)."""
