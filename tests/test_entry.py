"""The console script builds the app for the command a command line names (`cli.main.asked`, `build`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from conftest import rr

from cli.main import COMMANDS, asked, build

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("args", "built"),
    [
        (["plot", "seeds", "--out", "s.png"], ["plot"]),
        (["SIZES"], ["sizes"]),  # the app matches commands without case
        (["sizes", "--help"], ["sizes"]),  # the command's own help
        (["--version", "eval"], ["eval"]),
        (["--help", "sizes"], None),  # the root's help lists every command
        (["-h"], None),
        (["plto"], None),  # a mistyped command: "did you mean" needs them all
        ([], None),
    ],
)
def test_a_command_line_names_the_one_command_to_build(args, built):
    assert asked(args) == built


def test_each_name_builds_the_command_of_that_name_and_all_of_them_build_the_whole_app():
    for name in COMMANDS:
        assert list(typer.main.get_command(build([name])).commands) == [name]
    whole = typer.main.get_command(build()).commands
    assert len(whole) == len(COMMANDS) and set(whole) == set(COMMANDS)


def test_the_console_script_imports_only_the_module_of_the_command_it_runs():
    code = (
        "import sys\n"
        "sys.argv = ['rr', 'sizes']\n"
        "from cli.main import COMMANDS, main\n"
        "try:\n    main()\n"
        "finally:\n"
        "    print('LOADED', sorted(m for m in COMMANDS.values() if 'cli.' + m in sys.modules))\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert got.returncode == 0, got.stderr
    table, _, loaded = got.stdout.rpartition("LOADED ")
    assert loaded.strip() == "['sizes']"
    assert table == rr("sizes").output  # what the whole app prints
