"""Workloads: the marginals a user cares about, with weights.

A workload is what AIM optimizes for and what the card reports the error on: all
k-way marginals (``"3way"``), or listed column sets with weights, from YAML::

    marginals:
      - columns: [age, sex, income]
        weight: 2
      - columns: [race, income]

>>> workload = Workload.all_kway(["a", "b", "c"], 2)
>>> workload.cliques
(('a', 'b'), ('a', 'c'), ('b', 'c'))
>>> sorted(workload.downward_closure())[:3]
[('a',), ('a', 'b'), ('a', 'c')]
>>> workload.weight_of(("a",))
2.0
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.data.schema import read_yaml
from safeshare.errors import SchemaError

_KWAY = re.compile(r"^\s*(all[-_ ]?)?(\d+)[-_ ]?way\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Workload:
    """Weighted column sets (each sorted in the table's column order)."""

    marginals: tuple[tuple[tuple[str, ...], float], ...]

    @property
    def cliques(self) -> tuple[tuple[str, ...], ...]:
        return tuple(c for c, _ in self.marginals)

    @classmethod
    def all_kway(cls, columns: Sequence[str], k: int, weight: float = 1.0) -> Workload:
        if not 1 <= k <= len(columns):
            raise SchemaError(
                f"a {k}-way workload needs between 1 and {len(columns)} columns per marginal"
            )
        return cls(tuple((c, weight) for c in itertools.combinations(columns, k)))

    @classmethod
    def parse(
        cls, spec: str | Path | Workload | None, columns: Sequence[str], default_k: int = 3
    ) -> Workload:
        """``None`` (all ``default_k``-way), ``"2way"``/``"3way"``, a YAML file, or a Workload."""
        if isinstance(spec, Workload):
            return spec.check(columns)
        k = min(default_k, len(columns))
        if spec is None:
            return cls.all_kway(columns, k)
        match = _KWAY.match(str(spec))
        if match:
            return cls.all_kway(columns, min(int(match.group(2)), len(columns)))
        path = Path(spec)
        if not path.is_file():
            raise SchemaError(
                f"workload {str(spec)!r} is neither 'Nway' (e.g. 3way) nor a YAML file"
            )
        return cls.from_dict(read_yaml(path, "workload file"), columns, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, columns: Sequence[str], source: str = "workload") -> Workload:
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("marginals"), list)
            or not data["marginals"]
        ):
            raise SchemaError(f"{source}: a workload needs a non-empty 'marginals:' list")
        order = {c: i for i, c in enumerate(columns)}
        marginals = []
        for i, item in enumerate(data["marginals"]):
            names = item.get("columns") if isinstance(item, dict) else item
            weight = float(item.get("weight", 1.0)) if isinstance(item, dict) else 1.0
            if not isinstance(names, list) or not names:
                raise SchemaError(f"{source}: marginal {i + 1} needs a list of columns")
            unknown = [n for n in names if n not in order]
            if unknown:
                raise SchemaError(
                    f"{source}: marginal {i + 1} names unknown columns {unknown}; "
                    f"the table has {list(columns)}"
                )
            if weight <= 0:
                raise SchemaError(
                    f"{source}: marginal {i + 1} has weight {weight}; weights must be positive"
                )
            marginals.append((tuple(sorted(set(names), key=order.__getitem__)), weight))
        return cls(tuple(marginals))

    def check(self, columns: Sequence[str]) -> Workload:
        unknown = sorted({a for c in self.cliques for a in c} - set(columns))
        if unknown:
            raise SchemaError(
                f"the workload names unknown columns {unknown}; the table has {list(columns)}"
            )
        return self

    def downward_closure(self) -> set[tuple[str, ...]]:
        """Every non-empty subset of every workload marginal: AIM's candidates."""
        closure: set[tuple[str, ...]] = set()
        for clique in self.cliques:
            for size in range(1, len(clique) + 1):
                closure.update(itertools.combinations(clique, size))
        return closure

    def weight_of(self, candidate: tuple[str, ...]) -> float:
        """How much measuring ``candidate`` informs the workload: sum of weight x overlap."""
        chosen = set(candidate)
        return float(sum(w * len(chosen & set(c)) for c, w in self.marginals))
