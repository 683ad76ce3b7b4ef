"""A grid of strings drawn as aligned text, Markdown, LaTeX (booktabs) or CSV, with the one LaTeX escaper.

The analysis tables (`rr_analysis.tables.render`) and the command line's records (`cli.records`: `rr sizes`,
`rr depth-check`, `rr gates`, the train and sweep summaries) both draw through here, so a table looks the
same whichever command prints it. Standard library only: importing it loads no pandas, and the commands
that print records stay light. What goes in the cells (number formats, which columns) is the caller's.

A grid is a header (one string per column; ``"\\n"`` splits a text header over lines), rows of cell
strings (``"\\n"`` splits a text cell over lines too), and which columns are right-aligned (numbers).
Text alone is fitted to a terminal: `wrap_columns` wraps the prose columns of a grid at spaces; Markdown,
LaTeX and CSV are never wrapped (a line break there is the reader's).
"""

from __future__ import annotations

import csv
import io
import textwrap
from collections.abc import Sequence

__all__ = [
    "FORMATS",
    "WRAP_MIN",
    "latex_escape",
    "text_lines",
    "widths",
    "wrap_columns",
    "markdown_lines",
    "latex_lines",
    "csv_text",
]

# Every format a table or a command's records print in: text, the two to paste, the two machine formats (JSON
# is the caller's: a view's machine columns, or records as they are).
FORMATS: tuple[str, ...] = ("text", "markdown", "latex", "csv", "json")
WRAP_MIN = 24  # a wrapped prose column keeps at least this many characters a line (or its header's width)

# LaTeX's ten special characters, `<` and `>`, which text-mode LaTeX (OT1) prints as inverted ! and ?, and the
# dagger, which needs no package as a command.
_LATEX = (
    {c: "\\" + c for c in "&%$#_{}"}
    | {
        "~": r"\textasciitilde{}",
        "^": r"\^{}",
        "\\": r"\textbackslash{}",
        "<": r"$<$",
        ">": r"$>$",
        "\u2020": r"\textdagger{}",  # the mark of a gap between arms of unequal size (`rr_analysis.tables.columns`)
    }
)


def latex_escape(s: str) -> str:
    r"""`s` with every character LaTeX treats specially written so that it prints as itself.

    One pass over the characters, so the escapes' own backslashes and braces are never escaped again.

    Examples
    --------
    >>> print(latex_escape(r"p < 0.05 & 5% of $x_1 {a} ~b^2 \n #3"))
    p $<$ 0.05 \& 5\% of \$x\_1 \{a\} \textasciitilde{}b\^{}2 \textbackslash{}n \#3
    """
    return "".join(_LATEX.get(c, c) for c in s)


def text_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """The header, a rule and the rows as aligned plain text: columns two spaces apart, no trailing blanks.

    A header of several lines is aligned at its last line; a cell of several lines takes that many lines,
    its neighbours blank below their first. Plain text pipes and greps cleanly and costs nothing to draw.

    Examples
    --------
    >>> print("\\n".join(text_lines(["size", "mean\\nloss"], [["60M", "1.7"], ["1B", "1.55"]], [False, True])))
          mean
    size  loss
    ----  ----
    60M    1.7
    1B    1.55
    """
    split = [[c.split("\n") for c in row] for row in [header, *rows]]
    drawn = widths(header, rows)

    def physical(cells: list[list[str]], top: bool) -> list[str]:
        depth = max(map(len, cells), default=1)
        padded = [c + [""] * (depth - len(c)) if top else [""] * (depth - len(c)) + c for c in cells]
        return [
            "  ".join(
                c[k].rjust(w) if r else c[k].ljust(w) for c, w, r in zip(padded, drawn, right, strict=True)
            ).rstrip()
            for k in range(depth)
        ]

    rule = "  ".join("-" * w for w in drawn)
    return [
        *physical(split[0], top=False),
        rule,
        *(line for row in split[1:] for line in physical(row, top=True)),
    ]


def widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """The width of each column of a text grid: its widest line, header included.

    Examples
    --------
    >>> widths(["size", "mean\\nloss"], [["60M", "1.7"], ["1B", "1.5500"]])
    [4, 6]
    """
    return [
        max(len(line) for row in [header, *rows] for line in row[i].split("\n")) for i in range(len(header))
    ]


def wrap_columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], wrap: Sequence[bool], width: int
) -> list[list[str]]:
    """`rows` with the cells of the columns marked in `wrap` wrapped at spaces so that `text_lines` draws them
    at most `width` wide, where that can be done: the widest wrappable column narrows first, none below
    `WRAP_MIN` characters or its header's width; the other columns are left as they are.

    Examples
    --------
    >>> rows = wrap_columns(["kind", "note"], [["fewer_seeds", "320M has 2 seeds, the others 3"]], [False, True], 40)
    >>> print("\\n".join(text_lines(["kind", "note"], rows, [False, False])))
    kind         note
    -----------  ---------------------
    fewer_seeds  320M has 2 seeds, the
                 others 3
    """
    natural = widths(header, rows)
    target = list(natural)
    least = {i: max(WRAP_MIN, *map(len, header[i].split("\n"))) for i, w in enumerate(wrap) if w}
    while (over := sum(target) + 2 * (len(target) - 1) - width) > 0:
        narrowable = [i for i in least if target[i] > least[i]]
        if not narrowable:
            break
        i = max(narrowable, key=lambda i: (target[i], -i))
        target[i] = max(least[i], target[i] - over)
    return [
        [
            "\n".join(
                w
                for line in c.split("\n")
                for w in textwrap.wrap(line, target[i], break_on_hyphens=False) or [""]
            )
            if target[i] < natural[i]
            else c
            for i, c in enumerate(row)
        ]
        for row in rows
    ]


def markdown_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """A GitHub Markdown table: `|` in a cell escaped, line breaks as spaces, numbers right-aligned.

    Examples
    --------
    >>> print("\\n".join(markdown_lines(["a|b", "n"], [["x", "1"]], [False, True])))
    | a\\|b | n |
    |---|---:|
    | x | 1 |
    """

    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("\n", " ").replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join("---:" if r else "---" for r in right) + "|"
    return [row(header), rule, *map(row, rows)]


def latex_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    r"""A booktabs tabular, every header and cell through `latex_escape`, line breaks as spaces.

    Examples
    --------
    >>> print("\n".join(latex_lines(["size", "p"], [["1B", "<0.0001"]], [False, True])))
    \begin{tabular}{lr}
    \toprule
    size & p \\
    \midrule
    1B & $<$0.0001 \\
    \bottomrule
    \end{tabular}
    """

    def row(cells: Sequence[str]) -> str:
        return " & ".join(latex_escape(c.replace("\n", " ")) for c in cells) + r" \\"

    spec = "".join("r" if r else "l" for r in right)
    return [
        f"\\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        row(header),
        r"\midrule",
        *map(row, rows),
        r"\bottomrule",
        r"\end{tabular}",
    ]


def csv_text(columns: Sequence[str], records: Sequence[dict]) -> str:
    """Records as CSV with a header line: raw values (None empty), quoted only where needed, "\\n" lines.

    Examples
    --------
    >>> print(csv_text(["size", "note"], [{"size": "1B", "note": "a, b"}, {"size": "60M", "note": None}]), end="")
    size,note
    1B,"a, b"
    60M,
    """
    out = io.StringIO()
    writer = csv.DictWriter(out, list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()
