"""How rr's help reads: a flag shows no type, and command and choice names are read in any case.

typer labels every option with its Python type in angle brackets; for a flag (`--ci`, `--dry-run`,
`--help`) that is `<bool>`, which says nothing a flag's name does not, so flags show none; an option
given once per value (`--variant`, `--sbatch`) reads `<str>...` (click's mark for "may repeat"), not
`<list[str]>`. This is rr's own option class (`RrOption`, a subclass overriding the type label); rr's
command and group classes (`RrCommand`, `RrGroup`) hand it their options. `cli.main` builds the app with
`cls=RrGroup`, which takes in every command below it. Nothing of typer is replaced.
"""

from __future__ import annotations

from typer.core import TyperCommand, TyperGroup, TyperOption

__all__ = ["CASE_INSENSITIVE", "RrOption", "RrCommand", "RrGroup"]

# Passed as a Typer's context_settings: `rr plot Scaling`, `rr Validate` and `--stat MIXED` are read
# lower-cased, as rr's command and choice names are all written.
CASE_INSENSITIVE = {"token_normalize_func": str.lower}


class RrOption(TyperOption):
    """An option whose help shows no type for a flag and `<T>...` for a repeatable option."""

    def display_type_rich(self, ctx) -> str | None:
        if self.is_flag:
            return None
        shown = super().display_type_rich(ctx)
        if shown and shown.startswith("<list[") and shown.endswith("]>"):
            return f"<{shown.removeprefix('<list[').removesuffix(']>')}>..."
        return shown


def _rr_options(params: list) -> list:
    """The same parameters, each of typer's options made an `RrOption` (in place: parsing keeps them)."""
    for p in params:
        if type(p) is TyperOption:
            p.__class__ = RrOption
    return params


class RrCommand(TyperCommand):
    """A command whose options (its help option too, which click makes on demand) are `RrOption`s."""

    def get_params(self, ctx) -> list:
        return _rr_options(super().get_params(ctx))


class RrGroup(TyperGroup):
    """A group like `RrCommand`, which makes every command and group below it one of rr's."""

    def __init__(self, **attrs) -> None:
        super().__init__(**attrs)
        RrGroup._adopt(self)

    @staticmethod
    def _adopt(group: TyperGroup) -> None:
        for command in group.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = RrCommand
            elif type(command) is TyperGroup:
                command.__class__ = RrGroup
                RrGroup._adopt(command)

    def get_params(self, ctx) -> list:
        return _rr_options(super().get_params(ctx))
