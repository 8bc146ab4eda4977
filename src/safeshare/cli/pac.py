"""``safeshare pac``: release a black-box function of a table with calibrated PAC noise."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from safeshare.cli._arguments import (
    command,
    force_option,
    header_option,
    option,
    quiet_option,
    seed_option,
)
from safeshare.cli._output import progress_bar, stdout, styled, warn
from safeshare.errors import InputError


@dataclass(frozen=True, kw_only=True)
class PacArguments:
    """The options of ``safeshare pac``."""

    data: Path = option("--data", help="The sensitive table: a CSV/TSV or Parquet file.")
    function: str = option(
        "--function",
        help="The black box, 'module:function' or 'path/file.py:function': takes a pandas "
        "DataFrame, returns a number, an array or a mapping of names to numbers.",
    )
    mi: float = option(
        "--mi", help="Mutual-information budget in nats (0.0625 caps membership at 67.5%)."
    )
    out: Path = option(
        "--out", "-o", help="Directory to write output.json, card.json, report.html."
    )
    samples: int = option(help="Most black-box runs for the calibration.", default=1000)
    sampler: str | None = option(
        help="'module:function' drawing a dataset from the assumed distribution "
        "(generator -> DataFrame); default: random halves of the records (membership).",
        default=None,
    )
    confidence: float = option(help="Confidence of the bound over the estimate.", default=0.95)
    workers: int = option(help="Worker processes for the black-box runs.", default=1)
    attack: bool = option(
        "--attack",
        help="Also run a membership attack on the noisy output (card only).",
        default=False,
    )
    allow_swamped: bool = option(
        "--allow-swamped", help="Release even when the noise swamps the output.", default=False
    )
    seed: int | None = seed_option()
    header: bool | None = header_option()
    force: bool = force_option()
    quiet: bool = quiet_option()


def calibrated_release(given: PacArguments) -> None:
    """Calibrate PAC noise for a function of a table and release its noisy output."""
    from safeshare.data.readers import fingerprint_file, read_frame
    from safeshare.output_folder import check_output
    from safeshare.pac import calibrate
    from safeshare.pac.attack import membership_attack
    from safeshare.release.output import write_release
    from safeshare.report.pac import build_pac_card, render_pac_report

    check_output(given.out, force=given.force, inputs=(given.data,))
    frame = numeric_columns(read_frame(given.data, header=given.header))
    mechanism = load_function(given.function, "--function")
    user_sampler = load_function(given.sampler, "--sampler") if given.sampler else None
    with progress_bar(given.quiet) as progress:
        release = calibrate(
            mechanism,
            frame,
            mi_budget=given.mi,
            sampler=user_sampler,
            samples=given.samples,
            confidence=given.confidence,
            workers=given.workers,
            rng=given.seed,
            progress=progress,
        )
        output = release.apply(allow_swamped=given.allow_swamped)
        result = None
        if given.attack:
            progress("membership attack", 0.0)
            result = membership_attack(release, frame, rng=given.seed)
    card = build_pac_card(
        release,
        output,
        name=given.data.name,
        fingerprint=fingerprint_file(given.data),
        function=given.function,
        columns={c: "numeric" if frame[c].dtype.kind in "iuf" else "text" for c in frame.columns},
        rows_in=len(frame),
        attack=result,
    )
    document = json.dumps(card["output"], indent=2, allow_nan=False) + "\n"
    files: dict[str, Any] = {
        "output.json": document,
        "card.json": card,
        "report.html": render_pac_report(card, release, output),
    }
    write_release(given.out, files, force=given.force)
    if not given.quiet:
        _summary(card, str(given.out), release.swamped)


pac_command = command(PacArguments, calibrated_release)


def numeric_columns(frame: Any) -> Any:
    """Columns whose every present value is a number become numbers; the rest stay text."""
    import pandas as pd

    converted = frame.copy()
    for name in frame.columns:
        values = pd.to_numeric(frame[name], errors="coerce")
        if values.notna().sum() == frame[name].notna().sum():
            converted[name] = values.astype(float)
    return converted


def load_function(spec: str, option: str) -> Callable[..., Any]:
    """``module:function`` (importable, or from the current directory) or ``file.py:function``."""
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise InputError(
            f"{option} {spec!r} must look like 'module:function' or 'file.py:function'"
        )
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise InputError(f"{option}: file {module_name!r} does not exist; check the path")
            loader = importlib.util.spec_from_file_location(path.stem, path)
            if loader is None or loader.loader is None:
                raise InputError(f"{option}: cannot load {module_name!r} as Python")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except ImportError as err:
        raise InputError(
            f"{option}: cannot import {module_name!r} ({type(err).__name__}: {err}); check the "
            "module name and that it is on PYTHONPATH or in the current directory"
        ) from None
    found = getattr(module, attribute, None)
    if not callable(found):
        raise InputError(f"{option}: {module_name!r} has no function {attribute!r}")
    return found


def _summary(card: dict[str, Any], out: str, swamped: bool) -> None:
    from rich.table import Table as RichTable

    pac = card["pac"]
    bound = pac["bound"]
    table = RichTable(show_header=False, box=None, pad_edge=False)
    table.add_row("written", f"{out}/output.json, card.json, report.html")
    table.add_row(
        "guarantee",
        f"MI <= {bound['mi']:.4g} nats: posterior success <= {bound['posterior_success']:.2%} "
        f"(prior {bound['prior']:.0%}); DP-equivalent epsilon {bound['dp_equivalent_epsilon']:.4g}",
    )
    table.add_row("covers", f"secret = {pac['secret']}; not the worst case")
    table.add_row(
        "noise",
        Text.assemble(
            f"{pac['noise']['kind']}, power {pac['noise']['power']:.4g}, ",
            "secure" if card["secure_noise"] else styled("seeded: not secure", "yellow"),
        ),
    )
    calibration = pac["calibration"]
    table.add_row(
        "calibration",
        f"{calibration['black_box_runs']} runs, safety margin "
        f"{calibration['safety_margin']:.0%}"
        + ("" if calibration["converged"] else " (not converged)"),
    )
    attack = card["metrics"].get("membership_attack")
    if attack:
        table.add_row("attack", attack["reading"])
    stdout.print(table)
    if swamped:
        warn("the noise swamps the output (--allow-swamped)")
