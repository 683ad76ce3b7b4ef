"""The training run: one run from its pre-flight to its row.

`planning` says what a command will train and where its rows go (torch-free: the dry run reads it);
`trainer` runs the loop; `step` is the recipe's optimiser step; `validation` the final evaluation;
`progress`, `numerics` and `gate_watch` watch the loop; `reproduce` re-trains published runs.
"""
