"""Charts for the report, drawn with matplotlib as inline SVG (no files, no network)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_REAL, _RELEASED, _BASE = "#4C72B0", "#DD8452", "#8C8C8C"


def _figure(width: float, height: float) -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "svg.fonttype": "none",
            "text.parse_math": False,  # labels are data (a "$" category is not mathtext)
        }
    )
    return plt.figure(figsize=(width, height))


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.tight_layout()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    text = buffer.getvalue()
    return re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg") :], flags=re.DOTALL)


_STEP_GROUPS = (
    (re.compile(r"^domain of "), "domain discovery"),
    (re.compile(r"^(\w+): round \d+ select"), r"\1: rounds, selection"),
    (re.compile(r"^(\w+): round \d+ measure"), r"\1: rounds, measurement"),
)


def _step_group(step: str) -> str:
    """Steps repeated per column or per round share one bar."""
    for pattern, group in _STEP_GROUPS:
        match = pattern.match(step)
        if match:
            return match.expand(group)
    return step


def budget_chart(items: Sequence[dict[str, Any]]) -> str:
    """Horizontal bars: each step's share of epsilon (per-column and per-round steps grouped).

    >>> "<svg" in budget_chart([{"step": "aim: round 1 select", "epsilon_share": 0.1},
    ...                         {"step": "aim: round 2 select", "epsilon_share": 0.1}])
    True
    """
    shares: dict[str, float] = {}
    for item in items:
        step = _step_group(str(item["step"]))
        shares[step] = shares.get(step, 0.0) + float(item["epsilon_share"])
    figure = _figure(6.5, 0.45 * len(shares) + 0.8)
    axes = figure.add_subplot()
    names = list(shares)[::-1]
    axes.barh(names, [shares[n] for n in names], color=_RELEASED)
    axes.set_xlabel("share of epsilon")
    return _svg(figure)


def marginal_chart(columns: Sequence[tuple[str, Sequence[str], np.ndarray, np.ndarray]]) -> str:
    """One panel per column: the shares of the real (train) records and of the released ones."""
    n = len(columns)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    figure = _figure(3.4 * cols, 2.6 * rows)
    for i, (name, labels, real, released) in enumerate(columns):
        axes = figure.add_subplot(rows, cols, i + 1)
        x = np.arange(len(labels))
        axes.bar(x - 0.2, real, 0.4, color=_REAL, label="real (train)")
        axes.bar(x + 0.2, released, 0.4, color=_RELEASED, label="released")
        axes.set_title(name)
        step = max(1, len(labels) // 8)
        axes.set_xticks(
            x[::step], [str(label)[:12] for label in labels][::step], rotation=45, ha="right"
        )
        if i == 0:
            axes.legend(frameon=False)
    return _svg(figure)


def tvd_chart(rows: Sequence[tuple[str, float, float | None, float | None]]) -> str:
    """Mean TVD per marginal order: release vs train, vs holdout, and the train-vs-holdout floor."""
    figure = _figure(6.5, 2.8)
    axes = figure.add_subplot()
    x = np.arange(len(rows))
    labels = [r[0] for r in rows]
    axes.bar(x - 0.27, [r[1] for r in rows], 0.27, color=_REAL, label="release vs train")
    if rows and rows[0][2] is not None:
        axes.bar(x, [r[2] or 0.0 for r in rows], 0.27, color=_RELEASED, label="release vs holdout")
        axes.bar(
            x + 0.27,
            [r[3] or 0.0 for r in rows],
            0.27,
            color=_BASE,
            label="train vs holdout (floor)",
        )
    axes.set_xticks(x, labels)
    axes.set_ylabel("mean total-variation distance")
    axes.legend(frameon=False)
    return _svg(figure)


def dcr_chart(to_train: np.ndarray, to_holdout: np.ndarray) -> str:
    """Histograms of each released record's distance to its closest train and holdout record."""
    figure = _figure(6.5, 2.8)
    axes = figure.add_subplot()
    top = float(max(to_train.max(initial=0), to_holdout.max(initial=0), 1e-6))
    bins = np.linspace(0, top, 25)
    axes.hist(to_train, bins=bins, alpha=0.6, color=_REAL, label="to closest train record")
    axes.hist(to_holdout, bins=bins, alpha=0.6, color=_BASE, label="to closest holdout record")
    axes.set_xlabel("distance (share of columns that differ, ranks scaled)")
    axes.set_ylabel("released records")
    axes.legend(frameon=False)
    return _svg(figure)
