"""The black box's output as a vector: flattening, checking and restoring its structure.

A function may return a number, an array (any shape), a pandas Series, or a mapping of names
to numbers or arrays (``{"mean": 3.1, "coef": [...]}``).  Calibration works on the flat vector;
the noisy release is given back in the same structure.  Errors name the output entry (never
its value).

>>> layout, flat = flatten({"mean": 2.5, "coef": [1.0, -2.0]})
>>> layout.labels, flat.tolist()
(('mean', 'coef[0]', 'coef[1]'), [2.5, 1.0, -2.0])
>>> layout.restore(flat + 1)
{'mean': 3.5, 'coef': [2.0, -1.0]}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from safeshare.pac.errors import MechanismOutputError

_SCALAR, _ARRAY, _SERIES, _MAPPING = "scalar", "array", "series", "mapping"


@dataclass(frozen=True)
class Layout:
    """How a flat vector maps back to the function's output structure."""

    kind: str
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    """``(name, shape)`` per part; one unnamed part for a number or an array."""

    @property
    def size(self) -> int:
        return sum(math.prod(shape) for _, shape in self.shapes)

    @property
    def labels(self) -> tuple[str, ...]:
        """One readable label per flat coordinate, e.g. ``coef[1]`` or ``[2, 0]``."""
        labels: list[str] = []
        for name, shape in self.shapes:
            if not shape:
                labels.append(name or "value")
                continue
            for index in np.ndindex(*shape):
                where = ", ".join(map(str, index))
                labels.append(f"{name}[{where}]")
        return tuple(labels)

    def describe(self) -> str:
        """The structure in words, for error messages."""
        if self.kind in (_SCALAR, _ARRAY):
            return f"an array of shape {self.shapes[0][1]}" if self.kind == _ARRAY else "a number"
        parts = ", ".join(f"{name!r}: {shape or 'number'}" for name, shape in self.shapes)
        return f"a {self.kind} of {{{parts}}}"

    def restore(self, flat: np.ndarray) -> Any:
        """The structure of the original output, holding the values of ``flat``."""
        values = np.asarray(flat, dtype=float).reshape(-1)
        if values.size != self.size:
            raise MechanismOutputError(f"expected {self.size} values, got {values.size}")
        parts: dict[str, Any] = {}
        start = 0
        for name, shape in self.shapes:
            count = math.prod(shape)
            chunk = values[start : start + count]
            start += count
            parts[name] = float(chunk[0]) if not shape else chunk.reshape(shape).tolist()
        if self.kind == _SCALAR:
            return parts[""]
        if self.kind == _ARRAY:
            return np.asarray(parts[""], dtype=float)
        if self.kind == _SERIES:
            return pd.Series({name: parts[name] for name, _ in self.shapes}, dtype=float)
        return parts

    def jsonable(self, flat: np.ndarray) -> Any:
        """Like :meth:`restore`, but made of lists, dicts and floats only (for JSON)."""
        value = self.restore(flat)
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, pd.Series):
            return {str(k): float(v) for k, v in value.items()}
        return value


def flatten(output: Any, *, run: int | None = None) -> tuple[Layout, np.ndarray]:
    """The output's layout and its values as one float vector; refuses what cannot be noised."""
    where = "" if run is None else f" (black-box run {run})"
    if isinstance(output, pd.DataFrame):
        output = output.to_numpy()
    if isinstance(output, pd.Series):
        names = [str(k) for k in output.index]
        _check_unique(names, where)
        parts = [
            (name, _numeric(v, name, where))
            for name, v in zip(names, output.to_numpy(), strict=True)
        ]
        return _assemble(_SERIES, parts, where)
    if isinstance(output, Mapping):
        names = [str(k) for k in output]
        _check_unique(names, where)
        parts = [
            (name, _numeric(v, name, where)) for name, v in zip(names, output.values(), strict=True)
        ]
        if not parts:
            raise MechanismOutputError(f"the function returned an empty mapping{where}")
        return _assemble(_MAPPING, parts, where)
    values = _numeric(output, "output", where)
    kind = _SCALAR if values.ndim == 0 else _ARRAY
    return _assemble(kind, [("", values)], where)


def flatten_like(layout: Layout, output: Any, *, run: int) -> np.ndarray:
    """Flatten a later output, refusing one whose structure differs from ``layout``."""
    other, flat = flatten(output, run=run)
    if other != layout:
        raise MechanismOutputError(
            f"the function's output changed shape: run 0 gave {layout.describe()}, run {run} "
            f"gave {other.describe()}; PAC calibration needs a fixed output shape (e.g. pad "
            "histograms to fixed bins, fix the number of clusters)"
        )
    return flat


def check_finite(layout: Layout, flat: np.ndarray, run: int) -> None:
    """Refuse NaN or infinity, naming the output entry (not its value)."""
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        labels = layout.labels
        names = ", ".join(labels[i] for i in bad[:3]) + (" ..." if bad.size > 3 else "")
        raise MechanismOutputError(
            f"the function returned NaN or infinity in {names} on black-box run {run}; "
            "make it total on every subset of the data (e.g. guard empty groups and divisions)"
        )


def _numeric(value: Any, name: str, where: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise MechanismOutputError(
            f"output {name!r}{where} is not numeric ({type(value).__name__}); return numbers, "
            "arrays, or a mapping of names to them"
        ) from None
    return array


def _assemble(
    kind: str, parts: list[tuple[str, np.ndarray]], where: str
) -> tuple[Layout, np.ndarray]:
    shapes = tuple((name, tuple(int(n) for n in array.shape)) for name, array in parts)
    flat = (
        np.concatenate([array.reshape(-1) for _, array in parts]) if parts else np.zeros(0, float)
    )
    if flat.size == 0:
        raise MechanismOutputError(f"the function returned no values{where}")
    return Layout(kind, shapes), flat


def _check_unique(names: list[str], where: str) -> None:
    if len(set(names)) != len(names):
        raise MechanismOutputError(f"output names repeat{where}; give each entry its own name")
