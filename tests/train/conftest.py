"""Fixtures the training tests share."""

import pytest


@pytest.fixture
def plan_main(monkeypatch):
    """The CLI's entry point with ``plan`` registered as the project registers it."""
    typer = pytest.importorskip("typer")
    from safeshare import cli
    from safeshare.cli.plan import plan_command

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("plan")(plan_command)

    @app.callback()
    def _root() -> None:
        """safeshare."""

    monkeypatch.setattr(cli, "app", app)
    return cli.main
