"""The sweep record: the CSV schema, reading it (`csv_text`, then `dataset`), writing and appending,
the published rows' integrity, merging files, the provenance sidecar of each run and the metrics logs
read back. The packaged reference copy of the published data lives in `published/`. torch-free.
"""
