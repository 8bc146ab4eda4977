"""docs/cli.md ends with every command's every option, as the command line defines them.

When an option is added or changed, write the reference again:

    .venv/bin/python tests/test_cli_reference.py --write
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from typer.main import get_command

from safeshare.cli import app

CLI_MD = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BEGIN = "<!-- every option: written by tests/test_cli_reference.py --write -->"
END = "<!-- end of every option -->"


def _commands(command: Any, path: list[str]) -> list[tuple[str, Any]]:
    """Every leaf command under ``command`` (Typer's click, which it may vendor), by name."""
    if hasattr(command, "commands"):
        found: list[tuple[str, Any]] = []
        for name in sorted(command.commands):
            found += _commands(command.commands[name], [*path, name])
        return found
    return [(" ".join(path), command)]


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def reference() -> str:
    """The reference: one table of options per command, from the Typer definitions."""
    lines = [BEGIN, "", "## Every option", ""]
    for name, command in _commands(get_command(app), []):
        params = command.params
        options = [p for p in params if p.param_type_name == "option" and p.name != "help"]
        arguments = [str(p.name).upper() for p in params if p.param_type_name == "argument"]
        lines += [f"### `safeshare {name}{''.join(' ' + a for a in arguments)}`", ""]
        if not options:
            lines += ["No options.", ""]
            continue
        lines += ["| option | default | meaning |", "|---|---|---|"]
        for option in options:
            flags = " / ".join(f"`{flag}`" for flag in [*option.opts, *option.secondary_opts])
            default = "required" if option.required else option.default
            default = (
                "off" if default is False else "none" if default in (None, (), []) else default
            )
            lines.append(f"| {flags} | {_cell(default)} | {_cell(option.help or '')} |")
        lines.append("")
    return "\n".join([*lines, END]) + "\n"


def test_cli_md_lists_every_option_as_the_command_line_defines_it():
    text = CLI_MD.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "run: python tests/test_cli_reference.py --write"
    written = text[text.index(BEGIN) : text.index(END) + len(END)] + "\n"
    assert written == reference(), (
        "the reference is stale: python tests/test_cli_reference.py --write"
    )


if __name__ == "__main__" and "--write" in sys.argv:
    text = CLI_MD.read_text(encoding="utf-8")
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + text[text.index(END) + len(END) + 1 :]
    CLI_MD.write_text(text.rstrip("\n") + "\n\n" + reference(), encoding="utf-8")
