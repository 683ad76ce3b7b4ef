"""What a new user meets first: help that reads whole, names in any case, the nearest valid name."""

from __future__ import annotations

import pytest
from conftest import rr

from rr_analysis.stats.notes import recipe_notes
from rr_core.errors import InputError
from rr_core.ladder import get_size


@pytest.mark.parametrize(
    "command", [[], ["train"], ["sweep"], ["plot", "emergence"], ["analyze"], ["report"]]
)
def test_help_is_whole_and_flags_carry_no_type(command):
    """Flags show no type and a repeatable option reads <str>... (tested on sweep: --variant, --sbatch)."""
    result = rr(*command, "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "<list[" not in result.output
    assert "…" not in result.output  # nothing cut to the terminal's width


def test_help_reads_through_rrs_own_option_class_and_typer_is_left_as_it_is():
    """The type labels come from cli.help.RrOption, a subclass: typer's own method is not replaced."""
    import typer.core

    from cli.help import RrOption

    assert typer.core.TyperOption.display_type_rich.__module__ == "typer.core"
    assert RrOption.display_type_rich is not typer.core.TyperOption.display_type_rich
    out = rr("sweep", "--help", env={"COLUMNS": "100"}).output
    assert "--variant" in out and "<str>..." in out and "<bool>" not in out


def test_command_names_are_read_in_any_case(tmp_path):
    result = rr("plot", "Scaling", "-o", str(tmp_path / "s.png"), "--dpi", "20")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "s.png").exists()


def test_an_unknown_plot_kind_is_told_the_nearest():
    result = rr("plot", "emergnce")
    assert result.exit_code == 2 and "Did you mean 'emergence'?" in result.output


def test_an_unknown_analyze_view_is_told_the_nearest_and_views_read_in_any_case():
    result = rr("analyze", "emergnce")
    said = " ".join(result.output.replace("│", " ").split())  # the error panel wraps its text
    assert (
        result.exit_code == 2 and "'emergnce' is not a view (did you mean emergence?); the views are" in said
    )
    assert "the views are table, emergence, power" in said
    assert rr("analyze", "EMERGENCE").output == rr("analyze", "emergence").output


def test_sizes_are_read_in_any_case_and_an_unknown_one_is_told_the_nearest():
    assert get_size("150m").name == "150M" and get_size("TINY").name == "tiny"
    for typed, near in (("15OM", "150M"), ("１５０M", "150M"), ("tinny", "tiny")):
        with pytest.raises(
            InputError, match=f"unknown size '{typed}' \\(did you mean {near}\\?\\); the ladder has"
        ):
            get_size(typed)


def test_a_size_typed_in_any_case_is_planned_and_recorded_by_its_ladder_name():
    from rr_model.config import TrainConfig

    assert TrainConfig(size="150m").size == "150M" and TrainConfig(size="TINY").size == "tiny"
    result = rr("train", "--size", "150m", "--seed", "0", "--dry-run")
    assert result.exit_code == 0, result.output  # seed 0 is published: found under its ladder name
    assert "skip: 150M review_neutral 0 is already in" in result.output and "150m" not in result.output
    result = rr("train", "--size", "150m", "--seed", "7", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "150M  review_neutral     7" in result.output and "150m" not in result.output


def test_a_note_never_reads_as_equal_to_the_limit_it_exceeds(sweep):
    """The published 60M counts differ by 60.68 / 59.47 - 1 = 2.035%: the note says 2.03%, not 2.0%, over 2%;
    3.5% needs no second decimal."""

    def at_60m(df):
        notes = recipe_notes(df)
        return notes.loc[(notes["kind"] == "params_mismatch") & (notes["size"] == "60M"), "message"].item()

    assert "differ by 2.03% (review_neutral 59.47M, highway 60.68M), more than 2%:" in at_60m(sweep)
    highway = (sweep["size"] == "60M") & (sweep["variant"] == "highway")
    wider = sweep.assign(params_M=sweep["params_M"].mask(highway, 59.47 * 1.035))
    assert "differ by 3.5% (review_neutral 59.47M, highway 61.55M)" in at_60m(wider)
