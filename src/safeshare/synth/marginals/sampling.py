"""Drawing synthetic records from a graphical model.

Records are generated clique by clique down the junction tree: the first clique's
attributes jointly from its marginal, then each next clique's new attributes
given the separator values already drawn.  Within every group of records that
share a separator value, values are allocated by systematic sampling: each value
gets ``floor`` or ``ceil`` of its expected count, which removes most sampling
noise, and records receive them in random order.

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

import numpy as np

from safeshare.synth.marginals.factor import sum_to
from safeshare.synth.marginals.model import GraphicalModel


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
        values = _allocate(table, groups, rng)
        for a, codes in zip(
            new, np.unravel_index(values, [model.sizes[a] for a in new]), strict=True
        ):
            drawn[a] = codes.astype(np.int64)
    for a, size in model.sizes.items():  # attributes in no clique: uniform (never measured)
        if a not in drawn:
            drawn[a] = rng.integers(0, size, n)
    return {a: drawn[a] for a in model.sizes}


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
    drawn: dict[str, np.ndarray], attrs: list[str], sizes: dict[str, int], n: int
) -> np.ndarray:
    index = np.zeros(n, dtype=np.int64)
    for a in attrs:
        index = index * sizes[a] + drawn[a]
    return index


def _allocate(table: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each record, a column of ``table`` drawn from its group's row, systematically."""
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
    n = len(groups)
    order = rng.permutation(n)
    order = order[np.argsort(groups[order], kind="stable")]
    sorted_groups = groups[order]
    sizes = np.bincount(sorted_groups, minlength=table.shape[0])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.arange(n) - starts[sorted_groups]
    offset = np.asarray(rng.random(table.shape[0]))[sorted_groups]
    targets = (rank + offset) / sizes[sorted_groups]
    # rows of cdf shifted by their group number form one increasing array
    shifted = (cdf + np.arange(table.shape[0])[:, None]).ravel()
    picks = (
        np.searchsorted(shifted, sorted_groups + targets, side="right")
        - sorted_groups * table.shape[1]
    )
    values = np.empty(n, dtype=np.int64)
    values[order] = np.minimum(picks, table.shape[1] - 1)
    return values
