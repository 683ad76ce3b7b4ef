"""A finished model's uses: loading it for generation (`inference`), exporting it with the code that
transformers loads (`export`, `hf_code`, `remote_code/`), scoring it on lm-evaluation-harness's tasks
(`downstream`) and looking inside its gates (`gates`, `anatomy`). `scoring` and `gate_reading` hold what `rr eval`
and `rr gates` ask as one documented value each (torch-free: their fields are the commands' options)."""
