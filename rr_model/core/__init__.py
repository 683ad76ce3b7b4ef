"""The shared vocabulary at rr_model's ground: `errors` (rr's error classes), `files` (the one atomic
writer and the one lock), `variants` (the variant registry) and `ladder` (sizes and recipe). Everything in
rr imports these; they import nothing of rr above them."""
