"""The one grid renderer and its LaTeX escaper, shared by the analysis tables and the command line's records."""

from __future__ import annotations

import pytest
from conftest import rr

from cli.records import Format, echo_records
from rr_analysis.tables.grid import (
    WRAP_MIN,
    csv_text,
    latex_escape,
    latex_lines,
    markdown_lines,
    text_lines,
    wrap_columns,
)

SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    "\\": r"\textbackslash{}",
    "<": r"$<$",
    ">": r"$>$",
}


@pytest.mark.parametrize("char", list(SPECIAL))
def test_latex_escape_writes_each_special_character_so_it_prints_as_itself(char):
    assert latex_escape(f"a{char}b") == f"a{SPECIAL[char]}b"


def test_latex_escape_never_escapes_its_own_escapes():
    assert latex_escape("\\{}") == r"\textbackslash{}\{\}"
    assert latex_escape("".join(SPECIAL)) == "".join(SPECIAL.values())
    assert latex_escape("plain text, 0.05") == "plain text, 0.05"


def test_text_aligns_numbers_right_and_stacks_multiline_headers_and_cells():
    lines = text_lines(
        ["size", "mean\nloss", "note"], [["60M", "1.7", "a\nb"], ["1B", "1.55", "c"]], [False, True, False]
    )
    assert lines == [
        "      mean",
        "size  loss  note",
        "----  ----  ----",
        "60M    1.7  a",
        "            b",
        "1B    1.55  c",
    ]


def test_markdown_and_latex_escape_their_cells():
    assert markdown_lines(["a|b"], [["x\ny"]], [True]) == ["| a\\|b |", "|---:|", "| x y |"]
    assert latex_lines(["p_adj"], [["<0.0001"]], [True])[2:5] == [r"p\_adj \\", r"\midrule", r"$<$0.0001 \\"]


def test_csv_quotes_only_where_needed_and_writes_none_empty():
    assert csv_text(["a", "b"], [{"a": "x,y", "b": None}, {"a": 1.5, "b": True}]) == 'a,b\n"x,y",\n1.5,True\n'


def test_records_and_analysis_tables_escape_latex_alike():
    """`rr sizes` (records) and `rr analyze` (tables) draw LaTeX through the same escaper."""
    sizes = rr("sizes", "--format", "latex").output
    table = rr("analyze", "--format", "latex").output
    assert r"review\_neutral" in sizes and r"\caption{Ladder x variant, vocabulary 50,257 " in sizes
    assert "$<$0.0001" in table and "<0.0001" not in table.replace("$<$", "")


def test_wrap_columns_narrows_only_prose_to_the_width_and_keeps_its_words():
    header = ["size", "note"]
    rows = [["1B", "the largest size trained 6000 steps, the others 8000 or 7000"], ["60M", "-"]]
    wrapped = wrap_columns(header, rows, [False, True], 40)
    assert wrapped == [["1B", "the largest size trained 6000\nsteps, the others 8000 or 7000"], ["60M", "-"]]
    assert max(map(len, text_lines(header, wrapped, [False, False]))) <= 40
    assert wrap_columns(header, rows, [False, True], 200) == rows  # fits: untouched
    assert wrap_columns(header, rows, [False, False], 40) == rows  # no prose column: untouched
    narrow = wrap_columns(header, rows, [False, True], 10)  # never below WRAP_MIN
    assert max(len(line) for line in narrow[0][1].split("\n")) <= WRAP_MIN < len(rows[0][1])


def test_records_wrap_a_note_column_in_text_alone(monkeypatch, capsys):
    records = [{"size": "1B", "n": 3, "note": "the largest size trained 6000 steps, the others 8000"}]
    monkeypatch.setenv("COLUMNS", "40")
    echo_records(records, Format.text, title="plan")
    assert capsys.readouterr().out.splitlines() == [
        "plan",
        "size  n  note",
        "----  -  -----------------------------",
        "1B    3  the largest size trained 6000",
        "         steps, the others 8000",
    ]
    echo_records(records, Format.markdown)
    assert capsys.readouterr().out.splitlines()[2] == f"| 1B | 3 | {records[0]['note']} |"
