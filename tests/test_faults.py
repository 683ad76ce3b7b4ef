"""Bad input and the published reference copy: every refusal names the rule and the spelling to use."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from conftest import rr

from rr_core.sweepfile import dataset
from rr_core.sweepfile.csv_text import FIELDS, DataError
from rr_core.sweepfile.dataset import append_rows, bundled_path, load_sweep, write_sweep

HEADER = ",".join(FIELDS)
ROW = "60M,review_neutral,{seed},59.47,8000,1.7016,0.0087,6.9"
NEW = {
    "size": "60M",
    "variant": "review_neutral",
    "seed": 3,
    "params_M": 59.47,
    "steps": 8000,
    "val_loss": 1.69,
}


def problems_of(tmp_path, *rows: str) -> str:
    path = tmp_path / "s.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_sweep(path)
    return str(err.value)


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """A stand-in for the installed reference copy, so links to it can be made on the same filesystem."""
    ref = tmp_path / "installed" / "scaling_v8.csv"
    ref.parent.mkdir()
    shutil.copy(bundled_path(), ref)
    monkeypatch.setattr(dataset, "bundled_path", lambda: ref)
    return ref


@pytest.mark.parametrize("how", ["itself", "hard link", "symlink"])
def test_the_reference_copy_is_refused_under_any_name(tmp_path, reference, how):
    path = {"itself": reference, "hard link": tmp_path / "h.csv", "symlink": tmp_path / "s.csv"}[how]
    if how == "hard link":
        os.link(reference, path)
    elif how == "symlink":
        path.symlink_to(reference)
    before = reference.read_bytes()
    with pytest.raises(DataError, match="is the reference copy of the published sweep installed with rr"):
        append_rows(path, [NEW])
    with pytest.raises(DataError, match="never writes"):
        write_sweep(load_sweep(), path)
    assert reference.read_bytes() == before


def test_an_edited_reference_copy_is_an_error_naming_the_installed_file(reference):
    reference.write_text(reference.read_text().replace(",1.698,", ",1.598,"))
    with pytest.raises(DataError) as err:
        load_sweep()
    assert str(err.value) == (
        f"{reference}: is the installed reference copy of the published sweep, and it does not match its "
        "pinned digest (it was edited or damaged); reinstall rr-toolkit to restore it"
    )


@pytest.mark.parametrize(
    "label, shown, canonical",
    [("６０M", "'\\uff16\\uff10M'", "60M"), ("٦٠M", "'\\u0666\\u0660M'", "60M"), ("60.0M", "'60.0M'", "60M")],
)
def test_a_second_spelling_of_a_size_is_refused_naming_the_canonical_one(tmp_path, label, shown, canonical):
    message = problems_of(tmp_path, ROW.format(seed=0).replace("60M", label, 1))
    assert (
        f"line 2, column size: {shown} - is another spelling of the size {canonical}; write it {canonical}"
        in (message)
    )


def test_a_zero_size_is_refused(tmp_path):
    message = problems_of(tmp_path, ROW.format(seed=0).replace("60M", "0M", 1))
    assert (
        "column size: '0M' - must be a ladder size or a <number><K|M|B> label in ASCII digits, greater"
        in (message)
    )


@pytest.mark.parametrize("seed", ["abc", "0x10", "1_000", "1e1", "1.0", "٣"])
def test_a_seed_that_is_not_plain_digits_is_not_an_integer(tmp_path, seed):
    message = problems_of(tmp_path, ROW.format(seed=0), ROW.format(seed=seed))
    assert f"line 3, column seed: {ascii(seed)} - is not an integer" in message
    assert "duplicate" not in message


def test_a_row_with_an_unparsed_cell_still_has_its_other_cells_checked(tmp_path):
    message = problems_of(tmp_path, ROW.format(seed=0), "60M,h\u0456ghway,1e1,59.47,8000,1.7,,")
    lines = message.splitlines()
    assert len(lines) == 3 and lines[1] == "  line 3, column seed: '1e1' - is not an integer"
    assert lines[2].startswith("  line 3, column variant: 'h\\u0456ghway' - must be a variant name")


def test_any_ascii_variant_name_is_open_and_look_alikes_are_refused_naming_the_registered_one(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(f"{HEADER}\n{ROW.format(seed=0).replace('review_neutral', 'myrule')}\n")
    assert load_sweep(path)["variant"].tolist() == ["myrule"]
    rows = [ROW.format(seed=0).replace("review_neutral", v) for v in ("Highway", "high way", "h\u0456ghway")]
    message = problems_of(tmp_path, *rows)
    for line, shown in zip((2, 3, 4), ("'Highway'", "'high way'", "'h\\u0456ghway'"), strict=True):
        assert f"line {line}, column variant: {shown} - must be a variant name: a lower-case ASCII" in message
    assert message.count("(did you mean highway?)") == 3
    assert "must be a variant name" in problems_of(
        tmp_path, ROW.format(seed=0).replace("review_neutral", "a" * 41)
    )


def test_seeds_beyond_int64_are_refused_and_the_largest_is_kept_exactly(tmp_path):
    message = problems_of(tmp_path, ROW.format(seed=2**63), ROW.format(seed=10**30))
    assert (
        "line 2, column seed: '9223372036854775808' - is too large: an integer must be below 2^63" in message
    )
    assert "line 3, column seed: '1" + "0" * 30 + "' - is too large" in message
    path = tmp_path / "ok.csv"
    path.write_text(HEADER + "\n" + ROW.format(seed=2**63 - 1) + "\n")
    assert load_sweep(path)["seed"].tolist() == [2**63 - 1]


def test_messages_show_plain_values_and_escape_look_alike_text(tmp_path):
    message = problems_of(
        tmp_path,
        ROW.format(seed=0),
        ROW.format(seed=0).replace("1.7016", "1.7"),
        "60M,h\u0456ghway,0,60.68,8000,1.698,,",
        "60M,highway,1,1e8,8000,1.698,,",
    )
    assert "np." not in message
    assert "line 2, column size,variant,seed: ('60M', 'review_neutral', 0) - duplicate run" in message
    assert "line 4, column variant: 'h\\u0456ghway' - must be a variant name" in message
    assert "line 5, column params_M: 100000000.0 - must be a number > 0 and at most 1e+07" in message


def test_a_refused_append_cites_the_existing_line_and_the_new_row(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(HEADER + "\n" + ROW.format(seed=3) + "\n")
    before = path.read_bytes()
    with pytest.raises(DataError) as err:
        append_rows(path, [NEW, {**NEW, "seed": 4, "val_loss": 25.0}])
    assert str(err.value).splitlines()[1:] == [
        "  line 2, column size,variant,seed: ('60M', 'review_neutral', 3) - duplicate run: this (size, variant, "
        "seed) appears more than once",
        "  new row 1, column size,variant,seed: ('60M', 'review_neutral', 3) - duplicate run: this (size, "
        "variant, seed) appears more than once",
        "  new row 2, column val_loss: 25.0 - must be a finite number in (0, 20)",
    ]
    assert path.read_bytes() == before


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_reading_a_non_regular_file_is_refused_before_reading(tmp_path, make):
    path = tmp_path / "data.csv"
    if make == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(DataError, match="not a regular file"):
        load_sweep(path)
    with pytest.raises(DataError, match="not a regular file"):
        append_rows(path, [NEW])


OWN = HEADER + "\ntiny,standard,0,1.13,100,2.2261,0.0296,0.3\n"
RECORD = (
    '{"config": {"precision": "tf32"}, "ended": "e", "environment": {"device_name": "cpu", "git_commit": "c", '
    '"toolkit": "0.1"}, "result": {"ece": 0.0296, "val_loss": 2.2261}, "run_id": "r", "seed": 0, '
    '"size": "tiny", "started": "s", "status": "ok", "variant": "standard"}'
)


@pytest.mark.parametrize(
    "sidecar, message",
    [
        (RECORD.replace('"run_id": "r", ', "") + "\n", "the run record of (tiny, standard, 0) is incomplete"),
        ("[1, 2]\n", "line 1 is not a JSON object but list"),
    ],
    ids=["incomplete", "not-an-object"],
)
def test_an_incomplete_or_edited_sidecar_is_one_error_line(tmp_path, sidecar, message):

    path = tmp_path / "own.csv"
    path.write_text(OWN)
    (tmp_path / "own.runs.jsonl").write_text(sidecar)
    result = rr("validate", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"rr: error: {tmp_path / 'own.runs.jsonl'}: ")
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_read_only_filesystem_is_one_error_line(tmp_path, monkeypatch):
    from rr_core.files import synced as files

    os_open = os.open

    def read_only(path, *args, **kwargs):  # the test's folder is read-only; everything else opens as ever
        if Path(path).resolve().parent == tmp_path.resolve():
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return os_open(path, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", read_only)
    monkeypatch.chdir(tmp_path)
    result = rr("plot", "scaling", "-o", "s.png", "--dpi", "20")
    assert result.exit_code == 2
    assert result.stderr == "rr: error: cannot write s.png: Read-only file system\n"
    assert list(tmp_path.iterdir()) == []


def test_only_rr_errors_become_exit_2_and_a_bug_keeps_its_traceback():
    import typer

    from cli.errors import known_errors
    from rr_core.errors import InputError

    with pytest.raises(typer.Exit) as done, known_errors():
        raise InputError("a bad option")
    assert done.value.exit_code == 2
    for bug in (ValueError("a bug"), KeyError("a bug")):
        with pytest.raises(type(bug)), known_errors():
            raise bug


def test_an_excel_csv_is_told_its_separator_and_decimal_comma(tmp_path):
    path = tmp_path / "excel.csv"
    rows = [HEADER.replace(",", ";"), "60M;review_neutral;0;59,47;8000;1,7016;0,0087;6,9"]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(rows).encode() + b"\r\n")
    with pytest.raises(DataError) as err:
        load_sweep(path)
    assert str(err.value).startswith(
        f"{path}: is separated by ';', not ',' (as Excel saves CSV where the decimal separator is a comma) "
        "and its numbers have decimal commas (e.g. '59,47'); rr reads ',' between cells and '.' in numbers"
    )
    path.write_text(HEADER.replace(",", "\t") + "\n" + ROW.format(seed=0).replace(",", "\t") + "\n")
    with pytest.raises(DataError, match="is separated by tabs, not ','.*sep='\\\\t'\\)"):
        load_sweep(path)


def test_a_decimal_comma_in_a_quoted_cell_is_named(tmp_path):
    message = problems_of(tmp_path, '60M,review_neutral,0,59.47,8000,"1,7016",0.0087,6.9')
    assert (
        "line 2, column val_loss: '1,7016' - is not a number: it has a decimal comma; write 1.7016" in message
    )
