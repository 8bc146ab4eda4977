"""A progress callback type shared by long-running steps (the CLI draws it with Rich).

>>> seen = []
>>> report: Progress = lambda step, done: seen.append((step, done))
>>> report("measuring", 0.5); seen
[('measuring', 0.5)]
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, float], None]
"""``progress(step, fraction_done)``: called with a step's name and how far it is (0..1)."""


def no_progress(step: str, done: float) -> None:
    """The default: report nothing."""
