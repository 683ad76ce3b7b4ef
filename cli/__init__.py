"""The `rr` command line: a thin shell over rr_analysis and rr_model.

`main` registers one module per command (`validate`, `sizes`, `depth`, `gates`, `plot`, `analyze`, `train`,
`sweep`, `merge`, `report`); each parses options, calls one library function and renders. At load time
they import only typer, the standard library and rr's error classes, so `rr --help` loads no pandas or
torch. Shared pieces: `errors` (rr's errors to `rr: error:` and exit 2), `records` (record tables in every
format), `choices` (the option values the commands share).
"""
