"""The sweep file: its schema, loading and appending, the published rows' integrity, merging, and the run
provenance sidecar. The packaged reference copy of the published data lives in `published/`. torch-free;
imports only `rr_model.core`."""
