"""Reference model, size ladder, data pipeline and trainer for Review Residuals.

Importing this package is cheap: torch is only imported by the modules that need it
(`rr_model.model`, `rr_model.data`, `rr_model.train`).
"""
