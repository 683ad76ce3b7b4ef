"""The `rr` command line: a thin shell over rr_analysis and rr_model."""
