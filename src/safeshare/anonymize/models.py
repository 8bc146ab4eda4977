"""Privacy models: conditions on the equivalence classes of an anonymized table.

An *equivalence class* is a set of records sharing every quasi-identifier value after
generalization.  Each model says which classes satisfy it (records of the others are
suppressed, within the suppression limit) or, for table-wide models, whether the whole
table does.  Models combine: a class is kept when it satisfies every model.

Monotonicity (generalizing never turns a satisfied node into a violated one) lets the search
prune the lattice.  Without suppression the models are monotone (merging classes keeps ``k``,
distinct values, entropy (concavity), the recursive condition, t (convexity of the earth
mover's distance) and beta (a class's share of a value is a mean of its parts')), except
delta-disclosure (a value diluted below its share in both parts), delta-presence with a
lower bound and the estimated population uniqueness, which the search checks node by node.  With suppression only
k-anonymity, k-map, the maximum risk and distinct l-diversity stay monotone: a kept class
stays kept when merged with any other.  k-map and delta-presence read a population table:
how many of its records each class matches.

>>> import numpy as np
>>> classes = Classes(np.array([3, 5]), {"disease": np.array([[1, 2, 0], [2, 2, 1]])})
>>> KAnonymity(4).class_ok(classes, None).tolist()
[False, True]
>>> DistinctLDiversity("disease", 3).class_ok(classes, None).tolist()
[False, True]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from safeshare.errors import SafeshareError


class AnonymizationError(SafeshareError, ValueError):
    """The anonymization problem cannot be solved as stated."""


class NoSolutionError(AnonymizationError):
    """No transformation satisfies the models within the suppression limit."""

    def __init__(self, message: str, best_k: int | None = None) -> None:
        super().__init__(message)
        self.best_k = best_k


@dataclass(frozen=True)
class Classes:
    """The equivalence classes of one transformation, as aggregates only.

    ``sizes[g]`` is the number of records of class ``g``; ``sensitive[a][g, v]`` how many of
    them hold value ``v`` of sensitive attribute ``a``; ``population[g]`` (k-map) how many
    records of the population table fall into the class.
    """

    sizes: np.ndarray
    sensitive: Mapping[str, np.ndarray] = field(default_factory=dict)
    population: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.sizes)

    def subset(self, rows: np.ndarray) -> Classes:
        """The classes ``rows`` (positions), with their counts."""
        population = None if self.population is None else self.population[rows]
        sensitive = {name: counts[rows] for name, counts in self.sensitive.items()}
        return Classes(self.sizes[rows], sensitive, population)


@dataclass(frozen=True)
class SensitiveInfo:
    """What t-closeness needs about a sensitive attribute: its overall distribution and order.

    ``order`` lists value codes from lowest to highest (ordered distance); ``parents[l]``
    maps each label of level ``l`` to its label at level ``l + 1`` with ``parents[0]``
    acting on value codes (hierarchical distance).
    """

    name: str
    values: tuple[str, ...]
    totals: np.ndarray
    order: np.ndarray | None = None
    parents: tuple[np.ndarray, ...] | None = None
    # the input table's share of each value
    shares: np.ndarray = field(init=False, repr=False, compare=False)
    # side by side for every level of ``parents`` (level 0: the values themselves), the 0/1
    # matrix that sums a row over the values into their ancestors' at that level, and where
    # each level's columns start
    ancestors: np.ndarray = field(init=False, repr=False, compare=False)
    level_starts: np.ndarray = field(init=False, repr=False, compare=False)
    # the weights of the levels' norms N_0..N_h in the hierarchical distance:
    # (N_0 + ... + N_{h-1} - h N_h) / 2h
    telescoped: np.ndarray = field(init=False, repr=False, compare=False)
    _farthest: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = len(self.values)
        blocks: list[np.ndarray] = [np.eye(m)]
        ancestor = np.arange(m)
        for parent in self.parents or ():
            ancestor = parent[ancestor]
            block = np.zeros((m, int(ancestor.max(initial=0)) + 1))
            block[np.arange(m), ancestor] = 1.0
            blocks.append(block)
        starts = np.cumsum([0] + [b.shape[1] for b in blocks[:-1]])
        object.__setattr__(self, "ancestors", np.hstack(blocks))
        object.__setattr__(self, "level_starts", starts.astype(np.intp))
        height = len(blocks) - 1
        telescoped = np.ones(height + 1)
        telescoped[-1] = -height
        object.__setattr__(self, "telescoped", telescoped / max(2 * height, 1))
        totals = np.asarray(self.totals, dtype=np.float64)
        object.__setattr__(self, "shares", totals / max(float(totals.sum()), 1.0))
        object.__setattr__(self, "_farthest", {})

    def farthest(self, distance: str) -> float:
        """The largest distance a class can lie from the table: that of a class holding a
        single value (the EMD is convex, so its maximum is at a vertex)."""
        if distance not in self._farthest:
            self._farthest[distance] = float(emd(np.eye(len(self.values)), self, distance).max())
        return self._farthest[distance]


class PrivacyModel:
    """Base of the models: a per-class condition (or a table-wide one)."""

    name = "model"
    per_class = True
    reads_population = False  # whether it needs each class's count in a population table

    def monotone(self, suppression: bool) -> bool:
        """Whether a node stays satisfied when generalized further."""
        return not suppression

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        """Which classes satisfy the model (per-class models)."""
        return np.ones(len(classes), dtype=bool)

    def table_ok(self, classes: Classes, kept: np.ndarray) -> bool:
        """Whether the kept classes together satisfy the model (table-wide models)."""
        return True

    def forced_share(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray | None:
        """Per class, a share of its records that every finer node suppresses, however it
        splits the class (``None``: none known); 0 exactly for the classes the model keeps."""
        return None

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        """The model's parameter that the kept classes reach (e.g. the smallest class size)."""
        return {}

    def describe(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.name, "parameters": self.describe()}


@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    """Every class holds at least ``k`` records."""

    k: int
    name = "k-anonymity"

    def __post_init__(self) -> None:
        if self.k < 1:
            raise AnonymizationError(f"k must be at least 1, got {self.k}")

    def monotone(self, suppression: bool) -> bool:
        return True

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return classes.sizes >= self.k

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        return {"k": int(classes.sizes[kept].min()) if kept.any() else 0}

    def describe(self) -> str:
        return f"k={self.k}"


@dataclass(frozen=True)
class MaxRisk(PrivacyModel):
    """Prosecutor risk ``1/|class|`` of every record at most ``threshold``."""

    threshold: float
    name = "maximum risk"

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise AnonymizationError(f"a risk threshold lies in (0, 1], got {self.threshold}")

    @property
    def k(self) -> int:
        return math.ceil(1 / self.threshold - 1e-9)

    def monotone(self, suppression: bool) -> bool:
        return True

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return classes.sizes >= self.k

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        smallest = int(classes.sizes[kept].min()) if kept.any() else 0
        return {"max_risk": 1 / smallest if smallest else 0.0}

    def describe(self) -> str:
        return f"max risk <= {self.threshold:g}"


@dataclass(frozen=True)
class AverageRisk(PrivacyModel):
    """Mean prosecutor risk over kept records (classes / records) at most ``threshold``."""

    threshold: float
    name = "average risk"
    per_class = False

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise AnonymizationError(f"a risk threshold lies in (0, 1], got {self.threshold}")

    def table_ok(self, classes: Classes, kept: np.ndarray) -> bool:
        records = int(classes.sizes[kept].sum())
        return records == 0 or int(kept.sum()) / records <= self.threshold + 1e-12

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        records = int(classes.sizes[kept].sum())
        return {"average_risk": int(kept.sum()) / records if records else 0.0}

    def describe(self) -> str:
        return f"average risk <= {self.threshold:g}"


@dataclass(frozen=True)
class KMap(PrivacyModel):
    """Every class matches at least ``k`` records of a population table (k-map)."""

    k: int
    name = "k-map"
    reads_population = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise AnonymizationError(f"k-map's k must be at least 1, got {self.k}")

    def monotone(self, suppression: bool) -> bool:
        return True

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        if classes.population is None:
            raise AnonymizationError("k-map needs a population table")
        return classes.population >= self.k

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        population = classes.population if classes.population is not None else classes.sizes
        return {"k_map": int(population[kept].min()) if kept.any() else 0}

    def describe(self) -> str:
        return f"k-map k={self.k}"


@dataclass(frozen=True)
class DeltaPresence(PrivacyModel):
    """delta-presence (Nergiz, Atzori & Clifton, 2007): the data are a sample of a population
    table, and every class holds a share ``delta = sample / population`` of the population
    records it matches with ``delta_min <= delta <= delta_max``, so an attacker who knows
    someone is in the population cannot tell with more than ``delta_max`` confidence that
    they are in the data.  Monotone without suppression when ``delta_min`` is 0 (a merged
    class's share lies between its parts'); a ``delta_min`` above 0 is not (generalizing
    merges in population records of no class of the data, whose share is 0), nor is
    suppression (a kept class merged with a suppressed one).

    >>> classes = Classes(np.array([2, 3]), {}, population=np.array([10, 4]))
    >>> DeltaPresence(0.0, 0.5).class_ok(classes, None).tolist()  # 3 of 4 people: 0.75
    [True, False]
    """

    delta_min: float
    delta_max: float
    name = "delta-presence"
    reads_population = True

    def monotone(self, suppression: bool) -> bool:
        return not suppression and self.delta_min == 0

    def __post_init__(self) -> None:
        if not 0 <= self.delta_min <= self.delta_max <= 1 or self.delta_max == 0:
            raise AnonymizationError(
                "delta-presence needs 0 <= delta_min <= delta_max <= 1 and delta_max > 0, got "
                f"{self.delta_min:g} and {self.delta_max:g}"
            )

    @staticmethod
    def shares(classes: Classes) -> np.ndarray:
        """Per class, its records' share of the population records it matches."""
        if classes.population is None:
            raise AnonymizationError("delta-presence needs a population table")
        sizes = classes.sizes.astype(float)
        return np.divide(
            sizes, classes.population, out=np.full(len(sizes), np.inf), where=classes.population > 0
        )

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        share = self.shares(classes)
        return (share >= self.delta_min - 1e-12) & (share <= self.delta_max + 1e-12)

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        share = self.shares(classes)[kept]
        if not len(share):
            return {"delta_min": 0.0, "delta_max": 0.0}
        return {"delta_min": float(share.min()), "delta_max": float(share.max())}

    def describe(self) -> str:
        return f"{self.delta_min:g} <= delta <= {self.delta_max:g} of the population"


def _counts(classes: Classes, attribute: str) -> np.ndarray:
    try:
        return classes.sensitive[attribute]
    except KeyError:
        raise AnonymizationError(
            f"sensitive attribute {attribute!r} is not among the table's sensitive columns"
        ) from None


@dataclass(frozen=True)
class DistinctLDiversity(PrivacyModel):
    """Every class holds at least ``l`` distinct values of the sensitive attribute."""

    attribute: str
    l: int  # noqa: E741
    name = "distinct l-diversity"

    def __post_init__(self) -> None:
        if self.l < 1:
            raise AnonymizationError(f"l must be at least 1, got {self.l}")

    def monotone(self, suppression: bool) -> bool:
        return True

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return (_counts(classes, self.attribute) > 0).sum(axis=1) >= self.l

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        distinct = (_counts(classes, self.attribute)[kept] > 0).sum(axis=1)
        return {"l": int(distinct.min()) if kept.any() else 0}

    def describe(self) -> str:
        return f"{self.attribute}: distinct l={self.l}"


def _entropy(counts: np.ndarray) -> np.ndarray:
    totals = counts.sum(axis=1, keepdims=True).astype(np.float64)
    p = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=1)


@dataclass(frozen=True)
class EntropyLDiversity(PrivacyModel):
    """The entropy of the sensitive values of every class is at least ``log(l)``."""

    attribute: str
    l: float  # noqa: E741
    name = "entropy l-diversity"

    def __post_init__(self) -> None:
        if self.l < 1:
            raise AnonymizationError(f"l must be at least 1, got {self.l}")

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return _entropy(_counts(classes, self.attribute)) >= math.log(self.l) - 1e-12

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        entropy = _entropy(_counts(classes, self.attribute)[kept])
        return {"l": float(np.exp(entropy.min())) if kept.any() else 0.0}

    def describe(self) -> str:
        return f"{self.attribute}: entropy l={self.l:g}"


@dataclass(frozen=True)
class RecursiveCLDiversity(PrivacyModel):
    """In every class the most frequent value occurs fewer than ``c`` times the sum of the
    ``l``-th most frequent and rarer ones: ``r_1 < c (r_l + ... + r_m)``."""

    attribute: str
    c: float
    l: int  # noqa: E741
    name = "recursive (c,l)-diversity"

    def __post_init__(self) -> None:
        if self.l < 1 or self.c <= 0:
            raise AnonymizationError("recursive (c,l)-diversity needs c > 0 and l >= 1")

    def _ratio(self, counts: np.ndarray) -> np.ndarray:
        ranked = -np.sort(-counts, axis=1)
        if ranked.shape[1] < self.l:
            return np.full(len(counts), np.inf)
        tail = ranked[:, self.l - 1 :].sum(axis=1).astype(np.float64)
        with np.errstate(divide="ignore"):
            return np.where(tail > 0, ranked[:, 0] / np.maximum(tail, 1e-300), np.inf)

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return self._ratio(_counts(classes, self.attribute)) < self.c

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        ratio = self._ratio(_counts(classes, self.attribute)[kept])
        return {"l": self.l, "c_needed": float(ratio.max()) if kept.any() else 0.0}

    def describe(self) -> str:
        return f"{self.attribute}: recursive (c={self.c:g}, l={self.l})"


DISTANCES = ("equal", "ordered", "hierarchical")
_TOLERANCE = 1e-12  # a distance this far over t still satisfies it (rounding)


def emd(
    counts: np.ndarray, info: SensitiveInfo, distance: str, sizes: np.ndarray | None = None
) -> np.ndarray:
    """Earth mover's distance of each class's sensitive distribution from the table's.

    ``equal``: every two values at distance 1 (half the L1 distance); ``ordered``: values
    ``i, j`` at distance ``|rank_i - rank_j| / (m - 1)``; ``hierarchical``: at the height of
    their lowest common ancestor over the hierarchy's height (Li et al., ICDE 2007).
    ``sizes`` are the classes' record counts (each row's sum of ``counts``) where known.
    """
    totals = counts.sum(axis=1) if sizes is None else sizes
    diff = counts / np.maximum(totals, 1)[:, None] - info.shares
    m = diff.shape[1]
    if distance == "equal" or m < 2:
        return 0.5 * np.abs(diff).sum(axis=1)
    if distance == "ordered":
        order = info.order if info.order is not None else np.arange(m)
        cumulative = np.cumsum(diff[:, order], axis=1)
        return np.abs(cumulative).sum(axis=1) / (m - 1)
    if distance == "hierarchical":
        if info.parents is None:
            raise AnonymizationError(
                f"hierarchical t-closeness on {info.name!r} needs a hierarchy for it"
            )
        # at level l the mass moved within each ancestor is min(surplus, deficit) =
        # (N_{l-1} - N_l) / 2, N_l the L1 norm of the excess per ancestor at level l (N_0 per
        # value); weighted by l / h the moves telescope (SensitiveInfo.telescoped)
        if len(info.level_starts) < 2 or not len(diff):
            return np.zeros(len(diff))
        norms = np.add.reduceat(np.abs(diff @ info.ancestors), info.level_starts, axis=1)
        return norms @ info.telescoped
    raise AnonymizationError(f"unknown t-closeness distance {distance!r}; use one of {DISTANCES}")


@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    """Every class's sensitive distribution is within ``t`` of the whole table's (EMD).

    The whole table is the *input*: suppression changes the released table's own
    distribution, so ``t`` recomputed against the released file alone can differ (the
    card's parameters say which distribution ``t`` is measured from).
    """

    attribute: str
    t: float
    distance: str = "equal"
    name = "t-closeness"

    def __post_init__(self) -> None:
        if not 0 <= self.t <= 1:
            raise AnonymizationError(f"t lies in [0, 1], got {self.t}")
        if self.distance not in DISTANCES:
            raise AnonymizationError(
                f"unknown t-closeness distance {self.distance!r}; use one of {list(DISTANCES)}"
            )

    def _distance(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        if info is None:
            raise AnonymizationError(f"t-closeness on {self.attribute!r} needs its distribution")
        return emd(_counts(classes, self.attribute), info, self.distance, classes.sizes)

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return self._distance(classes, info) <= self.t + _TOLERANCE

    def forced_share(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        """The EMD is convex: the parts a class at distance ``d`` splits into lie at ``d`` or
        more on average (weighted by size); those kept lie within ``t`` and the others at most
        ``d_max`` (a single value's distance), so a share ``(d - t) / (d_max - t)`` or more
        of the class is suppressed however it splits."""
        if info is None:
            raise AnonymizationError(f"t-closeness on {self.attribute!r} needs its distribution")
        excess = self._distance(classes, info) - (self.t + _TOLERANCE)
        room = max(info.farthest(self.distance) - self.t, _TOLERANCE)
        # (at most 1: no class lies farther than a single value's distance)
        return np.minimum(np.maximum(excess, 0.0, out=excess) / room, 1.0)

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        distance = self._distance(classes, info)[kept]
        return {"t": float(distance.max()) if kept.any() else 0.0}

    def describe(self) -> str:
        return (
            f"{self.attribute}: t={self.t:g} ({self.distance} distance, from the input "
            "table's distribution)"
        )


def _shares(counts: np.ndarray, info: SensitiveInfo | None, name: str) -> tuple[np.ndarray, ...]:
    """Per class and value: the value's share in the class, its share in the input table, and
    whether the class holds it."""
    if info is None:
        raise AnonymizationError(f"{name} on a sensitive attribute needs its distribution")
    totals = counts.sum(axis=1, keepdims=True).astype(np.float64)
    inside = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
    overall = info.totals / max(float(info.totals.sum()), 1.0)
    return inside, np.broadcast_to(overall, inside.shape), counts > 0


@dataclass(frozen=True)
class BetaLikeness(PrivacyModel):
    """No value of the sensitive attribute is much more frequent in a class than in the table:
    ``(q - p) / p <= beta`` for each value a class holds (share ``q`` in the class, ``p`` in
    the input table); ``enhanced`` bounds it by ``min(beta, -ln p)`` (Cao & Karras, 2012).

    >>> info = SensitiveInfo("s", ("a", "b"), np.array([50, 50]))
    >>> classes = Classes(np.array([4, 4]), {"s": np.array([[2, 2], [3, 1]])})
    >>> BetaLikeness("s", 0.4).class_ok(classes, info).tolist()  # (0.75 - 0.5) / 0.5 = 0.5
    [True, False]
    """

    attribute: str
    beta: float
    enhanced: bool = False

    def __post_init__(self) -> None:
        if not self.beta > 0:
            raise AnonymizationError(f"beta must be above 0, got {self.beta}")

    @property
    def name(self) -> str:  # type: ignore[override]
        return "enhanced beta-likeness" if self.enhanced else "beta-likeness"

    def _gains(self, counts: np.ndarray, info: SensitiveInfo | None) -> tuple[np.ndarray, ...]:
        """Per class and value: the value's relative gain over the table (0 where the class
        does not hold it), and its share in the table."""
        inside, overall, held = _shares(counts, info, self.name)
        gain = np.divide(inside - overall, overall, out=np.zeros(inside.shape), where=held)
        return gain, overall, held

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        gain, overall, held = self._gains(_counts(classes, self.attribute), info)
        bound = np.full(gain.shape, self.beta)
        if self.enhanced:
            with np.errstate(divide="ignore"):
                bound = np.minimum(bound, -np.log(np.where(held, overall, 1.0)))
        return np.asarray((gain <= bound + 1e-12).all(axis=1))

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        gain, _, _ = self._gains(_counts(classes, self.attribute)[kept], info)
        return {"beta": float(gain.max(initial=0.0))}

    def describe(self) -> str:
        kind = "enhanced " if self.enhanced else ""
        return f"{self.attribute}: {kind}beta={self.beta:g} (from the input table's distribution)"


@dataclass(frozen=True)
class DeltaDisclosure(PrivacyModel):
    """delta-disclosure privacy (Brickell & Shmatikov, 2008): ``|log2(q / p)| < delta`` for
    each value a class holds (share ``q`` in the class, ``p`` in the input table).  Not
    monotone: merging classes can dilute a value below its share in both.

    >>> info = SensitiveInfo("s", ("a", "b"), np.array([50, 50]))
    >>> classes = Classes(np.array([4, 4]), {"s": np.array([[2, 2], [3, 1]])})
    >>> DeltaDisclosure("s", 1.0).class_ok(classes, info).tolist()  # log2(0.25 / 0.5) = -1
    [True, False]
    """

    attribute: str
    delta: float
    name = "delta-disclosure privacy"

    def __post_init__(self) -> None:
        if not self.delta > 0:
            raise AnonymizationError(f"delta must be above 0, got {self.delta}")

    def monotone(self, suppression: bool) -> bool:
        return False

    def _disclosure(self, counts: np.ndarray, info: SensitiveInfo | None) -> np.ndarray:
        inside, overall, held = _shares(counts, info, self.name)
        ratio = np.divide(inside, overall, out=np.ones(inside.shape), where=held)
        return np.abs(np.log2(ratio)).max(axis=1, initial=0.0)

    def class_ok(self, classes: Classes, info: SensitiveInfo | None) -> np.ndarray:
        return self._disclosure(_counts(classes, self.attribute), info) < self.delta

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        worst = self._disclosure(_counts(classes, self.attribute)[kept], info)
        return {"delta": float(worst.max(initial=0.0))}

    def describe(self) -> str:
        return f"{self.attribute}: delta={self.delta:g} (from the input table's distribution)"


class _ShareAtMost(PrivacyModel):
    """A table-wide model: a share of the released table (:meth:`share`) at most
    ``threshold``, reported under ``key``."""

    threshold: float
    key = "share"
    per_class = False

    def share(self, classes: Classes, kept: np.ndarray) -> float:
        raise NotImplementedError

    def _check_threshold(self) -> None:
        if not 0 <= self.threshold <= 1:
            raise AnonymizationError(f"a uniqueness threshold lies in [0, 1], got {self.threshold}")

    def table_ok(self, classes: Classes, kept: np.ndarray) -> bool:
        return self.share(classes, kept) <= self.threshold + 1e-12

    def achieved(
        self, classes: Classes, kept: np.ndarray, info: SensitiveInfo | None
    ) -> dict[str, float]:
        return {self.key: self.share(classes, kept)}


@dataclass(frozen=True)
class SampleUniqueness(_ShareAtMost):
    """At most a share ``threshold`` of the released records is alone in its class."""

    threshold: float
    name = "sample uniqueness"
    key = "sample_uniqueness"

    def __post_init__(self) -> None:
        self._check_threshold()

    def share(self, classes: Classes, kept: np.ndarray) -> float:
        sizes = classes.sizes[kept]
        return float((sizes == 1).sum()) / max(int(sizes.sum()), 1)

    def describe(self) -> str:
        return f"sample uniques <= {self.threshold:g} of the records"


@dataclass(frozen=True)
class PopulationUniqueness(_ShareAtMost):
    """At most a share ``threshold`` of the population (``population_size`` people) is
    estimated unique on the released classes (Dankar et al.'s choice among the Pitman,
    Zayatz and SNB estimates; :mod:`safeshare.evaluate.uniqueness`).  Not monotone: the
    estimates are fitted to the class sizes."""

    threshold: float
    population_size: int
    name = "population uniqueness"
    key = "population_uniqueness"

    def __post_init__(self) -> None:
        self._check_threshold()
        if self.population_size < 1:
            raise AnonymizationError(
                f"the population size must be a positive count, got {self.population_size}"
            )

    def monotone(self, suppression: bool) -> bool:
        return False

    def share(self, classes: Classes, kept: np.ndarray) -> float:
        from safeshare.evaluate.uniqueness import dankar_share

        sizes = classes.sizes[kept]
        if not len(sizes):
            return 0.0
        return dankar_share(sizes, max(self.population_size, int(sizes.sum())))

    def describe(self) -> str:
        return (
            f"population uniques <= {self.threshold:g} of {self.population_size:,} people "
            "(estimated)"
        )
