"""`rr export`: safetensors, config.json, provenance and a model card that rebuild the tiny run's model with
bitwise-equal logits, and never overwrite a folder's files."""

from __future__ import annotations

import json

import torch
from conftest import rr
from safetensors.torch import load_file

from rr_model import checkpoint
from rr_model.export import FILES
from rr_model.inference import load_trained
from rr_model.model import GPT


def test_an_export_loads_back_with_bitwise_equal_logits_and_refuses_to_overwrite(tiny_run, tmp_path):
    final = checkpoint.final_path(tiny_run["out"], "tiny", "standard", 0)
    out = tmp_path / "export"
    result = rr("export", "--checkpoint", str(final), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.split() == [str(out / name) for name in FILES]

    rng = torch.get_rng_state()
    model = GPT.from_pretrained(out)
    assert torch.equal(torch.get_rng_state(), rng)  # loading draws nothing from the caller's stream
    assert model.transformer.wte.weight is model.lm_head.weight  # tied again
    idx = torch.randint(0, 257, (2, 64), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], load_trained(final).model(idx)[0])
    assert "transformer.wte.weight" not in load_file(out / "model.safetensors")  # the tied matrix once

    assert json.loads((out / "provenance.json").read_text())["run_id"] == tiny_run["run_id"]
    card = (out / "README.md").read_text()
    for words in ("Standard", "ladder size **tiny**", "12 steps", "synthetic", "Kramer (2026)", "Apache-2.0"):
        assert words in card

    before = {name: (out / name).read_bytes() for name in FILES}
    again = rr("export", "--checkpoint", str(final), "--out", str(out))
    assert again.exit_code == 2 and "already holds model.safetensors" in again.output
    assert {name: (out / name).read_bytes() for name in FILES} == before
