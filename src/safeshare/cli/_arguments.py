"""A command's arguments as one frozen dataclass; each field carries its Typer option.

A command is a function of one frozen object, not of thirty keyword parameters: the
dataclass names every option once (type, default, spelling, help), and :func:`command`
turns it into the signature Typer reads.

>>> from dataclasses import dataclass
>>> from typer.testing import CliRunner
>>> @dataclass(frozen=True, kw_only=True)
... class Greeting:
...     name: str = argument("Who to greet.")
...     times: int = option(help="How often.", default=1)
>>> def greet(given: Greeting) -> None:
...     '''Greet someone.'''
...     print(" ".join([f"hello {given.name}"] * given.times))
>>> app = typer.Typer()
>>> _ = app.command("greet")(command(Greeting, greet))
>>> _ = app.command("other")(command(Greeting, greet))
>>> CliRunner().invoke(app, ["greet", "ada", "--times", "2"]).output
'hello ada hello ada\\n'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

Arguments = TypeVar("Arguments")

_TYPER = "typer"


def option(
    *names: str, help: str, default: Any = dataclasses.MISSING, **typer_settings: Any
) -> Any:
    """A field for an option: its spellings (default: from the field's name), help and default;
    no default makes it required."""
    info = typer.Option(*names, help=help, **typer_settings)
    return dataclasses.field(default=default, metadata={_TYPER: info})


def argument(help: str) -> Any:
    """A field for a required positional argument."""
    return dataclasses.field(metadata={_TYPER: typer.Argument(help=help)})


def command(arguments: type[Arguments], run: Callable[[Arguments], None]) -> Callable[..., None]:
    """``run`` as a Typer command whose options are the fields of ``arguments``."""
    hints = typing.get_type_hints(arguments)
    parameters = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty
            if field.default is dataclasses.MISSING
            else field.default,
            annotation=Annotated[hints[field.name], field.metadata[_TYPER]],
        )
        for field in dataclasses.fields(arguments)  # type: ignore[arg-type]
    ]

    @functools.wraps(run)
    def parsed(**given: Any) -> None:
        run(arguments(**given))

    del parsed.__wrapped__  # Typer reads the signature below, not run's
    parsed.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    parsed.__annotations__ = {}
    return parsed


def header_option(schema: bool = True) -> Any:
    """``--header/--no-header``: whether a CSV's first row names the columns (default: detected;
    ``schema``: the command also takes --schema)."""
    told = (
        "Default: detected (or the schema's header:); --no-header names the columns column_1, "
        "column_2, ... or by --schema's order."
        if schema
        else "Default: detected; --no-header names the columns column_1, column_2, ..."
    )
    return option(
        "--header/--no-header",
        help=f"Whether the CSV's first row is a header. {told}",
        default=None,
    )


def force_option() -> Any:
    """``--force``, the same for every command that writes a folder."""
    return option("--force", help="Replace an earlier safeshare output at --out.", default=False)


def quiet_option() -> Any:
    """``--quiet`` / ``-q``."""
    return option(
        "--quiet", "-q", help="No progress bar or summary (warnings still print).", default=False
    )


def seed_option() -> Any:
    """``--seed`` of a job that draws noise: reproducible, and not private for it."""
    return option(
        help="Reproducible run. NOT private against anyone who knows the seed.", default=None
    )


def ledger_option(help: str = "Privacy ledger file") -> Any:
    """``--ledger``: the privacy ledger file."""
    return option(help=f"{help} (default: $SAFESHARE_LEDGER or user data dir).", default=None)


def total_option(what: str) -> Any:
    """``--total-epsilon`` / ``--total-delta``: the dataset's total, if the ledger has none."""
    return option(help=f"Total {what} of this dataset, if the ledger has none yet.", default=None)


def schema_option() -> Any:
    """``--schema``: the YAML schema of public facts."""
    return option(
        help="YAML schema of public facts (kinds, categories, bounds, roles).", default=None
    )


def unsafe_infer_option() -> Any:
    """``--unsafe-infer``: read the domain without DP (flagged in the card)."""
    return option(
        "--unsafe-infer", help="Read categories/bounds without DP (flagged).", default=False
    )
