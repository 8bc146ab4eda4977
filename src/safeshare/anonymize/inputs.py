"""The inputs of an anonymization, read through its config.

The quasi-identifiers' hierarchies (given, or built as the config says) and the levels the
search may use; the sensitive attributes' codes and value counts; the population's codes
(k-map, delta-presence); and a check that the privacy models can be met at all.

>>> import pandas as pd
>>> from safeshare.anonymize.config import AnonymizeConfig
>>> config = AnonymizeConfig.from_dict({"quasi_identifiers": {"zip": {"hierarchy": "mask"}},
...                                     "sensitive": ["disease"], "privacy": {"k": 2}})
>>> frame = pd.DataFrame({"zip": ["13053", "13068", "14850"], "disease": ["flu", None, "flu"]})
>>> hierarchy = hierarchy_for(config, "zip", frame["zip"], {})
>>> hierarchy.height, level_bounds(config, [hierarchy])
(3, ((0,), (3,)))
>>> infos, codes = sensitive_columns(config, frame)
>>> infos["disease"].values, codes["disease"].tolist()
(('(missing)', 'flu'), [1, 0, 1])
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from safeshare.anonymize import hierarchy as builders
from safeshare.anonymize.config import AnonymizeConfig, HierarchySpec
from safeshare.anonymize.hierarchy import Hierarchy, HierarchyError
from safeshare.anonymize.models import (
    AnonymizationError,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    KMap,
    MaxRisk,
    PrivacyModel,
    RecursiveCLDiversity,
    SensitiveInfo,
    TCloseness,
)
from safeshare.errors import InputError

MISSING_SENSITIVE = "(missing)"


def hierarchy_for(
    config: AnonymizeConfig, name: str, values: pd.Series, given: Mapping[str, Hierarchy]
) -> Hierarchy:
    """The hierarchy of quasi-identifier ``name``: from ``given`` (it wins), else the config's."""
    if name in given:
        h = given[name]
        return h if h.column == name else Hierarchy(name, h.values, h.labels, h.maps, h.source)
    spec = config.quasi_identifiers[name].hierarchy
    if spec is None:
        raise HierarchyError(
            f"quasi-identifier {name!r} has no hierarchy; give one (a CSV file, intervals, "
            "cuts, dates, mask or groups) or write `hierarchy: auto` for a default one"
        )
    return build_hierarchy(config, name, spec, values)


def build_hierarchy(
    config: AnonymizeConfig, name: str, spec: HierarchySpec, values: pd.Series
) -> Hierarchy:
    """The hierarchy ``spec`` describes (exactly one of its kinds is given; see the config)."""
    present = values.astype(str).str.strip().where(values.notna(), None)
    if spec.csv is not None:
        return Hierarchy.from_csv(name, config.resolve(spec.csv))
    if spec.rows is not None:
        return Hierarchy.from_rows(name, spec.rows, source="inline")
    if spec.intervals is not None:
        return builders.intervals(name, present, spec.intervals, origin=spec.origin)
    if spec.cuts is not None:
        return builders.cuts(name, present, spec.cuts)
    if spec.dates:
        return builders.dates(name, present, spec.date_levels)
    if spec.mask:
        return builders.masking(name, present)
    if spec.groups is not None:
        return builders.groupings(name, present, spec.groups)
    return builders.automatic(name, present)


def level_bounds(
    config: AnonymizeConfig, hierarchies: list[Hierarchy]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The lowest and highest level the search may use, per quasi-identifier."""
    lo, hi = [], []
    for h in hierarchies:
        spec = config.quasi_identifiers[h.column]
        top = h.height if spec.max_level is None else spec.max_level
        if top > h.height or spec.min_level > h.height:
            raise HierarchyError(
                f"quasi-identifier {h.column!r}: its hierarchy has levels 0..{h.height}, "
                f"but the config asks for levels {spec.min_level}..{top}"
            )
        lo.append(spec.min_level)
        hi.append(top)
    return tuple(lo), tuple(hi)


def sensitive_columns(
    config: AnonymizeConfig,
    frame: pd.DataFrame,
    weights: np.ndarray | None = None,
    only: Collection[str] | None = None,
    given: Mapping[str, Hierarchy] | None = None,
) -> tuple[dict[str, SensitiveInfo], dict[str, np.ndarray]]:
    """Per sensitive attribute, what the models need to know of it, and each record's code.

    ``weights`` counts the records each row of ``frame`` stands for (default 1 each);
    ``only`` limits the attributes read (default: every sensitive attribute of the config);
    ``given`` holds hierarchies built already (they win over the config's).
    """
    infos: dict[str, SensitiveInfo] = {}
    codes: dict[str, np.ndarray] = {}
    for name, spec in config.sensitive.items():
        if only is not None and name not in only:
            continue
        parents = None
        h = (given or {}).get(name)
        if h is None and spec.hierarchy is not None:
            h = build_hierarchy(config, name, spec.hierarchy, frame[name])
        if h is not None:
            column = frame[name]
            if column.hasnans:
                column = column.where(column.notna(), None)
            code = h.encode(column, weights=weights)
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
                raise AnonymizationError(  # (counted: an error never quotes a value of the data)
                    f"sensitive attribute {name!r}: {len(unknown)} distinct value(s) of the data "
                    "are not in its order; list every value of the column"
                )
            order = np.argsort([position[v] for v in labels], kind="stable")
        else:
            _check_orderable(config, name, labels)
            order = np.asarray(
                sorted(range(len(labels)), key=lambda i: _sort_key(labels[i])), dtype=np.int64
            )
        totals = np.rint(np.bincount(code, weights=weights, minlength=len(labels)))
        totals = totals.astype(np.int64)
        infos[name] = SensitiveInfo(name, tuple(labels), totals, order, parents)
        codes[name] = np.asarray(code, dtype=np.int64)
    return infos, codes


def read_population(config: AnonymizeConfig, frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The population table (k-map, delta-presence): ``frame``, else the file the config
    names; None when no model reads one."""
    path = config.privacy.population
    if path is None:
        return None
    if frame is None:
        from safeshare.data.readers import read_frame

        frame = read_frame(config.resolve(path))
    absent = [name for name in config.quasi_identifiers if name not in frame.columns]
    if absent:
        raise InputError(f"the population table lacks the quasi-identifiers {absent}")
    return frame


def hierarchy_values(values: pd.Series, population: pd.DataFrame | None) -> pd.Series:
    """The values a quasi-identifier's hierarchy is built from: the data's, and the
    population's when there is one (it holds people the data do not)."""
    if population is None:
        return values
    return pd.concat([values, population[values.name]], ignore_index=True)


def check_sample_of(
    codes: Sequence[np.ndarray], weights: np.ndarray | None, population: Sequence[np.ndarray]
) -> None:
    """Refuse data that are not a sample of the delta-presence population: every record's
    quasi-identifiers must match as many population records as the data hold."""
    if not codes:
        return
    key, pop_key = np.zeros(len(codes[0]), np.int64), np.zeros(len(population[0]), np.int64)
    for column, pop_column in zip(codes, population, strict=True):
        size = int(max(column.max(initial=0), pop_column.max(initial=0))) + 1
        key, pop_key = key * size + column, pop_key * size + pop_column
        key, pop_key = _compact(key, pop_key)
    held = np.bincount(key, weights=weights, minlength=int(key.max(initial=0)) + 1)
    available = np.bincount(pop_key, minlength=len(held))[: len(held)]
    missing = int(np.maximum(held - available, 0).sum())
    if missing:
        raise InputError(
            f"{missing} record(s) of the data match no record left in the delta-presence "
            "population table; the population must hold every record of the data (the data "
            "are a sample of it)"
        )


def _compact(key: np.ndarray, pop_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same keys renumbered 0.. over both arrays (so mixing more columns cannot overflow)."""
    _, inverse = np.unique(np.concatenate([key, pop_key]), return_inverse=True)
    return inverse[: len(key)].astype(np.int64), inverse[len(key) :].astype(np.int64)


def check_solvable(
    models: list[PrivacyModel],
    n: int,
    infos: Mapping[str, SensitiveInfo],
    population: list[np.ndarray] | None,
    max_suppressed: int = 0,
) -> None:
    """Refuse models that no transformation can meet (too few records or values; a
    distribution of the sensitive values that no class can improve on, when the kept records
    together must meet an l-diversity too: ``max_suppressed`` of them may be left out)."""
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
        # (entropy and recursive l-diversity hold for a union of classes that hold them: the
        # records kept must hold them together, at best the whole table evened out by the
        # suppression allowed; recursive only without suppression, where that is exact)
        if isinstance(model, EntropyLDiversity):
            p = evened(info.totals, max_suppressed)
            p = p[p > 0] / p.sum()
            reachable = float(np.exp(-(p * np.log(p)).sum()))
            if reachable < model.l - 1e-9:
                evening = f" with {max_suppressed:,} records suppressed" if max_suppressed else ""
                raise AnonymizationError(
                    f"entropy l-diversity with l={model.l:g} on {attribute!r} is unreachable: even "
                    f"the whole table{evening} reaches only l={reachable:.3g} ({distinct} distinct "
                    "values); lower l or allow more suppression"
                )
        if isinstance(model, RecursiveCLDiversity) and max_suppressed == 0:
            ranked = np.sort(info.totals)[::-1].astype(np.float64)
            tail = ranked[model.l - 1 :].sum()
            if tail == 0 or ranked[0] >= model.c * tail:
                raise AnonymizationError(
                    f"recursive (c={model.c:g}, l={model.l}) on {attribute!r} is unreachable "
                    f"without suppression: in the whole table r1 / (r{model.l} + ... + rm) is "
                    f"{ranked[0] / max(tail, 1e-300):.3g} (the most frequent value's count over "
                    "those of the rarer ones), and c must exceed it; raise c, lower l or allow "
                    "suppression"
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


def evened(counts: np.ndarray, budget: int) -> np.ndarray:
    """``counts`` with ``budget`` taken off the largest, down to one common level (fractions
    allowed): the most even counts that leaving ``budget`` records out can give.

    >>> evened(np.array([10, 4, 1]), 8).tolist()
    [3.0, 3.0, 1.0]
    >>> evened(np.array([10, 4, 0]), 14).tolist()  # (all but a sliver: the values alike)
    [1.0, 1.0, 0.0]
    """
    if budget >= np.sum(counts):  # (at the limit the evened counts are alike: scale them up)
        return (np.asarray(counts) > 0).astype(np.float64)
    ranked = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    level = 0.0
    for top in range(1, len(ranked) + 1):  # (the level once the ``top`` largest are evened)
        level = (ranked[:top].sum() - budget) / top
        if top == len(ranked) or level >= ranked[top]:
            break
    return np.minimum(np.asarray(counts, dtype=np.float64), max(level, 0.0))


def _check_orderable(config: AnonymizeConfig, name: str, labels: Sequence[str]) -> None:
    """Refuse ordered t-closeness on a column of text without an ``order``: sorted as
    text, High < Low < Medium would be measured without a word."""
    ordered = any(
        spec.attribute == name and spec.distance == "ordered" for spec in config.privacy.t_closeness
    )
    if ordered and any(_sort_key(v)[0] for v in labels if v != MISSING_SENSITIVE):
        raise AnonymizationError(
            f"ordered t-closeness on {name!r} needs the order of its values, which are text: "
            f"give sensitive: {{{name}: {{order: [lowest, ..., highest]}}}} or use distance: "
            "equal"
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
