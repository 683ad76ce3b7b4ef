"""How rr's help reads: a flag shows no type, and command and choice names are read in any case.

typer 0.29 labels every option with its Python type in angle brackets; for a flag (`--ci`, `--dry-run`,
`--help`) that is `<bool>`, which says nothing a flag's name does not, so flags show none; an option
given once per value (`--variant`, `--sbatch`) reads `<str>...` (click's mark for "may repeat"), not
`<list[str]>`.
"""

from __future__ import annotations

import typer.core

# Passed as a Typer's context_settings: `rr plot Scaling`, `rr Validate` and `--stat MIXED` are read
# lower-cased, as rr's command and choice names are all written.
CASE_INSENSITIVE = {"token_normalize_func": str.lower}

_typed = typer.core.TyperOption.display_type_rich


def _flag_untyped(self: typer.core.TyperOption, ctx) -> str | None:
    if self.is_flag:
        return None
    shown = _typed(self, ctx)
    if shown and shown.startswith("<list[") and shown.endswith("]>"):
        return f"<{shown.removeprefix('<list[').removesuffix(']>')}>..."
    return shown


typer.core.TyperOption.display_type_rich = _flag_untyped
