"""cli/: the ``safeshare`` command. Thin: parse, call the library, print.

Every error a user can cause ends as one line on stderr and exit code 2;
nothing is half-written.
"""

from __future__ import annotations

import sys

import typer

from safeshare.cli._output import PROGRESS_MODES, error, show_progress
from safeshare.cli.anonymize import anonymize_command
from safeshare.cli.audit import audit_command
from safeshare.cli.demo import demo
from safeshare.cli.evaluate import evaluate_command
from safeshare.cli.ledger import ledger_app
from safeshare.cli.obfuscate import obfuscate_app
from safeshare.cli.pac import pac_command
from safeshare.cli.plan import plan_command
from safeshare.cli.release import release_command
from safeshare.cli.risk import risk_command
from safeshare.cli.train import train_command
from safeshare.errors import InputError, SafeshareError

app = typer.Typer(
    name="safeshare",
    help="Turn sensitive tables into artifacts that are safe to share, and measure how safe they are.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("release")(release_command)
app.command(
    "synthesize",
    help="Release DP synthetic data (the release pipeline with a synthesizer: --method mst or aim).",
)(release_command)
app.command("demo")(demo)
app.command("anonymize")(anonymize_command)
app.command("evaluate")(evaluate_command)
app.command("risk")(risk_command)
app.command("pac")(pac_command)
app.command("plan")(plan_command)
app.command("train")(train_command)
app.command("audit")(audit_command)
app.add_typer(ledger_app, name="ledger")
app.add_typer(obfuscate_app, name="obfuscate")


def _print_version(value: bool) -> None:
    if value:
        from safeshare import __version__

        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
    progress: str = typer.Option(
        "auto",
        "--progress",
        help="auto: a bar on a terminal, nothing when piped; lines: a plain line per step on "
        "stderr (for logs; they come before an error line); none.",
    ),
) -> None:
    """Turn sensitive tables into artifacts that are safe to share, and measure how safe they are."""
    if progress not in PROGRESS_MODES:
        raise InputError(f"--progress {progress!r} is unknown; use one of {list(PROGRESS_MODES)}")
    show_progress(progress)


INTERRUPTED = 130  # the exit code of a run stopped by Ctrl-C (128 + SIGINT)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``safeshare`` script; returns the exit code."""
    try:
        result = app(args=argv, standalone_mode=False)
    except SafeshareError as err:
        error(str(err))
        return 2
    except KeyboardInterrupt:
        error("interrupted; nothing was written")
        return INTERRUPTED
    except MemoryError:  # before any spend, or in a job that spends none
        error("the run ran out of memory; nothing was written: free memory or ask for less")
        return 2
    except typer.Exit as done:
        return int(done.exit_code or 0)
    except typer.Abort:
        return 1
    except Exception as err:
        # click's usage errors (typer may vendor click) show themselves and carry an exit code
        show, exit_code = getattr(err, "show", None), getattr(err, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            return exit_code
        raise
    if result == INTERRUPTED:  # (typer returns an interrupt as this exit code)
        error("interrupted; nothing was written")
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
