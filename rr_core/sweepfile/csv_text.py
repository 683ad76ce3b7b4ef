"""The first stage of reading a sweep file: its bytes checked as UTF-8 text and cut into a header and
cells, every problem cited by line (`DataError`).

Kept apart from `rr_core.sweepfile.dataset` (typing, the schema, load, write, append) because it is a
tokenizer with rules of its own: quoted and plain CSV, ragged lines, a separator or decimal comma that is
not the file's, a byte-order mark, and what a spreadsheet saves instead of CSV text (a workbook, UTF-16
"Unicode text"), each refused saying what the file is and how to save it as rr reads it. Nothing here knows
what a column means.

A line with fewer cells than the header is a row cut short (a write torn by a killed writer or a full disk
on another tool; rr's own appends are whole, and start on a new line after such a tail): it is skipped
with a `rr_core.errors.Note` naming the line, so the file's other rows stay readable. A line with more
cells than the header is an error, as is every cell of a complete row that breaks a rule.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from rr_core.errors import Note, RRError
from rr_core.files.reading import Unreadable, read_open, read_regular
from rr_core.sweepfile.schema import COLUMNS, EXTRA_NAME, Problem, unknown_column

__all__ = [
    "DataError",
]


FIELDS: list[str] = [c.name for c in COLUMNS]
_BLANK = b" \t\r\x0b\x0c,"  # a line of only these is blank (no cell has a value)


class DataError(RRError, ValueError):
    """A sweep file that cannot be used, with every problem found in it."""

    def __init__(self, path: str | os.PathLike | None, problems: list[Problem]):
        self.path = str(path) if path is not None else "<data>"
        self.problems = problems
        super().__init__(self.message())

    def message(self, limit: int = 50) -> str:
        n = len(self.problems)
        head = f"{self.path}: {n} problem{'s' if n != 1 else ''} found"
        if n == 1 and self.problems[0].line is None and self.problems[0].column is None:
            return f"{self.path}: {self.problems[0].rule}"
        lines = [f"  {p}" for p in self.problems[:limit]]
        if n > limit:
            lines.append(f"  ... and {n - limit} more")
        return "\n".join([head + ":", *lines])


def file_problem(path, rule: str) -> DataError:
    return DataError(path, [Problem(None, None, None, rule)])


def read_bytes(path: Path, fd: int | None = None) -> bytes:
    """The bytes of the sweep file `path`, or of the file open as `fd` (a writer's, under its lock: the file
    is not opened again), refused as a `DataError` naming the file where it is not a regular file."""
    if fd is None and not path.exists():
        raise file_problem(path, "no such file")
    if fd is None and path.is_dir():
        raise file_problem(path, "is a directory, not a CSV file")
    try:
        return read_regular(path) if fd is None else read_open(fd, path)
    except Unreadable as e:
        raise file_problem(path, e.rule) from None


_WORKBOOK = (
    "rr reads CSV text: export the sheet as CSV (Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'; "
    "LibreOffice: File > Save As > 'Text CSV'), or in Python pd.read_excel(path).to_csv(new_path, index=False)"
)
_SIGNATURES = (  # a file's first bytes -> what it is, for files a spreadsheet saves in a format of its own
    (
        b"PK\x03\x04",
        "is a zip archive, not CSV text: an Excel workbook (.xlsx) or an OpenDocument sheet (.ods) is one",
    ),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "is an Excel 97-2003 workbook (.xls), not CSV text"),
)
_WIDE = (  # byte-order marks of text in a wider encoding than UTF-8 (UTF-32's first: FF FE 00 00 starts FF FE)
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _not_text(raw: bytes) -> str | None:
    """What a file is that is not UTF-8 text but a spreadsheet saves (a workbook, or "Unicode text": UTF-16),
    told by its first bytes, with what to do; None for anything else.

    UTF-16 without a byte-order mark is told by its NULs: ASCII text in it has a NUL in every other byte.
    """
    for magic, what in _SIGNATURES:
        if raw.startswith(magic):
            return f"{what}; {_WORKBOOK}"
    codec = next((c for bom, c in _WIDE if raw.startswith(bom)), None)
    head = raw[:4096] if len(raw) % 2 == 0 else b""
    if codec is None and b"\x00" in head:
        odd, even = head[1::2].count(0), head[0::2].count(0)
        if max(odd, even) > 0.9 * len(head) / 2 and min(odd, even) == 0:
            codec = "utf-16-le" if odd > even else "utf-16-be"
    if codec is None:
        return None
    try:
        raw.decode(codec)
    except UnicodeDecodeError:
        return None
    kind = codec.upper().removesuffix("-LE").removesuffix("-BE")
    how = (
        "as Excel's 'Unicode Text' saves it" if codec in ("utf-16", "utf-32") else "without a byte-order mark"
    )
    return (
        f"is {kind} text ({how}), not UTF-8: rr reads UTF-8, so save it "
        f"as UTF-8 (Excel: 'CSV UTF-8 (Comma delimited)'; a text editor: encoding UTF-8), or in Python "
        f"open(new_path, 'w', encoding='utf-8').write(open(path, encoding='{codec}').read())"
    )


def _check_text(raw: bytes, path) -> bytes:
    """`raw` without a UTF-8 byte-order mark (tolerated), once it is known to be non-empty UTF-8 text (a
    workbook or UTF-16 text is refused first, naming what it is: `_not_text`)."""
    if (what := _not_text(raw)) is not None:
        raise file_problem(path, what)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DataError(
            path, [Problem(line, None, raw[e.start : e.start + 1].hex(), "not UTF-8 text (byte 0x.. above)")]
        ) from None
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if not raw.strip():
        raise file_problem(path, "is empty; expected a header line: " + ",".join(FIELDS))
    if b"\x00" in raw:
        raise file_problem(path, "is not a CSV text file (it contains NUL bytes)")
    return raw


def _ragged(line: int, fields: int, header: list[str]) -> Problem:
    return Problem(line, None, None, f"has {fields} fields, the header has {len(header)}")


def _torn(path, line: int, fields: int, header: list[str]) -> None:
    """Say that a line with fewer cells than the header, a row cut short, is skipped."""
    warnings.warn(
        Note(
            f"{path}: line {line} has {fields} of the header's {len(header)} cells, a row cut short (a write "
            "that was interrupted): skipped; complete it if it is a row typed by hand"
        ),
        stacklevel=4,
    )


Cells = tuple[
    list[str], dict[str, pa.ChunkedArray], np.ndarray
]  # header, each column's cells, each row's line


def _split_plain(raw: bytes, path) -> Cells:
    """The cells of a file without quotes or bare carriage returns, where each record is one line.

    Lines are found here, so each row keeps its line number; pyarrow then splits the fields in C and holds
    the cells as Arrow strings, not one Python object each (10^6 rows: ~0.3 GiB, not over 1 GiB).
    """
    lines = raw.split(b"\n")
    kept = [i for i, line in enumerate(lines) if line.strip(_BLANK)]  # blank lines are tolerated
    header = [c.decode().strip() for c in lines[kept[0]].split(b",")]
    _check_header(header, path, raw)
    rows = np.array(kept[1:], dtype=np.int64)
    fields = np.fromiter((lines[i].count(b",") + 1 for i in kept[1:]), np.int64, len(rows))
    for i, n in zip(rows[fields < len(header)], fields[fields < len(header)], strict=True):
        _torn(path, int(i) + 1, int(n), header)
    ragged = fields > len(header)
    problems = [
        _ragged(int(i) + 1, int(n), header) for i, n in zip(rows[ragged], fields[ragged], strict=True)
    ]
    rows = rows[fields == len(header)]
    _check_rows(len(rows), problems, path)
    body = b"\n".join([lines[i] for i in rows])
    del lines
    names = [f"c{j}" for j in range(len(header))]  # header names are checked above, not parsed again
    table = pacsv.read_csv(
        io.BytesIO(body),
        read_options=pacsv.ReadOptions(column_names=names),
        parse_options=pacsv.ParseOptions(quote_char=False, ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
        ),
    )
    return dict(zip(header, table.columns, strict=True)), rows + 1


def _split_quoted(raw: bytes, path) -> Cells:
    """The cells of any CSV text, quoted fields included, through the csv module (small, hand-edited files)."""
    reader = csv.reader(io.StringIO(raw.decode("utf-8"), newline=""))
    header: list[str] | None = None
    rows, lines, problems = [], [], []
    try:
        for record in reader:
            cells = list(map(str.strip, record))
            if not any(cells):
                continue  # blank lines are tolerated
            if header is None:
                header = cells
                _check_header(header, path, raw)
            elif len(cells) < len(header) and not any("\n" in c for c in record):  # not a quote left open
                _torn(path, reader.line_num, len(cells), header)
            elif len(cells) != len(header):
                problems.append(_ragged(reader.line_num, len(cells), header))
            else:
                rows.append(cells)
                lines.append(reader.line_num)
    except csv.Error as e:
        raise file_problem(path, f"is not valid CSV (line {reader.line_num}: {e})") from None
    _check_rows(len(rows), problems, path)
    columns = {name: pa.chunked_array([[r[j] for r in rows]], pa.string()) for j, name in enumerate(header)}
    return columns, np.array(lines, dtype=np.int64)


def _check_rows(n: int, problems: list[Problem], path) -> None:
    if not n and not problems:
        raise file_problem(path, "has a header but no data rows")
    if problems:
        raise DataError(path, problems)


def _check_header(header: list[str], path, raw: bytes = b"") -> None:
    seen, dupes = set(), []
    for name in header:
        if name in seen and name not in dupes:
            dupes.append(name)
        seen.add(name)
    if (hint := _separator_hint(header, raw)) is not None:
        raise file_problem(path, hint)
    if not seen & set(FIELDS):
        shown = ",".join(header)[:80]
        raise file_problem(
            path,
            f"does not look like a sweep CSV: the first line {shown!r} has none of the columns {','.join(FIELDS)}",
        )
    problems = [Problem(1, d, None, "column name appears more than once in the header") for d in dupes]
    problems += [Problem(1, m, None, "required column is missing") for m in FIELDS if m not in seen]
    problems += [
        Problem(1, x, None, unknown_column(x, header))
        for x in header
        if x not in FIELDS and not EXTRA_NAME.fullmatch(x)
    ]
    if problems:
        raise DataError(path, problems)


_SEPARATORS = {";": "';'", "\t": "tabs", "|": "'|'"}
DECIMAL_COMMA = re.compile(rb"(?<![\d.])\d+,\d+(?![\d.])")  # 1,7016 in a ';'-separated line


def _separator_hint(header: list[str], raw: bytes) -> str | None:
    """Why a header split on ',' lacks the columns, when another separator would give them (as Excel writes
    CSV where the decimal separator is a comma): the separator, and the decimal commas if the rows have any."""
    line = ",".join(header)
    for sep, name in _SEPARATORS.items():
        cells = {c.strip() for c in line.split(sep)}
        if len(cells) > 1 and len(cells & set(FIELDS)) > len(set(header) & set(FIELDS)):
            comma = DECIMAL_COMMA.search(raw.split(b"\n", 1)[-1])
            found = f" and its numbers have decimal commas (e.g. {comma.group().decode()!r})" if comma else ""
            read = f"sep={sep!r}" + (", decimal=','" if comma else "")
            return (
                f"is separated by {name}, not ',' (as Excel saves CSV where the decimal separator is a comma)"
                f"{found}; rr reads ',' between cells and '.' in numbers: save it so, e.g. in Python "
                f"pd.read_csv(path, {read}).to_csv(new_path, index=False)"
            )
    return None


# A line of column names only, among them size, variant and seed: a header (no row's cells are these words).
_HEADER_LINE = re.compile(
    rb"(?=[^\n]*\bsize\b)(?=[^\n]*\bseed\b)[A-Za-z0-9_,\" \t\r]*\bvariant\b[A-Za-z0-9_,\" \t\r]*"
)


def _check_one_header(raw: bytes, path) -> None:
    """Refuse a file with a second header line, as sweep files joined with ``cat`` have (each brings its own),
    in one line saying so and how to join them, rather than a problem for each of its cells. Only the lines
    holding the word ``variant`` past the first are tried (a search in C: no Python per line)."""
    at = raw.find(b"variant")
    while (at := raw.find(b"variant", at + 1)) != -1:
        start = raw.rfind(b"\n", 0, at) + 1
        end = raw.find(b"\n", at)
        if _HEADER_LINE.fullmatch(raw, start, len(raw) if end == -1 else end):
            line = raw.count(b"\n", 0, start) + 1
            raise file_problem(
                path,
                f"line {line} is a second header line, as sweep files joined with cat "
                "have (each brings its own); join them with rr merge A.csv B.csv --out C.csv, which checks each "
                "file and carries their provenance records along",
            )
        at = len(raw) if end == -1 else end


def split_cells(raw: bytes, path) -> Cells:
    raw = _check_text(raw, path)
    _check_one_header(raw, path)
    if b'"' in raw or raw.count(b"\r") != raw.count(b"\r\n"):
        return _split_quoted(raw, path)
    return _split_plain(raw, path)
