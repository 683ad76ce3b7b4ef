"""The loader: the published file, tolerated quirks, every refusal, and the write/load round trip."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import rr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rr_core.sweepfile.csv_text import FIELDS, DataError
from rr_core.sweepfile.dataset import (
    append_rows,
    bundled_path,
    load_sweep,
    read_sweep_text,
    size_order,
    write_sweep,
)
from rr_core.variants import NAMES

REPO = Path(__file__).resolve().parents[1]
HEADER = ",".join(FIELDS)
GOOD = "60M,review_neutral,0,59.47,8000,1.7016,0.0087,6.9"


def test_published_file_loads_typed():
    df = load_sweep()
    assert len(df) == 42
    assert list(df.columns) == FIELDS
    assert df["seed"].dtype == np.int64 and df["steps"].dtype == np.int64
    assert all(df[c].dtype == np.float64 for c in ("params_M", "val_loss", "ece", "minutes"))
    assert df.loc[0, "val_loss"] == 1.7016
    assert sorted(df["size"].unique()) == sorted(["60M", "150M", "320M", "590M", "1B"])
    assert df.groupby(["size", "variant"]).size().to_dict()[("320M", "highway")] == 2


def test_repository_copy_equals_bundled_copy():
    assert (REPO / "data" / "scaling_v8.csv").read_bytes()[: bundled_path().stat().st_size] == (
        bundled_path().read_bytes()
    )


def write(tmp_path: Path, text: str | bytes, name: str = "sweep.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


@pytest.mark.parametrize(
    "text",
    [
        "\ufeff" + HEADER + "\n" + GOOD + "\n",  # BOM
        HEADER + "\r\n" + GOOD + "\r\n",  # CRLF
        " size , variant,seed,params_M,steps,val_loss,ece,minutes\n 60M , review_neutral ,0, 59.47,8000,1.7016,0.0087,6.9\n",
        "variant,size,seed,params_M,steps,val_loss,ece,minutes\nreview_neutral,60M,0,59.47,8000,1.7016,0.0087,6.9\n",
        HEADER + "\n\n" + GOOD + "\n\n",  # blank lines
        HEADER + "\n" + GOOD,  # no final newline
    ],
    ids=["bom", "crlf", "whitespace", "column-order", "blank-lines", "no-final-newline"],
)
def test_tolerated_quirks(tmp_path, text):
    df = load_sweep(write(tmp_path, text))
    assert df.to_dict("records") == [
        {
            "size": "60M",
            "variant": "review_neutral",
            "seed": 0,
            "params_M": 59.47,
            "steps": 8000,
            "val_loss": 1.7016,
            "ece": 0.0087,
            "minutes": 6.9,
        }
    ]


def test_empty_ece_and_minutes_are_nan(tmp_path):
    df = load_sweep(write(tmp_path, HEADER + "\n60M,review_neutral,0,59.47,8000,1.7,,\n"))
    assert math.isnan(df.loc[0, "ece"]) and math.isnan(df.loc[0, "minutes"])


def test_rows_in_any_order_and_new_size_labels(tmp_path):
    rows = ["2B,standard,4,2001.5,5000,1.41,,", "750K,highway,0,0.75,100,3.2,0.1,0.5", GOOD]
    df = load_sweep(write(tmp_path, HEADER + "\n" + "\n".join(rows) + "\n"))
    assert list(df["size"]) == ["2B", "750K", "60M"]


# (file text, expected exact fragments of the message). Each is a distinct way for a file to be wrong.
BAD = {
    "empty": ("", ["is empty"]),
    "whitespace-only": ("  \n\n", ["is empty"]),
    "header-only": (HEADER + "\n", ["has a header but no data rows"]),
    "missing-column": (
        "size,variant,seed,params_M,steps,val_loss,ece\n60M,review_neutral,0,59.47,8000,1.7,0.1\n",
        ["line 1, column minutes - required column is missing"],
    ),
    "duplicate-header": (
        HEADER + ",seed\n" + GOOD + ",0\n",
        ["column seed - column name appears more than once"],
    ),
    "unknown-column": (HEADER + ",notes\n" + GOOD + ",x\n", ["column notes - unknown column"]),
    "not-csv": ('{"runs": [1, 2, 3]}\n', ["does not look like a sweep CSV"]),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["not UTF-8"]),
    "latin1": (
        (HEADER + "\n60M,review_neutral,0,59.47,8000,1.7,0.1,6.9 caf\xe9\n").encode("latin-1"),
        ["line 2"],
    ),
    "ragged-row": (HEADER + "\n" + GOOD + ",extra\n", ["line 2 - has 9 fields, the header has 8"]),
    "unknown-variant": (
        HEADER + "\n60M,Review,0,59.47,8000,1.7,0.1,6.9\n",
        ["line 2, column variant: 'Review' - must be a variant name"],
    ),
    "bad-size": (HEADER + "\n60m,review_neutral,0,59.47,8000,1.7,0.1,6.9\n", ["column size: '60m'"]),
    "negative-seed": (HEADER + "\n60M,review_neutral,-1,59.47,8000,1.7,0.1,6.9\n", ["column seed: -1"]),
    "float-seed": (
        HEADER + "\n60M,review_neutral,1.5,59.47,8000,1.7,0.1,6.9\n",
        ["column seed: '1.5' - is not an integer"],
    ),
    "zero-params": (
        HEADER + "\n60M,review_neutral,0,0,8000,1.7,0.1,6.9\n",
        ["column params_M: 0.0 - must be a number > 0"],
    ),
    "zero-steps": (HEADER + "\n60M,review_neutral,0,59.47,0,1.7,0.1,6.9\n", ["column steps: 0"]),
    "loss-text": (
        HEADER + "\n60M,review_neutral,0,59.47,8000,abc,0.1,6.9\n",
        ["column val_loss: 'abc' - is not a number"],
    ),
    "loss-empty": (
        HEADER + "\n60M,review_neutral,0,59.47,8000,,0.1,6.9\n",
        ["column val_loss: '' - the cell is empty, and val_loss needs a value in every row"],
    ),
    "loss-inf": (HEADER + "\n60M,review_neutral,0,59.47,8000,inf,0.1,6.9\n", ["column val_loss: inf"]),
    "loss-nan": (HEADER + "\n60M,review_neutral,0,59.47,8000,nan,0.1,6.9\n", ["column val_loss"]),
    "loss-too-big": (
        HEADER + "\n60M,review_neutral,0,59.47,8000,25,0.1,6.9\n",
        ["a finite number in (0, 20)"],
    ),
    "ece-above-one": (HEADER + "\n60M,review_neutral,0,59.47,8000,1.7,1.5,6.9\n", ["column ece: 1.5"]),
    "negative-minutes": (HEADER + "\n60M,review_neutral,0,59.47,8000,1.7,0.1,-2\n", ["column minutes: -2.0"]),
    "duplicate-run": (
        HEADER + "\n" + GOOD + "\n" + GOOD.replace("1.7016", "1.7") + "\n",
        ["line 2, column size,variant,seed", "line 3, column size,variant,seed", "duplicate run"],
    ),
    "params-not-constant": (
        HEADER + "\n" + GOOD + "\n60M,review_neutral,1,59.48,8000,1.7,0.1,6.9\n",
        ["line 3, column params_M: 59.48 - params_M must be the same in every row of a (size, variant)"],
    ),
    "steps-not-constant": (
        HEADER + "\n" + GOOD + "\n60M,review_neutral,1,59.47,7000,1.7,0.1,6.9\n",
        ["column steps", "steps must be the same"],
    ),
    "unclosed-quote": (HEADER + '\n60M,"review_neutral,0,59.47,8000,1.7,0.1,6.9\n', ["line 2"]),
}


@pytest.mark.parametrize("name", list(BAD))
def test_malformed_file_is_refused_with_a_precise_message(tmp_path, name):
    text, fragments = BAD[name]
    path = write(tmp_path, text)
    before = path.read_bytes()
    with pytest.raises(DataError) as err:
        load_sweep(path)
    message = str(err.value)
    assert message.startswith(str(path))
    for fragment in fragments:
        assert fragment in message, message
    assert "Traceback" not in message and "SchemaError" not in message
    assert path.read_bytes() == before  # nothing is ever rewritten


def _workbook() -> bytes:
    """The first bytes of an .xlsx as Excel saves one: a zip archive of XML parts."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return buf.getvalue()


_SHEET = HEADER + "\n" + GOOD + "\n"
# (file bytes, the fragments its refusal holds): files as a spreadsheet leaves them, each refused saying what the
# file or cell is and what to do.
SPREADSHEET = {
    "tokens_B": (
        (HEADER + ",tokens_B\n" + GOOD + ",1.5\n").encode(),
        [
            "line 1, column tokens_B - unknown column: an extra measured column's name must be a lower-case identifier",
            "rename it tokens_b to read it",
        ],
    ),
    "Accuracy": (
        (HEADER + ",Accuracy\n" + GOOD + ",0.5\n").encode(),
        ["column Accuracy - unknown column", "rename it accuracy to read it"],
    ),
    "val acc": (
        (HEADER + ",val acc\n" + GOOD + ",0.5\n").encode(),
        ["column val acc - unknown column", "rename it val_acc to read it"],
    ),
    "Val_Loss": (
        _SHEET.replace("val_loss", "Val_Loss").encode(),
        ["column Val_Loss - unknown column: did you mean val_loss? Names are matched exactly"],
    ),
    "taken": (
        (HEADER + ",acc,Acc\n" + GOOD + ",0.5,0.5\n").encode(),
        ["column Acc - unknown column", "acc, the name it would take, is another column's"],
    ),
    "xlsx": (
        _workbook(),
        [
            "is a zip archive, not CSV text: an Excel workbook (.xlsx)",
            "export the sheet as CSV",
            "pd.read_excel(path).to_csv(new_path, index=False)",
        ],
    ),
    "xls": (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
        ["is an Excel 97-2003 workbook (.xls), not CSV text", "export the sheet as CSV"],
    ),
    "utf-16": (
        _SHEET.encode("utf-16"),
        [
            "is UTF-16 text (as Excel's 'Unicode Text' saves it), not UTF-8",
            "save it as UTF-8",
            "encoding='utf-16'",
        ],
    ),
    "utf-16-le": (
        _SHEET.encode("utf-16-le"),
        ["is UTF-16 text (without a byte-order mark), not UTF-8", "encoding='utf-16-le'"],
    ),
    "utf-16-be": (
        _SHEET.encode("utf-16-be"),
        ["is UTF-16 text (without a byte-order mark)", "encoding='utf-16-be'"],
    ),
    "utf-32": (_SHEET.encode("utf-32"), ["is UTF-32 text", "encoding='utf-32'"]),
    "empty-cell": (
        _SHEET.replace(",1.7016,", ",,").encode(),
        [
            "line 2, column val_loss: '' - the cell is empty, and val_loss needs a value in every row: a finite number in (0, 20)"
        ],
    ),
    "empty-size": (
        _SHEET.replace("60M,", ",", 1).encode(),
        ["line 2, column size: '' - the cell is empty, and size needs a value in every row"],
    ),
    "nan-cell": (
        _SHEET.replace(",1.7016,", ",NaN,").encode(),
        [
            "line 2, column val_loss: nan - the cell holds NaN (no value), and val_loss needs a value in every row"
        ],
    ),
}


@pytest.mark.parametrize("name", list(SPREADSHEET))
def test_spreadsheet_habits_are_named_with_what_to_do(tmp_path, name):
    """The loader and `rr analyze --data` both say what the file or cell is, in plain words, and what to do;
    exit 2, no traceback, the file untouched."""
    raw, fragments = SPREADSHEET[name]
    path = write(tmp_path, raw, "sheet.csv")
    with pytest.raises(DataError) as err:
        load_sweep(path)
    result = rr("analyze", "--data", path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    for message in (str(err.value), result.output):
        assert str(path) in message and all(f in message for f in fragments), message
    assert "not_nullable" not in result.output and "not UTF-8 text (byte" not in result.output
    assert path.read_bytes() == raw


def test_all_problems_reported_in_one_pass(tmp_path):
    text = HEADER + "\n60M,Bogus,0,59.47,8000,1.7,0.1,6.9\n60M,review_neutral,-3,59.47,8000,99,2,6.9\n"
    with pytest.raises(DataError) as err:
        load_sweep(write(tmp_path, text))
    got = [(p.line, p.column) for p in err.value.problems]
    assert got == [(2, "variant"), (3, "ece"), (3, "seed"), (3, "val_loss")]


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_sweep(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="is a directory"):
        load_sweep(tmp_path)


# --- write / load round trip -------------------------------------------------------------------------

finite = dict(allow_nan=False, allow_infinity=False)
row = st.fixed_dictionaries(
    {
        "size": st.one_of(st.sampled_from(["60M", "1B", "tiny"]), st.from_regex(r"\A[1-9][0-9]{0,3}[KMB]\Z")),
        "variant": st.sampled_from(NAMES),
        "seed": st.integers(0, 10**6),
        "val_loss": st.floats(1e-6, 19.999, **finite),
        "ece": st.one_of(st.just(math.nan), st.floats(0, 1, **finite)),
        "minutes": st.one_of(st.just(math.nan), st.floats(0, 1e5, **finite)),
    }
)
shape = st.tuples(st.floats(1e-3, 1e4, **finite), st.integers(1, 10**6))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(row, min_size=1, max_size=12, unique_by=lambda r: (r["size"], r["variant"], r["seed"])),
    data=st.data(),
)
def test_any_valid_frame_round_trips_exactly(tmp_path_factory, rows, data):
    shapes = {}
    for r in rows:  # params_M and steps are constant within a (size, variant)
        r["params_M"], r["steps"] = shapes.setdefault((r["size"], r["variant"]), data.draw(shape))
    df = pd.DataFrame(rows)[FIELDS].astype({"seed": "int64", "steps": "int64"})
    path = tmp_path_factory.mktemp("rt") / "sweep.csv"
    write_sweep(df, path, exact=True)
    back = load_sweep(path)
    assert back["size"].cat.ordered and list(back["size"].cat.categories) == size_order(back)
    back = back.astype({"size": str})
    pd.testing.assert_frame_equal(back, df, check_dtype=False, check_exact=True)
    assert (back.dtypes == df.astype({"size": str, "variant": str}).dtypes).all()


def test_write_refuses_to_overwrite(tmp_path):
    df = load_sweep()
    path = write(tmp_path, "keep me")
    with pytest.raises(FileExistsError):
        write_sweep(df, path)
    assert path.read_text() == "keep me"


def test_published_format_reproduces_the_published_bytes(tmp_path):
    write_sweep(load_sweep(), tmp_path / "copy.csv")
    assert (tmp_path / "copy.csv").read_bytes() == bundled_path().read_bytes()


# --- append ------------------------------------------------------------------------------------------

NEW = {
    "size": "60M",
    "variant": "review_neutral",
    "seed": 3,
    "params_M": 59.47,
    "steps": 8000,
    "val_loss": 1.69012,
    "ece": 0.0085,
    "minutes": float("nan"),
}


def test_append_keeps_existing_bytes_and_adds_one_line(published_copy):
    path = published_copy
    before = path.read_bytes()
    added = append_rows(path, [NEW])
    after = path.read_bytes()
    assert after.startswith(before)
    assert after[len(before) :] == b"60M,review_neutral,3,59.47,8000,1.6901,0.0085,\n"
    assert added.loc[0, "seed"] == 3 and len(load_sweep(path)) == 43


def test_append_after_a_file_without_final_newline(tmp_path):
    path = write(tmp_path, HEADER + "\n" + GOOD)
    append_rows(path, [NEW])
    assert path.read_text().splitlines()[-2:] == [GOOD, "60M,review_neutral,3,59.47,8000,1.6901,0.0085,"]


def test_append_creates_a_missing_file_with_header(tmp_path):
    path = tmp_path / "new.csv"
    append_rows(path, [NEW])
    assert path.read_text().splitlines()[0] == HEADER
    assert len(load_sweep(path)) == 1


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"seed": 0}, "duplicate run"),
        ({"val_loss": float("inf")}, "column val_loss"),
        ({"params_M": 60.0}, "params_M must be the same"),
        ({"variant": "No pe"}, "column variant"),
    ],
)
def test_invalid_append_writes_nothing(change, fragment, published_copy):
    path = published_copy
    before = path.read_bytes()
    with pytest.raises(DataError, match=fragment.replace("(", r"\(")):
        append_rows(path, [{**NEW, **change}])
    assert path.read_bytes() == before


def test_append_to_an_invalid_file_refuses(tmp_path):
    path = write(tmp_path, HEADER + "\n60M,Bogus,0,59.47,8000,1.7,0.1,6.9\n")
    before = path.read_bytes()
    with pytest.raises(DataError, match="column variant"):
        append_rows(path, [NEW])
    assert path.read_bytes() == before


def test_an_extra_numeric_column_is_read_as_a_metric():
    rows = bundled_path().read_text().splitlines()
    text = "\n".join([rows[0] + ",accuracy", rows[1] + ",0.61", rows[2] + ","]) + "\n"
    df = read_sweep_text(text, "acc.csv")
    assert list(df.columns[-2:]) == ["minutes", "accuracy"] and df["accuracy"].dtype == "float64"
    assert df["accuracy"].iloc[0] == 0.61 and math.isnan(df["accuracy"].iloc[1])
    for header, cell in (("Accuracy", "0.61"), ("accuracy", "inf"), ("accuracy", "high")):
        with pytest.raises(DataError, match=f"column {header} - unknown column"):
            read_sweep_text("\n".join([rows[0] + "," + header, rows[1] + "," + cell]) + "\n", "acc.csv")


def test_writers_keep_extra_columns_and_append_in_the_files_own_column_order(tmp_path):
    """write_sweep keeps an extra measured column; append_rows writes each cell under its own header, in a
    file whose columns come in another order, and leaves the extra column empty for a row without it."""
    df = load_sweep().head(3).assign(arc_easy_acc=[0.25, np.nan, 0.3125])
    for exact in (False, True):
        path = tmp_path / f"w{exact}.csv"
        write_sweep(df, path, exact=exact)
        back = load_sweep(path)
        assert list(back.columns) == [*FIELDS, "arc_easy_acc"]
        assert back["arc_easy_acc"].tolist()[::2] == [0.25, 0.3125] and math.isnan(back["arc_easy_acc"][1])
    order = ["arc_easy_acc", "val_loss", "ece", "variant", "size", "seed", "params_M", "steps", "minutes"]
    path = tmp_path / "reordered.csv"
    path.write_text(",".join(order) + "\n0.5,1.7,0.9,standard,60M,0,59.47,8000,\n")
    append_rows(
        path,
        [{**NEW, "val_loss": 0.95, "ece": 0.01}, {**NEW, "seed": 9, "val_loss": 1.5, "arc_easy_acc": 0.75}],
    )
    rows = load_sweep(path)
    assert rows[["seed", "val_loss", "ece"]].values.tolist() == [
        [0, 1.7, 0.9],
        [NEW["seed"], 0.95, 0.01],
        [9, 1.5, NEW["ece"]],
    ]
    assert rows["arc_easy_acc"].tolist()[::2] == [0.5, 0.75] and math.isnan(rows["arc_easy_acc"][1])
    before = path.read_bytes()
    with pytest.raises(DataError, match="new row 1, column hellaswag_acc - the file has no such column"):
        append_rows(path, [{**NEW, "seed": 10, "hellaswag_acc": 0.5}])
    assert path.read_bytes() == before


def test_size_is_an_ordered_categorical_by_parameter_count(tmp_path):
    path = tmp_path / "s.csv"
    rows = [
        "1B,review_neutral,0,1010.5,6000,1.4,,",
        "60M,review_neutral,0,59.47,8000,1.7,,",
        "tiny,review_neutral,0,1.13,100,2.2,,",
        "150M,review_neutral,0,150.2,8000,1.6,,",
    ]
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    df = load_sweep(path)
    assert df["size"].tolist() == ["1B", "60M", "tiny", "150M"]  # rows keep the file's order
    assert df.sort_values("size")["size"].tolist() == ["tiny", "60M", "150M", "1B"]
    assert df.groupby("size", observed=True)["val_loss"].mean().index.tolist() == [
        "tiny",
        "60M",
        "150M",
        "1B",
    ]
    assert json.loads(df[["size"]].to_json(orient="records"))[0] == {"size": "1B"}


def test_a_users_own_ladder_sizes_and_unknown_labels_load_in_parameter_order(tmp_path):
    """The sizes of docs/extending/pilot.toml (labels rr's ladder does not hold) and a count past the published
    ladder load and sort by parameter count; a label's nominal count breaks a tie in parameters."""

    params = {"0.1M": 0.11, "3B": 2981.0, "0.03M": 0.031, "0.05M": 0.053, "7.5B": 2981.0}
    rows = [f"{s},standard,{seed},{p},60,{2.0 - p / 1e4:.4f},," for seed in (0, 1) for s, p in params.items()]
    path = tmp_path / "pilot.csv"
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    df = load_sweep(path)
    order = ["0.03M", "0.05M", "0.1M", "3B", "7.5B"]
    assert list(df["size"].cat.categories) == order == size_order(df) and df["size"].cat.ordered
    assert df.sort_values("size", kind="stable")["size"].unique().tolist() == order
    assert df["size"].tolist()[:5] == list(params)  # rows keep the file's order
    published = load_sweep()
    shuffled = published.sample(frac=1, random_state=3)
    by_params = shuffled.groupby("size", observed=True)["params_M"].mean().sort_values().index.tolist()
    assert (
        shuffled.sort_values("size")["size"].unique().tolist()
        == by_params
        == ["60M", "150M", "320M", "590M", "1B"]
    )
    out = rr("validate", str(path))
    assert out.exit_code == 0 and "5 sizes (0.03M, 0.05M, 0.1M, 3B, 7.5B)" in out.output, out.output


TOKENS_HEADER = HEADER + ",tokens"


def test_tokens_is_an_optional_integer_column_kept_by_the_writers(tmp_path):
    """Issue 44: the trainer may record each run's tokens; an empty cell means steps x the recipe's batch x
    block. Held as float64 (NaN where empty), written back as the integer it is."""
    text = f"{TOKENS_HEADER}\n{GOOD},131072000\n60M,highway,0,60.68,8000,1.698,0.0078,7.3,\n"
    df = load_sweep(write(tmp_path, text))
    assert df["tokens"].dtype == np.float64
    assert df["tokens"].iloc[0] == 131_072_000 and np.isnan(df["tokens"].iloc[1])
    for exact in (False, True):
        out = tmp_path / f"out{exact}.csv"
        write_sweep(df, out, exact=exact)
        lines = out.read_text().splitlines()
        assert lines[0].endswith(",tokens") and lines[1].endswith(",131072000") and lines[2].endswith(",")
        assert load_sweep(out)["tokens"].iloc[0] == 131_072_000


@pytest.mark.parametrize(
    ("cell", "rule"),
    [
        ("1.5e8", "is not an integer"),
        ("0", "must be an integer > 0 or empty (steps x the recipe's batch x block)"),
        ("-5", "must be an integer > 0 or empty"),
        ("nan", "is not an integer"),
    ],
)
def test_a_tokens_cell_that_is_not_a_positive_integer_is_refused(tmp_path, cell, rule):
    path = write(tmp_path, f"{TOKENS_HEADER}\n{GOOD},{cell}\n")
    with pytest.raises(DataError) as e:
        load_sweep(path)
    assert [str(p) for p in e.value.problems][0].startswith("line 2, column tokens")
    assert rule in str(e.value.problems[0])


BUDGETS = (
    "\n".join(
        [
            HEADER,
            "60M,review_neutral,0,59.47,2000,1.90,,",
            "60M,review_neutral,0,59.47,8000,1.70,,",
            "60M,highway,0,60.68,2000,1.91,,",
            "60M,highway,0,60.68,8000,1.71,,",
        ]
    )
    + "\n"
)


def test_a_run_at_several_step_counts_makes_a_file_of_several_budgets(tmp_path):
    """A (size, variant, seed) at two step counts: two runs, keyed by steps too; steps may then differ within
    a (size, variant)."""
    from rr_core.sweepfile.dataset import run_keys
    from rr_core.sweepfile.schema import record_key, run_stem, several_budgets

    df = load_sweep(write(tmp_path, BUDGETS))
    assert several_budgets(df) and len(df) == 4
    assert ("60M", "highway", 0, 2000) in run_keys(df) and len(run_keys(df)) == 4
    assert run_keys(load_sweep()) == {tuple(k) for k in load_sweep()[["size", "variant", "seed"]].values}
    assert run_stem("60M", "review_neutral", 0, steps=2000) == "60M-review_neutral-seed0-steps2000"
    assert run_stem("60M", "review_neutral", 0) == "60M-review_neutral-seed0"
    record = {"size": "60M", "variant": "highway", "seed": 0, "steps": 2000}
    assert record_key(record) == ("60M", "highway", 0)
    assert record_key({**record, "budget": 2000}) == ("60M", "highway", 0, 2000)
    twice = write(tmp_path, BUDGETS + "60M,highway,0,60.68,2000,1.92,,\n", "twice.csv")
    with pytest.raises(DataError) as e:
        load_sweep(twice)
    assert [str(p) for p in e.value.problems] == [
        f"line {n}, column size,variant,seed,steps: ('60M', 'highway', 0, 2000) - duplicate run: this "
        "(size, variant, seed, steps) appears more than once"
        for n in (4, 6)
    ]


def test_a_file_of_one_budget_keeps_the_rule_on_steps(tmp_path):
    """Two seeds of a (size, variant) at different steps, no run at two: the rule and its message as before."""
    text = f"{HEADER}\n{GOOD}\n60M,review_neutral,1,59.47,7000,1.69,,\n"
    with pytest.raises(DataError) as e:
        load_sweep(write(tmp_path, text))
    assert [str(p) for p in e.value.problems] == [
        "line 2, column steps: 8000 - steps must be the same in every row of a (size, variant)",
        "line 3, column steps: 7000 - steps must be the same in every row of a (size, variant)",
    ]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_second_header_line_is_named_as_files_joined_with_cat_and_rr_merge_is_suggested(
    tmp_path, published_copy, newline
):
    """Issue 49.10: two sweep files joined with `cat` gave a problem for each cell of the second header."""
    text = published_copy.read_text()
    joined = tmp_path / "joined.csv"
    joined.write_text(text + text.replace("\n", newline))
    lines = len(text.splitlines())
    result = rr("analyze", "--data", joined)
    assert result.exit_code == 2 and result.stderr == (
        f"rr: error: {joined}: line {lines + 1} is a second header line, as sweep files joined with cat have "
        "(each brings its own); join them with rr merge A.csv B.csv --out C.csv, which checks each file and "
        "carries their provenance records along\n"
    )
