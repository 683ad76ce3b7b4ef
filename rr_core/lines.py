"""What may stand in one line of a file rr writes for another program to read: no line break and no control
character. A user's value rendered into a Slurm job script (`#SBATCH --partition=VALUE`), a file name or a
path is checked here when it is given, so a newline can never end the line it belongs to and start a shell
command of its own (sbatch also stops reading `#SBATCH` lines at the first line that is not one, dropping
the time limit and the requeue signal after it).
"""

from __future__ import annotations

import unicodedata

from rr_core.errors import InputError

__all__ = ["line_problem", "check_line"]


def line_problem(text: str) -> str | None:
    """Why `text` cannot stand in one line: the first line break or control character in it, by its code
    point and place; None when it can.

    Example
    -------
    >>> line_problem("qos=high")
    >>> line_problem("qos=high\\nrm -rf ~")
    'a line break or control character (U+000A) at character 9'
    """
    for place, char in enumerate(text, 1):
        # Cc: C0 and C1 controls (\\n, \\r, \\t, ESC, NEL); Zl, Zp: the Unicode line and paragraph separators
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            return f"a line break or control character (U+{ord(char):04X}) at character {place}"
    return None


def check_line(value: str, option: str, where: str) -> str:
    """`value` as given, or an InputError naming `option`, the character and `where` the value would go."""
    if (problem := line_problem(value)) is not None:
        raise InputError(f"{option} {value!r}: {problem}; it would break the line it goes to in {where}")
    return value
