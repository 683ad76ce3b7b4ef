"""Reference model, size ladder, the sweep file and the trainer for Review Residuals.

The ground of the house: rr_analysis and cli import from here, never the other way. Importing this package
is cheap. The ground modules (`errors`, `files`, `variants`, `ladder`, `schema`, `synthetic`) and the sweep
file (`dataset`, `integrity`, `merge`, `provenance`) serve everyone; `config`, `runs`, `sweep`,
`sweepstate`, `tokens` and `progress` plan and measure runs without torch. torch is imported only by the
modules that run a model: `model`, `train`, `evaluate`, `checkpoint`, `numerics`, `depth` and `gates`
(`launch` imports it inside the jobs it submits). `.importlinter` holds the floors.
"""
