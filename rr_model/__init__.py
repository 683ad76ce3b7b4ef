"""Reference model, size ladder, data pipeline and trainer for Review Residuals.

Importing this package is cheap. The torch-free modules (`ladder`, `variants`, `config`, `synthetic`,
`sweep`, `provenance`) serve the analysis and the CLI; torch is imported only by the modules that run it
(`model`, `depth`, `data`, `train`, `evaluate`, `checkpoint`, `progress`).
"""
