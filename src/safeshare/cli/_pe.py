"""``safeshare synthesize --method pe --text-column ...``: text Private Evolution from the CLI."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table as RichTable

from safeshare.cli._output import finish, progress_bar, stdout, styled
from safeshare.errors import InputError
from safeshare.synth.pe.backends import TextBackend

if TYPE_CHECKING:
    from safeshare.cli.release import ReleaseArguments


def resume_command(data: str, options: dict[str, object]) -> str:
    """The command line that runs this release again (to resume from its checkpoint).

    >>> resume_command("r.csv", {"--out": Path("o"), "--seed": None, "--force": True})
    'safeshare synthesize r.csv --method pe --out o --force'
    """
    words = ["safeshare", "synthesize", data, "--method", "pe"]
    for flag, value in options.items():
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join(words)


def parse_token_prices(text: str | None) -> tuple[float, float] | None:
    """``--token-prices IN,OUT``: the prices per million prompt and completion tokens.

    >>> parse_token_prices("0.15,0.60")
    (0.15, 0.6)
    """
    if text is None:
        return None
    parts = text.split(",")
    try:
        if len(parts) == 2:
            return float(parts[0]), float(parts[1])
    except ValueError:
        pass
    raise InputError(
        f"--token-prices {text!r}: give two numbers, the prices per million prompt and "
        "completion tokens, e.g. 0.15,0.60"
    )


def release_text_command(given: ReleaseArguments) -> None:
    """Run :func:`safeshare.release.text.release_text` and print what it wrote."""
    from safeshare.release.text import (
        DEFAULT_ITERATIONS,
        TextSynthesisSettings,
        parse_label_names,
        release_text,
    )

    backend = TextBackend(
        given.api,
        base_url=given.base_url,
        model=given.model,
        api_key_env=given.api_key_env,
        max_new_tokens=given.max_new_tokens,
        concurrency=given.concurrency,
        retries=given.retries,
        timeout=given.timeout,
        temperature=given.temperature,
        replies_per_request=given.replies_per_request,
        rate=given.rate,
        token_prices=parse_token_prices(given.token_prices),
        vocabulary=given.vocabulary,
        prompts=given.prompts,
    )
    settings = TextSynthesisSettings(
        text_column=str(given.text_column),
        label_column=given.label_column,
        label_names=parse_label_names(given.label_names),
        backend=backend,
        epsilon=given.epsilon,
        delta=given.delta,
        iterations=given.iterations or DEFAULT_ITERATIONS,
        samples=given.samples,
        lookahead=given.lookahead or 0,
        neighbour_search=given.neighbour_search or "auto",
        selection=given.selection or "sample",
        offspring=given.offspring,
        holdout_fraction=given.holdout_fraction,
        rows=given.rows,
        checkpoint=given.checkpoint,
        resume_command=resume_command(given.data, _resume_options(given)),
    )
    with progress_bar(given.quiet) as progress:
        result = release_text(
            given.data,
            out=given.out,
            settings=settings,
            ledger=given.ledger,
            total_budget=given.total_budget(),
            seed=given.seed,
            force=given.force,
            progress=progress,
            header=given.header,
        )
    finish(given.quiet, result.warnings, partial(_summary, result.card, given.out))


def _resume_options(given: ReleaseArguments) -> dict[str, object]:
    """The flags that run this text release again, by their command-line names."""
    return {
        "--text-column": given.text_column,
        "--label-column": given.label_column,
        "--label-names": given.label_names,
        "--api": given.api,
        "--base-url": given.base_url,
        "--model": given.model,
        "--api-key-env": given.api_key_env if given.api == "openai-compatible" else None,
        "--max-new-tokens": given.max_new_tokens if given.api != "word" else None,
        "--temperature": given.temperature if given.api != "word" else None,
        **_server_options(given),
        "--vocabulary": given.vocabulary,
        "--prompts": given.prompts,
        "--epsilon": given.epsilon,
        "--delta": given.delta,
        "--iterations": given.iterations,
        "--samples": given.samples,
        "--lookahead": given.lookahead,
        "--neighbour-search": given.neighbour_search,
        "--selection": given.selection,
        "--offspring": given.offspring,
        "--holdout-fraction": given.holdout_fraction,
        "--rows": given.rows,
        "--seed": given.seed,
        "--ledger": given.ledger,
        "--checkpoint": given.checkpoint,
        "--out": given.out,
        "--force": given.force,
    }


def _server_options(given: ReleaseArguments) -> dict[str, object]:
    """The flags of the server's client, for a run against an openai-compatible server."""
    if given.api != "openai-compatible":
        return {}
    return {
        "--concurrency": given.concurrency,
        "--retries": given.retries,
        "--timeout": given.timeout,
        "--replies-per-request": given.replies_per_request,
        "--rate": given.rate,
        "--token-prices": given.token_prices,
    }


def _summary(card: dict[str, Any], out: Path) -> None:
    """What a text release wrote and what protects it, in a few lines."""
    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{out}/synthetic.csv, card.json, report.html")
    table.add_row("guarantee", card["guarantee"])
    table.add_row(
        "noise", "secure" if card["secure_noise"] else styled("seeded: not secure", "yellow")
    )
    budget = card["budget"]
    table.add_row(
        "accounting",
        f"Gaussian DP mu={budget['gdp_mu']:.4g}: T={budget['iterations']} histograms, "
        f"sigma={budget['sigma']:.4g}, {budget['samples_per_iteration']} samples per iteration",
    )
    table.add_row("rows", f"{card['rows_out']} synthetic texts from {card['rows_train']} records")
    classifier = card["metrics"].get("classifier")
    if classifier:
        table.add_row(
            "utility",
            f"classifier accuracy on unseen records {classifier['accuracy_synthetic']:.3f} "
            f"(trained on real text: {classifier['accuracy_real']:.3f})",
        )
    usage = card["model"]["api"].get("usage")
    if usage:
        cost = f", cost {usage['cost']:.4g}" if "cost" in usage else ""
        table.add_row(
            "model api",
            f"{usage['requests']} requests, {usage['prompt_tokens']} prompt and "
            f"{usage['completion_tokens']} completion tokens as the server reported them{cost}",
        )
    copies = card["metrics"].get("copies_of_train")
    if copies:
        table.add_row("copies", f"{copies['value']:.1%} of texts equal a training text")
    ledger_card = card["ledger"]
    table.add_row(
        "ledger",
        f"epsilon {ledger_card['spent_epsilon']:g} of {ledger_card['total_epsilon']:g} spent "
        f"on this dataset ({ledger_card['releases']} release(s))",
    )
    stdout.print(table)
