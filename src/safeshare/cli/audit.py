"""``safeshare audit``: audit a model's training procedure (canaries, LiRA) or its weights.

The audit itself is :func:`safeshare.release.audit.audit_model`; its docstring says what
each attack measures. The output is for the data owner: it reads the data without DP.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

from safeshare.cli._arguments import (
    argument,
    command,
    force_option,
    header_option,
    option,
    quiet_option,
)
from safeshare.cli._output import progress_bar, stdout, warn


@dataclass(frozen=True, kw_only=True)
class AuditArguments:
    """The options of ``safeshare audit``."""

    model: Path = argument("A model directory written by `safeshare train`.")
    data: Path = option("--data", help="The training data (CSV/TSV or Parquet).")
    out: Path = option("--out", "-o", help="Directory to write audit.json, report.txt.")
    attack: str = option(
        "--attack",
        help="canaries (one-run audit), lira (shadow models; classifiers) or extraction "
        "(language models: prefix -> suffix on the saved weights).",
        default="canaries",
    )
    canaries: int = option("--canaries", help="Canaries (about half inserted).", default=1000)
    copies: int = option(
        "--copies",
        help="User-level classifier: records of each canary user (copies of one canary record).",
        default=8,
    )
    digits: int = option(
        "--digits",
        help="Language model: random digits in each canary ('my number is ...').",
        default=6,
    )
    prefix: int = option("--prefix", help="Extraction: bytes of each text given.", default=16)
    suffix: int = option("--suffix", help="Extraction: bytes decoded and compared.", default=16)
    shadows: int = option("--shadows", help="LiRA: shadow models (even).", default=8)
    offline: bool = option(
        "--offline", help="LiRA: the offline variant (OUT shadows only).", default=False
    )
    kind: str | None = option(
        help="Classifier canaries: random-label (default) or out-of-distribution.", default=None
    )
    schema: Path | None = option(help="The YAML schema the model was trained with.", default=None)
    header: bool | None = header_option()
    significance: float = option(help="The audit holds with 1 - significance.", default=0.05)
    seed: int | None = option(help="Reproducible canaries and training.", default=None)
    force: bool = force_option()
    quiet: bool = quiet_option()
    as_json: bool = option("--json", help="Print audit.json's content (no summary).", default=False)


def audit_trained_model(given: AuditArguments) -> None:
    """Audit a model's DP training procedure with canaries (an empirical epsilon lower bound)
    or with LiRA (membership inference with shadow models); a language model's weights with
    extraction."""
    from safeshare.release.audit import AuditSettings, audit_model

    settings = AuditSettings(
        attack=given.attack,
        canaries=given.canaries,
        copies=given.copies,
        digits=given.digits,
        prefix=given.prefix,
        suffix=given.suffix,
        shadows=given.shadows,
        offline=given.offline,
        kind=given.kind,
        significance=given.significance,
        seed=given.seed,
    )
    with (
        progress_bar(given.quiet or given.as_json) as progress,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", UserWarning)
        result = audit_model(
            given.model,
            given.data,
            given.out,
            settings,
            schema=given.schema,
            header=given.header,
            force=given.force,
            progress=progress,
        )
    if given.as_json:
        stdout.print_json(json.dumps(result.report))
        return
    for warning in caught:  # e.g. how many texts were cut to the context (never a text)
        warn(warning.message)
    if not given.quiet:
        stdout.print(f"written  {given.out}/audit.json, report.txt")
        for line in result.readings:
            stdout.print(line)


audit_command = command(AuditArguments, audit_trained_model)
