"""The Anonymizer: a config in, an anonymized table and its account out.

``Anonymizer(config).fit(frame_or_table)`` reads the quasi-identifiers through their
hierarchies, checks the problem can be solved, searches for the optimal transformation (or
partitions locally), applies it, suppresses what still violates the models, transforms the
identifier columns, and returns an immutable :class:`AnonymizationResult`.

>>> import pandas as pd
>>> frame = pd.DataFrame({"zip": ["13053", "13068", "13068", "13053", "14850", "14853"],
...                       "disease": ["flu", "cold", "flu", "cold", "flu", "cold"]})
>>> config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}},
...           "sensitive": ["disease"], "privacy": {"k": 2}}
>>> result = Anonymizer(config).fit(frame)
>>> result.transformation, result.frame["zip"].tolist()
({'zip': 1}, ['1305*', '1306*', '1306*', '1305*', '1485*', '1485*'])
>>> result.models[0].achieved
{'k': 2}
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.anonymize import hierarchy as builders
from safeshare.anonymize.config import AnonymizeConfig, HierarchySpec
from safeshare.anonymize.hierarchy import TOP, Hierarchy, HierarchyError
from safeshare.anonymize.models import (
    AnonymizationError,
    Classes,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    KMap,
    MaxRisk,
    NoSolutionError,
    PrivacyModel,
    RecursiveCLDiversity,
    SensitiveInfo,
    TCloseness,
)
from safeshare.anonymize.mondrian import mondrian
from safeshare.anonymize.quality import QualityScores
from safeshare.anonymize.search import Problem, optimal_search
from safeshare.anonymize.transforms import (
    SecretKey,
    code_extremes,
    date_shift,
    mask,
    pseudonymize,
)
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.table import Table
from safeshare.engine import default_engine
from safeshare.errors import InputError

MISSING_SENSITIVE = "(missing)"


@dataclass(frozen=True)
class ModelOutcome:
    """One privacy model, whether the released table satisfies it, and what it reaches."""

    name: str
    parameters: str
    satisfied: bool
    achieved: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "parameters": self.parameters,
            "satisfied": self.satisfied,
            "achieved": self.achieved,
        }


@dataclass(frozen=True)
class ClassStatistics:
    """The equivalence classes of the released records (aggregates only)."""

    count: int
    smallest: int
    largest: int
    mean: float
    median: float
    histogram: dict[str, int]

    @classmethod
    def of(cls, sizes: np.ndarray) -> ClassStatistics:
        sizes = np.asarray(sizes, dtype=np.int64)
        edges = [1, 2, 5, 10, 20, 50, 100, 1000, 10_000]
        histogram: dict[str, int] = {}
        for low, high in zip(edges, [*edges[1:], math.inf], strict=True):
            label = (
                f"{low}"
                if high == low + 1
                else (f"{low}+" if high == math.inf else f"{low}-{int(high) - 1}")
            )
            histogram[label] = int(((sizes >= low) & (sizes < high)).sum())
        return cls(
            len(sizes),
            int(sizes.min()) if len(sizes) else 0,
            int(sizes.max()) if len(sizes) else 0,
            float(sizes.mean()) if len(sizes) else 0.0,
            float(np.median(sizes)) if len(sizes) else 0.0,
            histogram,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "smallest": self.smallest,
            "largest": self.largest,
            "mean": self.mean,
            "median": self.median,
            "size_histogram": self.histogram,
        }


@dataclass(frozen=True)
class AnonymizationResult:
    """What an anonymization produced (the frame is a fresh copy; do not share the input)."""

    frame: pd.DataFrame
    transformation: dict[str, int | None]
    hierarchies: dict[str, dict[str, Any]]
    transforms: dict[str, str]
    classes: ClassStatistics
    class_sizes: np.ndarray
    quality: QualityScores
    models: tuple[ModelOutcome, ...]
    suppressed: int
    rows_in: int
    rows_out: int
    search: dict[str, Any]
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    table: Table | None = None

    @property
    def satisfied(self) -> bool:
        return all(m.satisfied for m in self.models)

    def to_dict(self) -> dict[str, Any]:
        return {
            "transformation": self.transformation,
            "hierarchies": self.hierarchies,
            "transforms": self.transforms,
            "classes": self.classes.to_dict(),
            "quality": self.quality.to_dict(),
            "models": [m.to_dict() for m in self.models],
            "suppressed": self.suppressed,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "search": self.search,
        }


class Anonymizer:
    """Anonymize a table under a config (see :mod:`safeshare.anonymize.config`).

    ``hierarchies`` gives :class:`Hierarchy` objects directly (they win over the config's);
    ``population`` is the k-map population table when the config does not name a file.
    """

    def __init__(
        self,
        config: AnonymizeConfig | Mapping[str, Any] | str | Path,
        *,
        hierarchies: Mapping[str, Hierarchy] | None = None,
        population: pd.DataFrame | None = None,
    ) -> None:
        if isinstance(config, str | Path):
            config = AnonymizeConfig.load(config)
        elif not isinstance(config, AnonymizeConfig):
            config = AnonymizeConfig.from_dict(dict(config))
        self.config = config
        self.hierarchies = dict(hierarchies or {})
        self.population = population

    # ---- the job ----------------------------------------------------------------------

    def fit(
        self, data: pd.DataFrame | Table, progress: Progress | None = None
    ) -> AnonymizationResult:
        report = progress or no_progress
        config = self.config
        frame = _as_frame(data)
        n = len(frame)
        if n == 0:
            raise InputError("the table has no records; give at least one")
        qis = list(config.quasi_identifiers)
        sensitive = list(config.sensitive)
        needed = [*qis, *sensitive, *config.transforms]
        for spec in config.transforms.values():
            if spec.date_shift is not None:
                needed.append(spec.date_shift.subject)
        absent = [c for c in dict.fromkeys(needed) if c not in frame.columns]
        if absent:
            raise InputError(
                f"the config names columns {absent} that the data do not have; "
                f"the data have {list(frame.columns)}"
            )
        report("reading hierarchies", 0.05)
        hierarchies = [self._hierarchy(name, frame[name]) for name in qis]
        codes = [h.encode(frame[name]) for h, name in zip(hierarchies, qis, strict=True)]
        lo, hi = self._levels(hierarchies)
        infos, sens_codes = self._sensitive(frame)
        models = config.privacy.models()
        population = None
        if config.privacy.k_map is not None:
            models.append(KMap(config.privacy.k_map.k))
            population = self._population(hierarchies)
        _check_solvable(models, n, infos, population)

        report("searching", 0.2)
        started = time.perf_counter()
        problem = Problem.build(
            hierarchies,
            codes,
            models=models,
            # only the sensitive columns a model reads are carried through the search
            sensitive={
                name: codes_
                for name, codes_ in sens_codes.items()
                if any(getattr(m, "attribute", None) == name for m in models)
            },
            infos=infos,
            suppression_limit=config.suppression_limit,
            lo=lo,
            hi=hi,
            population=population,
        )
        if config.search == "optimal":
            found = optimal_search(problem, config.quality)
            row_class, class_levels, classes, kept = _full_domain(problem, found.node)
            recoded = 0
            if config.recode_suppressed and not kept.all():
                row_class, class_levels, classes, kept, recoded = _recode_suppressed(
                    problem, found.node, row_class, class_levels, classes, kept
                )
            search: dict[str, Any] = {
                "method": "optimal full-domain generalization (lattice search, exact)",
                "quality_model": config.quality,
                "score": found.score,
                "transformations_checked": found.checked,
                "lattice_size": found.lattice_size,
                "ties": [dict(zip(qis, node, strict=True)) for node in found.ties],
            }
            if config.recode_suppressed:
                search["recoded_records"] = recoded
            transformation: dict[str, int | None] = dict(zip(qis, found.node, strict=True))
        else:
            recoding = mondrian(problem)
            row_class, class_levels, classes = (
                recoding.row_class,
                recoding.class_levels,
                recoding.classes,
            )
            kept = np.ones(len(classes), dtype=bool)
            search = {
                "method": "local recoding (Mondrian top-down partitioning on the hierarchies)",
                "quality_model": config.quality,
                "partitions": len(classes),
                "splits": recoding.splits,
            }
            transformation = {
                name: (
                    int(class_levels[0, c]) if len(set(class_levels[:, c].tolist())) == 1 else None
                )
                for c, name in enumerate(qis)
            }
        search["seconds"] = time.perf_counter() - started

        report("applying", 0.7)
        record_class = row_class[problem.record_rows]
        record_kept = kept[record_class]
        suppressed = int((~record_kept).sum())
        out, table = self._release(
            frame, problem, hierarchies, qis, record_class, class_levels, record_kept
        )
        sizes = classes.sizes[kept]
        quality = problem.quality.scores(
            [class_levels[kept, c] for c in range(len(qis))],
            [
                _labels_at(
                    problem, c, class_levels[kept, c], _rep_codes(problem, row_class, c)[kept]
                )
                for c in range(len(qis))
            ],
            sizes,
            suppressed,
        )
        outcomes = tuple(
            ModelOutcome(
                m.name,
                m.describe(),
                _holds(m, classes, kept, infos),
                m.achieved(classes, kept, infos.get(getattr(m, "attribute", ""))),
            )
            for m in models
        )
        engine_sizes = _engine_class_sizes(table, qis)
        recoded_any = bool(search.get("recoded_records"))
        # recoded parts may share labels with a released class (they then merge): totals only
        mismatch = (
            int(engine_sizes.sum()) != int(sizes.sum())
            if recoded_any
            else sorted(engine_sizes.tolist()) != sorted(sizes.tolist())
        )
        if config.search == "optimal" and mismatch:
            raise RuntimeError(
                "internal error: the released classes counted by the engine differ from the "
                "search's; please report this"
            )
        transforms = {name: spec.kind for name, spec in config.transforms.items()}
        columns = self._columns(frame, qis, sensitive, transforms)
        report("done", 1.0)
        return AnonymizationResult(
            frame=out,
            transformation=transformation,
            hierarchies={
                name: {"height": h.height, "source": h.source, "values": len(h.values)}
                for name, h in zip(qis, hierarchies, strict=True)
            },
            transforms=transforms,
            classes=ClassStatistics.of(engine_sizes),
            class_sizes=np.sort(engine_sizes),
            quality=quality,
            models=outcomes,
            suppressed=suppressed,
            rows_in=n,
            rows_out=len(out),
            search=search,
            columns=columns,
            table=table,
        )

    # ---- pieces -----------------------------------------------------------------------

    def _hierarchy(self, name: str, values: pd.Series) -> Hierarchy:
        if name in self.hierarchies:
            h = self.hierarchies[name]
            return h if h.column == name else Hierarchy(name, h.values, h.labels, h.maps, h.source)
        spec = self.config.quasi_identifiers[name].hierarchy
        if spec is None:
            raise HierarchyError(
                f"quasi-identifier {name!r} has no hierarchy; give one (a CSV file, intervals, "
                "cuts, dates, mask or groups) or write `hierarchy: auto` for a default one"
            )
        return self._build(name, spec, values)

    def _build(self, name: str, spec: HierarchySpec, values: pd.Series) -> Hierarchy:
        present = values.dropna().astype(str).str.strip()
        kind = spec.kind
        if kind == "csv":
            assert spec.csv is not None
            return Hierarchy.from_csv(name, self.config.resolve(spec.csv))
        if kind == "rows":
            assert spec.rows is not None
            return Hierarchy.from_rows(name, spec.rows, source="inline")
        if kind == "intervals":
            assert spec.intervals is not None
            return builders.intervals(name, present, spec.intervals, origin=spec.origin)
        if kind == "cuts":
            assert spec.cuts is not None
            return builders.cuts(name, present, spec.cuts)
        if kind == "dates":
            return builders.dates(name, present)
        if kind == "mask":
            return builders.masking(name, present)
        if kind == "groups":
            assert spec.groups is not None
            return builders.groupings(name, present, spec.groups)
        return builders.automatic(name, present)

    def _levels(self, hierarchies: list[Hierarchy]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        lo, hi = [], []
        for h in hierarchies:
            spec = self.config.quasi_identifiers[h.column]
            top = h.height if spec.max_level is None else spec.max_level
            if top > h.height or spec.min_level > h.height:
                raise HierarchyError(
                    f"quasi-identifier {h.column!r}: its hierarchy has levels 0..{h.height}, "
                    f"but the config asks for levels {spec.min_level}..{top}"
                )
            lo.append(spec.min_level)
            hi.append(top)
        return tuple(lo), tuple(hi)

    def _sensitive(
        self, frame: pd.DataFrame
    ) -> tuple[dict[str, SensitiveInfo], dict[str, np.ndarray]]:
        infos: dict[str, SensitiveInfo] = {}
        codes: dict[str, np.ndarray] = {}
        for name, spec in self.config.sensitive.items():
            parents = None
            if spec.hierarchy is not None:
                h = self._build(name, spec.hierarchy, frame[name])
                code = h.encode(frame[name].where(frame[name].notna(), None))
                labels = h.values
                parents = tuple(
                    _parent_map(h.maps[level], h.maps[level + 1]) for level in range(h.height)
                )
            else:
                positions, uniques = pd.factorize(frame[name], use_na_sentinel=True)
                texts = [str(u).strip() for u in uniques]
                if (positions < 0).any():
                    texts.append(MISSING_SENSITIVE)
                    positions = np.where(positions < 0, len(texts) - 1, positions)
                labels = tuple(sorted(set(texts), key=_sort_key))
                index = {v: i for i, v in enumerate(labels)}
                lookup = np.array([index[t] for t in texts], dtype=np.int64)
                code = lookup[positions]
            order = None
            if spec.order is not None:
                position = {v: i for i, v in enumerate(spec.order)}
                unknown = [v for v in labels if v not in position]
                if unknown:
                    raise AnonymizationError(
                        f"sensitive attribute {name!r}: the value {unknown[0]!r} is not in its "
                        "order; list every value"
                    )
                order = np.argsort([position[v] for v in labels], kind="stable")
            else:
                order = np.asarray(
                    sorted(range(len(labels)), key=lambda i: _sort_key(labels[i])), dtype=np.int64
                )
            totals = np.bincount(code, minlength=len(labels)).astype(np.int64)
            infos[name] = SensitiveInfo(name, tuple(labels), totals, order, parents)
            codes[name] = np.asarray(code, dtype=np.int64)
        return infos, codes

    def _population(self, hierarchies: list[Hierarchy]) -> list[np.ndarray]:
        frame = self.population
        if frame is None:
            spec = self.config.privacy.k_map
            assert spec is not None
            from safeshare.data.readers import read_frame

            frame = read_frame(self.config.resolve(spec.population))
        absent = [h.column for h in hierarchies if h.column not in frame.columns]
        if absent:
            raise InputError(f"the k-map population table lacks the quasi-identifiers {absent}")
        return [h.encode(frame[h.column]) for h in hierarchies]

    def _release(
        self,
        frame: pd.DataFrame,
        problem: Problem,
        hierarchies: list[Hierarchy],
        qis: list[str],
        record_class: np.ndarray,
        class_levels: np.ndarray,
        record_kept: np.ndarray,
    ) -> tuple[pd.DataFrame, Table]:
        config = self.config
        columns: dict[str, np.ndarray] = {}
        categories: dict[str, list[str]] = {}
        released: dict[str, Any] = {}
        keep = record_kept
        masking = config.suppressed_records == "mask" and not keep.all()
        for c, (name, h) in enumerate(zip(qis, hierarchies, strict=True)):
            level0 = problem.codes[c][problem.record_rows]
            levels = class_levels[record_class, c]
            labels, label_codes = _record_labels(h, level0, levels)
            columns[name] = label_codes
            categories[name] = labels
            shown = label_codes
            if masking:
                if TOP not in labels:
                    labels = [*labels, TOP]
                shown = np.where(keep, label_codes, labels.index(TOP))
            released[name] = pd.Categorical.from_codes(
                shown, categories=pd.Index(labels), validate=False
            )
        out = pd.DataFrame(
            {name: released.get(name, frame[name]) for name in frame.columns}, index=frame.index
        )
        if not keep.all() and config.suppressed_records == "remove":
            out = out.loc[keep]
        domain = Domain(
            tuple(
                Column(
                    name,
                    Kind.CATEGORICAL,
                    Role.QUASI_IDENTIFIER,
                    tuple(categories[name]),
                    other=False,
                    missing=False,
                )
                for name in qis
            )
        )
        table = Table({name: columns[name][keep] for name in qis}, domain)
        for name, spec in config.transforms.items():
            if spec.drop:
                out = out.drop(columns=[name])
            elif spec.pseudonymize is not None:
                key = SecretKey.load(
                    key_file=config.resolve(spec.pseudonymize.key_file)
                    if spec.pseudonymize.key_file
                    else None,
                    key_env=spec.pseudonymize.key_env,
                )
                out[name] = pseudonymize(
                    out[name], key, length=spec.pseudonymize.length, prefix=spec.pseudonymize.prefix
                )
            elif spec.mask is not None:
                out[name] = mask(
                    out[name], keep=spec.mask.keep, keep_end=spec.mask.keep_end, char=spec.mask.char
                )
            elif spec.date_shift is not None:
                shift = spec.date_shift
                key = SecretKey.load(
                    key_file=config.resolve(shift.key_file) if shift.key_file else None,
                    key_env=shift.key_env,
                )
                out[name] = date_shift(out[name], out[shift.subject], key, max_days=shift.max_days)
            else:
                out[name] = code_extremes(out[name], top=spec.top_code, bottom=spec.bottom_code)
        if config.other_columns == "drop":
            named = {*qis, *config.sensitive, *config.transforms}
            out = out[[c for c in out.columns if c in named]]
        return out.reset_index(drop=True), table

    def _columns(
        self, frame: pd.DataFrame, qis: list[str], sensitive: list[str], transforms: dict[str, str]
    ) -> dict[str, dict[str, Any]]:
        columns: dict[str, dict[str, Any]] = {}
        for name in frame.columns:
            if name in qis:
                entry = {
                    "kind": "categorical",
                    "role": "quasi_identifier",
                    "transform": "generalized",
                }
            elif name in sensitive:
                entry = {"kind": "categorical", "role": "sensitive", "transform": "kept"}
            elif name in transforms:
                entry = {"kind": "text", "role": "identifier", "transform": transforms[name]}
            elif self.config.other_columns == "drop":
                entry = {"kind": "unknown", "role": "other", "transform": "drop"}
            else:
                entry = {"kind": "unknown", "role": "other", "transform": "kept (not protected)"}
            columns[str(name)] = entry
        return columns


# ---- helpers ------------------------------------------------------------------------------


def _as_frame(data: pd.DataFrame | Table) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        frame = data.copy()
        frame.columns = [str(c) for c in frame.columns]
        return frame
    if isinstance(data, Table):
        out = {}
        for column in data.domain:
            labels = np.array(column.labels(), dtype=object)
            values = labels[data.column(column.name).astype(np.int64)]
            if column.missing_code is not None:
                values[data.column(column.name) == column.missing_code] = None
            out[column.name] = values
        return pd.DataFrame(out)
    raise InputError(
        f"anonymize a pandas DataFrame or a safeshare Table, not {type(data).__name__}"
    )


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _parent_map(child: np.ndarray, parent: np.ndarray) -> np.ndarray:
    size = int(child.max()) + 1 if len(child) else 0
    out = np.zeros(size, dtype=np.int64)
    out[child] = parent
    return out


def _check_solvable(
    models: list[PrivacyModel],
    n: int,
    infos: Mapping[str, SensitiveInfo],
    population: list[np.ndarray] | None,
) -> None:
    for model in models:
        if isinstance(model, KAnonymity) and model.k > n:
            raise AnonymizationError(
                f"k={model.k} is larger than the table ({n} records); no class can hold {model.k} "
                "records. Lower k or anonymize more records"
            )
        if isinstance(model, MaxRisk) and model.k > n:
            raise AnonymizationError(
                f"a maximum risk of {model.threshold:g} needs classes of {model.k} records but the "
                f"table has {n}"
            )
        if isinstance(model, KMap) and population is not None and model.k > len(population[0]):
            raise AnonymizationError(
                f"k-map k={model.k} is larger than the population table ({len(population[0])} records)"
            )
        attribute = getattr(model, "attribute", None)
        if attribute is None:
            continue
        info = infos[attribute]
        distinct = int((info.totals > 0).sum())
        if isinstance(model, DistinctLDiversity | RecursiveCLDiversity) and distinct < model.l:
            raise AnonymizationError(
                f"{model.name} with l={model.l} needs {model.l} distinct values of {attribute!r} "
                f"in a class, but the column has only {distinct}; lower l"
            )
        if isinstance(model, EntropyLDiversity):
            p = info.totals[info.totals > 0] / info.totals.sum()
            reachable = float(np.exp(-(p * np.log(p)).sum()))
            if reachable < model.l - 1e-9:
                raise AnonymizationError(
                    f"entropy l-diversity with l={model.l:g} on {attribute!r} is unreachable: even "
                    f"the whole table reaches only l={reachable:.3g} ({distinct} distinct values)"
                )
        if (
            isinstance(model, TCloseness)
            and model.distance == "hierarchical"
            and info.parents is None
        ):
            raise AnonymizationError(
                f"hierarchical t-closeness on {attribute!r} needs a hierarchy for it under "
                "sensitive"
            )


def _full_domain(
    problem: Problem, node: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, Classes, np.ndarray]:
    """Per distinct row its class at ``node``, the classes' levels, classes and kept flags."""
    from safeshare.anonymize.search import Evaluator

    evaluator = Evaluator(problem)
    assessment = evaluator.assess(node)
    groups = assessment.groups
    strides, space = [], 1
    for c in range(len(node) - 1, -1, -1):
        strides.append(space)
        space *= problem.level_sizes[c][node[c]]
    strides = strides[::-1]

    def keys(codes: list[np.ndarray]) -> np.ndarray:
        key = np.zeros(len(codes[0]) if codes else 0, dtype=object if space >= 2**62 else np.int64)
        for c, level in enumerate(node):
            key = key + problem.maps[c][level][codes[c]] * strides[c]
        return key

    class_keys = keys([groups.rep[:, c] for c in range(len(node))])
    order = np.argsort(class_keys, kind="stable")
    row_keys = keys(list(problem.codes))
    row_class = order[np.searchsorted(class_keys[order], row_keys)]
    class_levels = np.tile(np.asarray(node, dtype=np.int64), (len(groups), 1))
    return row_class.astype(np.int64), class_levels, groups.classes, assessment.kept


def _recode_suppressed(
    problem: Problem,
    node: tuple[int, ...],
    row_class: np.ndarray,
    class_levels: np.ndarray,
    classes: Classes,
    kept: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, Classes, np.ndarray, int]:
    """Partition the suppressed rows locally (levels from ``node`` up); release the parts.

    The suppressed records are partitioned among themselves, top-down along the hierarchies
    and never finer than ``node``; every part satisfies every per-class model, so the records
    are released instead of suppressed.  (A released part whose labels equal those of a
    class already released merges with it, which only helps every model here.)  When even
    all of them together break a model, they stay suppressed.
    """
    if any(isinstance(m, KMap) for m in problem.models):
        return row_class, class_levels, classes, kept, 0
    rows = np.flatnonzero(~kept[row_class])
    sub = Problem(
        problem.hierarchies,
        [c[rows] for c in problem.codes],
        problem.weights[rows],
        [m for m in problem.models if m.per_class],
        {name: counts[rows] for name, counts in problem.sensitive.items()},
        problem.infos,
        0.0,
        node,
        problem.lattice.hi,
    )
    try:
        recoding = mondrian(sub)
    except NoSolutionError:
        return row_class, class_levels, classes, kept, 0
    offset = len(classes)
    row_class_before = row_class
    row_class = row_class.copy()
    row_class[rows] = offset + recoding.row_class
    merged = Classes(
        np.concatenate([classes.sizes, recoding.classes.sizes]),
        {
            name: np.concatenate([counts, recoding.classes.sensitive[name]])
            for name, counts in classes.sensitive.items()
        },
    )
    levels = np.concatenate([class_levels, recoding.class_levels])
    # the suppressed classes are now empty and stay dropped
    released = np.concatenate([kept, np.ones(len(recoding.classes), dtype=bool)])
    if not all(m.table_ok(merged, released) for m in problem.models if not m.per_class):
        return row_class_before, class_levels, classes, kept, 0  # e.g. average risk
    return row_class, levels, merged, released, int(recoding.classes.sizes.sum())


def _rep_codes(problem: Problem, row_class: np.ndarray, c: int) -> np.ndarray:
    """A level-0 code of one row of each class, for column ``c``."""
    classes = int(row_class.max()) + 1 if len(row_class) else 0
    rep = np.zeros(classes, dtype=np.int64)
    rep[row_class] = problem.codes[c]
    return rep


def _labels_at(problem: Problem, c: int, levels: np.ndarray, rep: np.ndarray) -> np.ndarray:
    if len(levels) and levels.min() == levels.max():
        return problem.maps[c][int(levels[0])][rep]
    labels = np.empty(len(levels), dtype=np.int64)
    for level in np.unique(levels):
        at = levels == level
        labels[at] = problem.maps[c][int(level)][rep[at]]
    return labels


def _record_labels(
    h: Hierarchy, level0: np.ndarray, levels: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """Each record's label text codes (one category list across the levels used)."""
    if len(levels) and levels.min() == levels.max():
        level = int(levels[0])
        return list(h.labels[level]), h.maps[level][level0].astype(np.int64)
    position: dict[str, int] = {}
    out = np.empty(len(level0), dtype=np.int64)
    for level in np.unique(levels):
        at = levels == level
        remap = np.array(
            [position.setdefault(label, len(position)) for label in h.labels[int(level)]],
            dtype=np.int64,
        )
        out[at] = remap[h.maps[int(level)][level0[at]]]
    return list(position), out


def _holds(
    model: PrivacyModel, classes: Classes, kept: np.ndarray, infos: Mapping[str, SensitiveInfo]
) -> bool:
    if model.per_class:
        ok = model.class_ok(classes, infos.get(getattr(model, "attribute", "")))
        return bool(ok[kept].all())
    return model.table_ok(classes, kept)


def _engine_class_sizes(table: Table, qis: list[str]) -> np.ndarray:
    """The class sizes of the released records, counted by the engine (a cross-check)."""
    return default_engine().group_sizes(table, qis)
