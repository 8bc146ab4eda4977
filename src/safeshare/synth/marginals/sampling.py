"""Drawing synthetic records from a graphical model.

Records are generated clique by clique down the junction tree: the first clique's
attributes jointly from its marginal, then each next clique's new attributes
given the separator values already drawn.  Within every group of records that
share a separator value, values are allocated by systematic sampling: each value
gets ``floor`` or ``ceil`` of its expected count, which removes most sampling
noise.  The records of a group are lined up by the values they already hold
(:func:`similarity_rank`) and the allocated values are dealt along that line in a
golden-ratio order, so every run of similar records also gets its share of each
value: attributes the model makes independent given the separator come out close
to independent in the sample too, instead of carrying chance correlations.

>>> import numpy as np
>>> from safeshare.synth.marginals.junction_tree import JunctionTree
>>> from safeshare.synth.marginals.model import GraphicalModel
>>> tree = JunctionTree.build(["a", "b"], {"a": 2, "b": 2}, [("a", "b")])
>>> model = GraphicalModel(tree, {"a": 2, "b": 2}, [np.log([[1.0, 3.0], [2.0, 4.0]])], 10.0)
>>> rows = sample_records(model, 100, np.random.default_rng(0))
>>> np.bincount(rows["a"] * 2 + rows["b"]).tolist()
[10, 30, 20, 40]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from safeshare.synth.marginals.factor import sum_to
from safeshare.synth.marginals.model import GraphicalModel

# consecutive multiples of the golden ratio, taken mod 1, spread evenly over [0, 1)
_GOLDEN = (math.sqrt(5) - 1) / 2


def sample_records(
    model: GraphicalModel, n: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``n`` records as one int64 code array per attribute."""
    tree = model.tree
    marginals = model.marginals()
    drawn: dict[str, np.ndarray] = {}
    for receiver in _clique_order(model):
        clique = tree.cliques[receiver]
        separator = [a for a in clique if a in drawn]
        new = [a for a in clique if a not in drawn]
        if not new:
            continue
        joint = sum_to(marginals[receiver], clique, (*separator, *new))
        sep_size = int(np.prod([model.sizes[a] for a in separator], dtype=np.int64))
        table = joint.reshape(sep_size, -1)
        groups = _flat_index(drawn, separator, model.sizes, n)
        latest_first = [a for a in reversed(drawn) if a not in separator]
        similar = similarity_rank({a: drawn[a] for a in latest_first}, n, rng)
        values = _allocate(table, groups, similar, rng)
        for a, codes in zip(
            new, np.unravel_index(values, [model.sizes[a] for a in new]), strict=True
        ):
            drawn[a] = codes.astype(np.int64)
    for a, size in model.sizes.items():  # attributes in no clique: uniform (never measured)
        if a not in drawn:
            drawn[a] = rng.integers(0, size, n)
    return {a: drawn[a] for a in model.sizes}


def similarity_rank(
    codes: Mapping[str, np.ndarray], n: int, rng: np.random.Generator
) -> np.ndarray:
    """Each record's place in a line of ``n`` records sorted by ``codes`` (first key first).

    Ties (and everything, with no codes) are broken at random, so records that hold the
    same values are exchangeable.

    >>> rank = similarity_rank({"a": np.array([1, 0, 1, 0])}, 4, np.random.default_rng(0))
    >>> sorted(rank[[1, 3]].tolist()), sorted(rank[[0, 2]].tolist())
    ([0, 1], [2, 3])
    """
    line = rng.permutation(n)
    for key in reversed(list(codes.values())):  # stable sorts, last key first
        line = line[np.argsort(key[line], kind="stable")]
    rank = np.empty(n, dtype=np.int64)
    rank[line] = np.arange(n)
    return rank


def spread_slots(line_groups: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For records lined up by group, each one's slot in its group, dealt in golden-ratio order.

    ``line_groups`` is sorted; the k-th record of a group gets the rank of ``k * golden mod 1``
    among its group's, so any run of consecutive records holds slots spread over the group.

    >>> spread_slots(np.zeros(5, dtype=np.int64), np.array([0])).tolist()
    [0, 3, 1, 4, 2]
    """
    n = line_groups.size
    position = np.arange(n) - starts[line_groups]
    dealt = np.lexsort((np.mod(position * _GOLDEN, 1.0), line_groups))
    slots = np.empty(n, dtype=np.int64)
    slots[dealt] = np.arange(n) - starts[line_groups[dealt]]
    return slots


def _clique_order(model: GraphicalModel) -> list[int]:
    """Each clique once, every clique after its parent (breadth first from each root)."""
    tree = model.tree
    order: list[int] = []
    seen: set[int] = set()
    for root in range(len(tree.cliques)):
        if root in seen:
            continue
        seen.add(root)
        queue = [root]
        while queue:
            node = queue.pop(0)
            order.append(node)
            for child in tree.neighbors(node):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
    return order


def _flat_index(
    drawn: dict[str, np.ndarray], attrs: Sequence[str], sizes: dict[str, int], n: int
) -> np.ndarray:
    index = np.zeros(n, dtype=np.int64)
    for a in attrs:
        index = index * sizes[a] + drawn[a]
    return index


def _allocate(
    table: np.ndarray, groups: np.ndarray, similar: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each record, a column of ``table`` drawn from its group's row, systematically.

    A group of ``m`` records gets the values at the quantiles ``j / m + u`` (mod 1) of its
    row, one uniform ``u`` per group, slot ``j`` dealt along the records' similarity line:
    whatever its slot, each record's quantile is uniform, so its value follows the row.
    """
    weights = np.maximum(table, 0.0)
    row_sums = weights.sum(axis=1, keepdims=True)
    fallback = weights.sum(axis=0)
    if fallback.sum() <= 0:
        fallback = np.ones(table.shape[1])
    probabilities = np.where(
        row_sums > 0, weights / np.where(row_sums > 0, row_sums, 1.0), fallback / fallback.sum()
    )
    cdf = np.cumsum(probabilities, axis=1)
    cdf[:, -1] = 1.0
    order = np.lexsort((similar, groups))
    line_groups = groups[order]
    sizes = np.bincount(line_groups, minlength=table.shape[0])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offset = np.asarray(rng.random(table.shape[0]))[line_groups]
    targets = np.mod(spread_slots(line_groups, starts) / sizes[line_groups] + offset, 1.0)
    # rows of cdf shifted by their group number form one increasing array
    shifted = (cdf + np.arange(table.shape[0])[:, None]).ravel()
    picks = (
        np.searchsorted(shifted, line_groups + targets, side="right") - line_groups * table.shape[1]
    )
    values = np.empty(groups.size, dtype=np.int64)
    values[order] = np.minimum(picks, table.shape[1] - 1)
    return values
