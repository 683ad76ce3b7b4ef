"""The variant registry: open names, look-alikes refused with the nearest registered name, colours per figure."""

from __future__ import annotations

import pytest

from rr_core.palette import EXTRA_COLOURS, palette
from rr_core.variants import (
    NAMES,
    VARIANTS,
    label,
    matched,
    nearest,
    order_key,
    unknown_variant,
    variant_problem,
)


@pytest.mark.parametrize("name", ["myrule", "a", "rule_2", "x" * 40])
def test_any_lower_case_ascii_name_is_a_variant_name(name):
    assert variant_problem(name) is None
    assert label(name) == name and not matched(name)


@pytest.mark.parametrize(
    "name", ["Highway", "high way", "h\u0456ghway", "HIGHWAY", "high-way", "ｈｉｇｈｗａｙ"]
)
def test_look_alikes_are_refused_naming_the_registered_name(name):
    assert variant_problem(name).endswith("(did you mean highway?)")
    assert nearest(name) == "highway"


@pytest.mark.parametrize("name", ["2rule", "_rule", "x" * 41, "", "my.rule"])
def test_names_outside_the_pattern_are_refused(name):
    assert variant_problem(name).startswith("must be a variant name: a lower-case ASCII letter")


def test_unknown_variant_names_the_nearest_and_every_registered():
    assert unknown_variant("Highway").startswith(
        "unknown variant 'Highway' (did you mean highway?); registered:"
    )
    assert unknown_variant("bogus") == f"unknown variant 'bogus'; registered: {', '.join(VARIANTS)}"


def test_registered_colours_stay_and_extras_go_to_the_others_in_sorted_order():
    got = palette(["zeta", "review_neutral", "alpha", "highway"])
    assert got["review_neutral"] == "#0072B2" and got["highway"] == "#E69F00"
    assert (got["alpha"], got["zeta"]) == EXTRA_COLOURS[:2]
    assert palette(["zeta", "alpha"]) == palette(["alpha", "zeta"])  # independent of the order given
    known = {v.colour for v in VARIANTS.values()}
    assert not known & set(EXTRA_COLOURS)


def test_every_variant_of_rr_s_own_has_a_colour_of_its_own():
    """Issue 46: the rival methods and the ablations drew in extra colours, which shift with the figure's
    other variants; each of rr's own now keeps one colour across every figure."""
    colours = [VARIANTS[n].colour for n in NAMES]
    assert all(colours) and len({c.upper() for c in colours}) == len(NAMES)
    rivals = ("hyper_connections", "hyper_connections_static", "denseformer", "attn_res", "attn_res_block")
    assert palette([*rivals, "myrule"])["myrule"] == EXTRA_COLOURS[0]


def test_extras_repeat_past_the_palette_but_never_take_a_registered_colour():
    names = [f"r{i:02d}" for i in range(len(EXTRA_COLOURS) + 2)]
    got = palette([*names, "standard"])
    assert len(set(got[n] for n in names[: len(EXTRA_COLOURS)])) == len(EXTRA_COLOURS)
    assert got[names[-1]] == EXTRA_COLOURS[1] and "#009E73" not in {got[n] for n in names}


def test_order_puts_registered_variants_first_then_the_others_by_name():
    assert sorted(["zeta", "standard", "alpha", "review_neutral"], key=order_key) == [
        "review_neutral",
        "standard",
        "alpha",
        "zeta",
    ]


def test_the_model_s_config_and_a_run_refuse_an_unknown_variant_in_the_same_words():
    from rr_core.errors import InputError
    from rr_core.shapes import GPTConfig
    from rr_model.config import TrainConfig

    said = []
    for make in (lambda: GPTConfig(variant="higway"), lambda: TrainConfig("tiny", "higway")):
        with pytest.raises(InputError) as e:
            make()
        said.append(str(e.value))
    assert said == [unknown_variant("higway")] * 2 and "(did you mean highway?)" in said[0]
