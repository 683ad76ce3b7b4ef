"""A finished model's uses: loading it for generation (`inference`), exporting it with the code that
transformers loads (`export`, `hf_code`, `remote_code/`), scoring it on lm-evaluation-harness's tasks
(`downstream`), looking inside its gates (`gates`, `anatomy`) and checking how the gradient reaches the first
block at initialisation (`depth`, `rr depth-check`). `scoring`, `gate_reading` and `sampling` hold what
`rr eval`, `rr gates` and `rr sample` ask, one documented value each (torch-free: their fields are the
commands' options)."""
