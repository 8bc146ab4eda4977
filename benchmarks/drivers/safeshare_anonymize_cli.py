"""Benchmark driver: a cold ``safeshare anonymize DATA --config C --out O`` process.

Runs the anonymize command function through a Typer app exactly as the ``safeshare`` script
does once the command is registered: parse, read, anonymize, write anonymized.csv, card.json
and report.html.
"""

from __future__ import annotations

import sys

import typer

from safeshare.cli.anonymize import anonymize_command


def main() -> None:
    app = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    app.command("anonymize")(anonymize_command)
    app.command("version")(lambda: None)  # two commands: the name is given as on the real CLI
    app(sys.argv[1:])


if __name__ == "__main__":
    main()
