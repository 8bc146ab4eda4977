"""What a text release is worth and what it risks, measured on the private data (not DP).

For the data owner's review, like the tabular metrics: how often released texts copy a
training text (against how often they equal an unseen holdout text: the chance level), how
varied they are, their lengths, how close they lie to the real texts in the embedder's space
(the Fréchet distance, and the precision and recall of Kynkäänniemi et al. 2019: the share of
synthetic texts inside the real texts' k-nearest-neighbour manifold, and of real texts inside
the synthetic one), and, with labels and a holdout, how well a classifier trained on the
synthetic texts predicts the holdout's labels against one trained on the real training texts
(logistic regression on the embedder's vectors, as ``benchmarks/pe_text.py`` measures).
Figures only; no text of the private data.

>>> import numpy as np, pandas as pd
>>> class Letters:                       # a toy embedder: counts of a few letters
...     def embed(self, s):
...         return np.array([[t.count(c) for c in "aeiou"] for t in s["text"]], dtype=float)
>>> train = pd.DataFrame({"text": ["good food", "bad food", "nice staff", "awful staff"] * 5,
...                       "label": ["pos", "neg"] * 10})
>>> synthetic = pd.DataFrame({"text": ["good food", "so bad", "nice", "awful"] * 3,
...                           "label": ["pos", "neg"] * 6})
>>> result = text_metrics(synthetic, train, train, "text", "label", Letters())
>>> result["copies_of_train"]["value"], result["distinct_share"]
(0.25, 0.3333333333333333)
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from safeshare.evaluate.results import Proportion


class Embedder(Protocol):
    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        """One vector per row."""
        ...


def _normal(texts: pd.Series) -> pd.Series:
    return texts.fillna("").astype(str).str.strip().str.lower().str.split().str.join(" ")


def _mean_words(texts: pd.Series) -> float:
    return float(np.mean([len(t.split()) for t in texts])) if len(texts) else 0.0


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The Fréchet distance between Gaussians fitted to two sets of vectors (rows):
    ``|mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2))``, as FID and PE's text papers
    report it in an embedding space.  The trace of the root is the sum of the roots of the
    eigenvalues of ``S_a^(1/2) S_b S_a^(1/2)`` (symmetric, so exact and stable).

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4000, 3))
    >>> round(frechet_distance(x, x + [2.0, 0, 0]), 2), round(frechet_distance(x, 2 * x), 1)
    (4.0, 3.0)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < 2:
        raise ValueError(
            f"the Fréchet distance needs two sets of at least 2 vectors of one width, got "
            f"{a.shape} and {b.shape}"
        )
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    values, vectors = np.linalg.eigh(cov_a)
    root_a = (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
    middle = np.linalg.eigvalsh(root_a @ cov_b @ root_a)
    cross = float(np.sqrt(np.clip(middle, 0.0, None)).sum())
    shift = float(((a.mean(axis=0) - b.mean(axis=0)) ** 2).sum())
    return max(0.0, shift + float(np.trace(cov_a) + np.trace(cov_b)) - 2.0 * cross)


def manifold_precision_recall(
    real: np.ndarray, synthetic: np.ndarray, k: int = 3
) -> tuple[float, float]:
    """Precision (the share of synthetic vectors within the real vectors' manifold) and recall
    (the share of real vectors within the synthetic ones'), a manifold being the union of the
    balls around each vector reaching its ``k``-th nearest neighbour among its own set
    (Kynkäänniemi et al., NeurIPS 2019).

    >>> rng = np.random.default_rng(0)
    >>> real = rng.normal(size=(400, 2))
    >>> narrow = manifold_precision_recall(real, 0.3 * rng.normal(size=(400, 2)))
    >>> elsewhere = manifold_precision_recall(real, rng.normal(size=(400, 2)) + 6.0)
    >>> narrow[0] > 0.95 and narrow[1] < 0.6, elsewhere
    (True, (0.0, 0.0))
    """
    real, synthetic = np.asarray(real, dtype=float), np.asarray(synthetic, dtype=float)
    if min(len(real), len(synthetic)) <= k:
        raise ValueError(f"precision and recall need more than k={k} vectors in each set")
    real_radius, synthetic_radius = _kth_distance(real, k), _kth_distance(synthetic, k)
    precision = _within(synthetic, real, real_radius).mean()
    recall = _within(real, synthetic, synthetic_radius).mean()
    return float(precision), float(recall)


_CHUNK = 512  # rows of a distance matrix computed at once


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    squared = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.clip(squared, 0.0, None))


def _kth_distance(vectors: np.ndarray, k: int) -> np.ndarray:
    """Each vector's distance to its ``k``-th nearest other vector of the same set."""
    out = np.empty(len(vectors))
    for start in range(0, len(vectors), _CHUNK):
        block = _distances(vectors[start : start + _CHUNK], vectors)
        block[np.arange(len(block)), np.arange(start, start + len(block))] = np.inf  # not itself
        out[start : start + len(block)] = np.partition(block, k - 1, axis=1)[:, k - 1]
    return out


def _within(points: np.ndarray, centres: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Whether each point lies in a ball of ``radius`` around some centre."""
    inside = np.empty(len(points), dtype=bool)
    for start in range(0, len(points), _CHUNK):
        block = _distances(points[start : start + _CHUNK], centres)
        inside[start : start + len(block)] = (block <= radius[None, :]).any(axis=1)
    return inside


def _words(texts: pd.Series) -> dict[str, float]:
    """The 10th, 50th and 90th percentiles of the texts' lengths in words."""
    counts = np.array([len(t.split()) for t in texts]) if len(texts) else np.zeros(1)
    return {f"p{q}": float(np.percentile(counts, q)) for q in (10, 50, 90)}


def _proportion(p: Proportion) -> dict[str, Any]:
    return {"value": p.value, "interval": list(p.interval), "trials": p.trials}


def text_metrics(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame | None,
    text_column: str,
    label_column: str | None,
    embedder: Embedder | None,
) -> dict[str, Any]:
    """Copies, variety, lengths, (embedder given) the distance to the real texts in its space
    and (labels and a holdout too) classifier accuracy.  The distances compare as many texts
    of each side; they and the accuracy depend on how many synthetic texts there are, so two
    synthetic sets compare fairly at one count (:func:`spread`)."""
    released = _normal(synthetic[text_column])
    real = _normal(train[text_column])
    seen = set(real)
    n = len(released)
    out: dict[str, Any] = {
        "copies_of_train": _proportion(Proportion.of(int(released.isin(seen).sum()), n)),
        "distinct_share": float(released.nunique() / n) if n else float("nan"),
        "mean_words_synthetic": _mean_words(released),
        "mean_words_train": _mean_words(real),
        "words": {"synthetic": _words(released), "train": _words(real)},
    }
    if embedder is not None:
        figures = _embedding_figures(synthetic, train, holdout, text_column, embedder)
        if figures is not None:
            out["embedding"] = figures
    if holdout is not None and len(holdout):
        unseen = set(_normal(holdout[text_column])) - seen
        copies = Proportion.of(int(released.isin(unseen).sum()), n)
        out["copies_of_holdout_only"] = _proportion(copies)
    if label_column is not None:
        counts = synthetic[label_column].astype(str).value_counts(normalize=True).sort_index()
        out["label_shares_synthetic"] = {str(k): float(v) for k, v in counts.items()}
    if label_column is not None and holdout is not None and embedder is not None:
        out["classifier"] = _classifier(
            synthetic, train, holdout, text_column, label_column, embedder
        )
    return out


def _embedding_figures(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame | None,
    text_column: str,
    embedder: Embedder,
    k: int = 3,
) -> dict[str, Any] | None:
    """The Fréchet distance, precision and recall of the synthetic texts against the holdout's
    (unseen: the fair reference), else the training texts, on as many texts of each (evenly
    spaced rows of the larger); None with too few texts."""
    unseen = holdout is not None and len(holdout) > k
    reference = holdout if unseen and holdout is not None else train
    size = min(len(synthetic), len(reference))
    if size <= k:
        return None
    fake = np.asarray(embedder.embed(spread(synthetic, size)[[text_column]]), dtype=float)
    real = np.asarray(embedder.embed(spread(reference, size)[[text_column]]), dtype=float)
    precision, recall = manifold_precision_recall(real, fake, k)
    return {
        "reference": "holdout" if unseen else "train",
        "frechet_distance": frechet_distance(real, fake),
        "precision": precision,
        "recall": recall,
        "k": k,
        "texts_compared": size,
    }


def spread(frame: pd.DataFrame, size: int) -> pd.DataFrame:
    """``size`` evenly spaced rows of ``frame`` (every row when it holds no more).

    >>> spread(pd.DataFrame({"x": range(10)}), 4)["x"].tolist()
    [0, 3, 6, 9]
    """
    if len(frame) <= size:
        return frame
    return frame.iloc[np.linspace(0, len(frame) - 1, size).round().astype(int)]


def _classifier(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    text_column: str,
    label_column: str,
    embedder: Embedder,
) -> dict[str, Any] | None:
    """Holdout accuracy of logistic regression trained on synthetic vs on real training text."""
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    labels = [frame[label_column].astype(str).to_numpy() for frame in (synthetic, train, holdout)]
    if min(len(np.unique(y)) for y in labels[:2]) < 2 or len(holdout) < 20:
        return None
    vectors = [np.asarray(embedder.embed(f[[text_column]])) for f in (synthetic, train, holdout)]
    scores = []
    for x, y in ((vectors[0], labels[0]), (vectors[1], labels[1])):
        model = LogisticRegression(max_iter=2000).fit(x, y)
        scores.append(float((model.predict(vectors[2]) == labels[2]).mean()))
    return {
        "model": "logistic regression on the embedder's vectors, scored on the holdout",
        "accuracy_synthetic": scores[0],
        "accuracy_real": scores[1],
        "ratio": scores[0] / scores[1] if scores[1] > 0 else float("nan"),
        "holdout_rows": len(holdout),
    }
