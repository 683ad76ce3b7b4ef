"""The sweep record: the CSV schema, reading it (`csv_text`, then `dataset`), writing and appending,
the published rows' integrity, merging files, the provenance sidecar of each run and the metrics logs
read back. The packaged reference copy of the published data lives in `published/`. torch-free.
"""

__all__ = ["DECIMALS"]

# The published precision of each float column (decimals), as the release writes it (shortest repr after
# rounding): new rows are written so (`rr_core.sweepfile.columns.format_row`), so files stay diffable, and
# `rr train` shows its results so. Here, not in the schema, so that the command line reads it without pandas.
DECIMALS = {"params_M": 2, "val_loss": 4, "ece": 4, "minutes": 1}
