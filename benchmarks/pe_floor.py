"""How good can tabular Private Evolution get on adult-pgm at epsilon=1? (issue 5)

PE's output is a population of ``N`` candidates weighted by their noisy nearest-neighbour
votes.  Its quality is bounded by two things, measured here on the metric of
``pe_adult.py`` / ``aim_adult.py`` (the mean TVD over all 364 3-way marginals against the
full data, ``_harness.Marginals``):

(a) the *oracle floor*: what PE would score if every step were perfect and its population
    were ``N`` records drawn from the real data itself: equal weights, and weighted by their
    exact (noiseless) votes, the vote PE's histogram takes (one-hot embedding, nearest
    candidate, ties to the lower index: the same neighbours as ``neighbors.nearest``);
(b) the *noise*: the same oracle populations, their exact votes plus the histogram's
    Gaussian noise at epsilon=1, delta=1e-9 with sigma from PE's own calibration for ``T``
    iterations (``accounting.noise_multiplier``), clipped at 0 (PE's default) or thresholded;
    and how the 48,842 votes spread over ``N`` candidates compare with sigma.  Only the
    final histogram's noise is counted and the population is real records: a lower bound on
    what a PE run with ``T`` iterations can reach with this mechanism, not a PE run;
(c) actual PE runs (``PrivateEvolution`` over ``DomainAPI``/``TabularEmbedder``, seeded,
    in this process) at a few settings: population size, iterations, lookahead, ordered
    bins; TVD and CPU seconds (``time.process_time``; pe_adult.py's figures add the process'
    imports).

Weighted populations are scored by their weighted marginals (the limit of ``sample(n)``
for large ``n``); noise is drawn as a continuous Gaussian from a seeded generator (PE adds
the discrete Gaussian, indistinguishable at these sigmas).  One thread.

    .venv/bin/python benchmarks/pe_floor.py                 # ~10 min on one core
    .venv/bin/python benchmarks/pe_floor.py --quick         # smaller grid, ~2 min
    .venv/bin/python benchmarks/pe_floor.py --skip-runs --seeds 0 1 2
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _harness import find_dataset, machine, no_dataset, now, write_json  # noqa: E402
from safeshare.data import Domain, Table  # noqa: E402
from safeshare.synth.pe import DomainAPI, PrivateEvolution, TabularEmbedder  # noqa: E402
from safeshare.synth.pe.accounting import noise_multiplier  # noqa: E402

EPSILON, DELTA = 1.0, 1e-9
GOAL_TVD = 0.088  # 1.1 x AIM's 0.0796 (issue 5)
SIZES = (500, 1000, 2000, 5000, 10000, 20000)
ITERATIONS = (1, 2, 5, 10)
# binned numbers in adult-pgm (public knowledge of the columns, not in adult-domain.json)
ORDERED = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


class Scorer:
    """Mean 3-way TVD against the real table, for (weighted) code matrices.

    The real marginals are kept on their support only: ``sum |p - q| = sum_support |p - q|
    + (1 - sum_support q)`` for normalized ``q``.  Equal to ``_harness.Marginals.mean_tvd``.
    """

    def __init__(self, real: np.ndarray, shape: Sequence[int]) -> None:
        self.shape = tuple(shape)
        self.triples = list(itertools.combinations(range(len(shape)), 3))
        self.support: list[tuple[np.ndarray, np.ndarray]] = []
        for triple in self.triples:
            counts = np.bincount(self._index(real, triple), minlength=self._cells(triple))
            cells = np.flatnonzero(counts)
            self.support.append((cells, counts[cells] / counts.sum()))

    def _cells(self, triple: tuple[int, ...]) -> int:
        return math.prod(self.shape[i] for i in triple)

    def _index(self, codes: np.ndarray, triple: tuple[int, ...]) -> np.ndarray:
        dims = tuple(self.shape[i] for i in triple)
        return np.ravel_multi_index(tuple(codes[:, i] for i in triple), dims)

    def tvd(self, codes: np.ndarray, weights: np.ndarray | None = None) -> float:
        """Mean over the triples of 0.5 * sum |p_real - q|, q the (weighted) codes' marginal."""
        if weights is not None:
            weights = np.clip(np.asarray(weights, dtype=float), 0.0, None)
            if weights.sum() <= 0:  # all votes lost: PE falls back to uniform weights
                weights = None
        tvds = []
        for triple, (cells, p) in zip(self.triples, self.support, strict=True):
            q = np.bincount(self._index(codes, triple), weights, minlength=self._cells(triple))
            q = q / q.sum()
            on = q[cells]
            tvds.append(0.5 * (float(np.abs(p - on).sum()) + 1.0 - float(on.sum())))
        return statistics.fmean(tvds)


def exact_votes(real: np.ndarray, candidates: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Votes of the real records for their nearest candidate under PE's one-hot embedding.

    With every column categorical the squared distance is the number of mismatched columns,
    so the nearest candidate has the most matching codes; ``argmax`` breaks ties to the
    lower index, as ``neighbors.nearest`` does (checked in ``main``).
    """
    n_candidates = len(candidates)
    offsets = np.concatenate([[0], np.cumsum(shape)[:-1]]).astype(np.int64)
    onehot = np.zeros((int(sum(shape)), n_candidates), dtype=np.uint8)
    columns = np.tile(np.arange(n_candidates), candidates.shape[1])
    onehot[(candidates + offsets).T.ravel(), columns] = 1
    keys = real + offsets
    nearest = np.empty(len(real), dtype=np.int64)
    block = max(1, (1 << 23) // n_candidates)
    for start in range(0, len(real), block):
        rows = keys[start : start + block]
        matches = onehot[rows[:, 0]].copy()
        for j in range(1, rows.shape[1]):
            matches += onehot[rows[:, j]]
        nearest[start : start + block] = matches.argmax(axis=1)
    return np.bincount(nearest, minlength=n_candidates).astype(float)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def fmt(s: dict[str, float]) -> str:
    return f"{s['mean']:.4f} ± {s['sd']:.4f}"


def oracle(
    real: np.ndarray,
    shape: Sequence[int],
    scorer: Scorer,
    sizes: Sequence[int],
    sigmas: dict[int, float],
    seeds: Sequence[int],
) -> dict[str, Any]:
    """(a) and (b): oracle populations of real records, noiseless and with PE's noise."""
    out: dict[str, Any] = {}
    n = len(real)
    for size in sizes:
        rows: dict[str, list[float]] = {}
        for seed in seeds:
            rng = np.random.default_rng(seed)
            candidates = real[rng.choice(n, size, replace=False)]
            votes = exact_votes(real, candidates, shape)
            rows.setdefault("uniform", []).append(scorer.tvd(candidates))
            rows.setdefault("exact votes", []).append(scorer.tvd(candidates, votes))
            for t, sigma in sigmas.items():
                noise = rng.normal(0.0, sigma, size)
                for name, threshold in (("0", 0.0), ("1s", sigma), ("2s", 2 * sigma)):
                    noisy = votes + noise
                    noisy[noisy < threshold] = 0.0
                    rows.setdefault(f"T={t} H={name}", []).append(scorer.tvd(candidates, noisy))
                rows.setdefault(f"T={t} share>=sigma", []).append(float((votes >= sigma).mean()))
                rows.setdefault(f"T={t} mass>=2sigma", []).append(
                    float(votes[votes >= 2 * sigma].sum() / n)
                )
        out[str(size)] = {key: summary(values) for key, values in rows.items()}
        best = min(
            (v["mean"], k) for k, v in out[str(size)].items() if k.startswith("T=") and "H=" in k
        )
        print(
            f"  N={size:>6,}: uniform {fmt(out[str(size)]['uniform'])}, exact votes "
            f"{fmt(out[str(size)]['exact votes'])}, best noisy {best[0]:.4f} ({best[1]})",
            flush=True,
        )
    return out


def parents_oracle(
    real: np.ndarray,
    domain: Domain,
    scorer: Scorer,
    parents: Sequence[int],
    sigmas: dict[int, float],
    seeds: Sequence[int],
    final: int,
) -> dict[str, Any]:
    """(a') ``P`` perfect parents (real records) varied by PE's variation API into ``final``
    candidates (the last population PE measures is always varied), weighted uniformly, by
    exact votes, and by noisy votes at each ``T`` (threshold 0).  Degree 0.1: one column
    changed per sample, the least the API changes."""
    out: dict[str, Any] = {}
    shape = domain.shape()
    for ordered in (False, True):
        api = DomainAPI(domain, ordinal=ORDERED if ordered else ())
        for size in parents:
            rows: dict[str, list[float]] = {}
            for seed in seeds:
                rng = np.random.default_rng(seed)
                chosen = real[rng.choice(len(real), size, replace=False)]
                picked = chosen[rng.integers(0, size, final)]
                frame = pd.DataFrame(picked, columns=list(domain.names))
                children = api.vary(frame, 0.1, rng).to_numpy().astype(np.int64)
                votes = exact_votes(real, children, shape)
                rows.setdefault("uniform", []).append(scorer.tvd(children))
                rows.setdefault("exact votes", []).append(scorer.tvd(children, votes))
                for t, sigma in sigmas.items():
                    noisy = votes + rng.normal(0.0, sigma, final)
                    rows.setdefault(f"T={t}", []).append(scorer.tvd(children, noisy))
            name = f"P={size} final={final}" + (" ordered" if ordered else "")
            out[name] = {k: summary(v) for k, v in rows.items()}
            best = min(v["mean"] for v in out[name].values())
            cells = ", ".join(f"{k} {v['mean']:.4f}" for k, v in out[name].items())
            print(f"  {name:<32} {cells}  (best {best:.4f})", flush=True)
    return out


def pe_run(
    table: Table,
    scorer: Scorer,
    *,
    seed: int,
    samples: int,
    iterations: int,
    lookahead: int,
    ordered: bool,
    degree: float = 0.15,
) -> dict[str, Any]:
    """(c) One seeded PE fit at epsilon=1; TVD of ``sample()`` and CPU seconds of fit + sample."""
    ordinal = ORDERED if ordered else ()
    started = time.process_time()
    model = PrivateEvolution(
        api=DomainAPI(table.domain, ordinal=ordinal),
        embedder=TabularEmbedder(table.domain, ordinal=ordinal),
        epsilon=EPSILON,
        delta=DELTA,
        iterations=iterations,
        samples_per_iteration=samples,
        variation_degrees=degree,
        lookahead=lookahead,
        rng=seed,
    ).fit(table)
    synthetic = model.sample()
    cpu = time.process_time() - started
    codes = np.column_stack([synthetic.column(c) for c in table.columns])
    return {"tvd": scorer.tvd(codes), "cpu_s": cpu, "sigma": model.sigma_}


RUNS: tuple[dict[str, Any], ...] = (
    {"samples": 1000, "iterations": 10, "lookahead": 0, "ordered": False},  # pe_adult's default
    {"samples": 1000, "iterations": 5, "lookahead": 0, "ordered": False},
    {"samples": 1000, "iterations": 5, "lookahead": 2, "ordered": False},
    {"samples": 1000, "iterations": 5, "lookahead": 4, "ordered": False},
    {"samples": 2000, "iterations": 5, "lookahead": 0, "ordered": False},
    {"samples": 2000, "iterations": 2, "lookahead": 0, "ordered": False},
    {"samples": 1000, "iterations": 5, "lookahead": 0, "ordered": True},
    {"samples": 1000, "iterations": 5, "lookahead": 4, "ordered": True},
)


def key(setting: dict[str, Any]) -> str:
    ordered = " ordered" if setting["ordered"] else ""
    return f"N={setting['samples']} T={setting['iterations']} L={setting['lookahead']}{ordered}"


def main(argv: list[str] | None = None) -> int:
    """Measure (a), (b), (c); print the tables and the conclusion; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--run-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--parents", type=int, nargs="+", default=[1000, 2000, 3000, 5000])
    parser.add_argument("--final", type=int, default=20000, help="(a') candidates measured")
    parser.add_argument("--skip-runs", action="store_true", help="(a) and (b) only")
    parser.add_argument("--quick", action="store_true", help="2 seeds, fewer sizes and runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    folder = find_dataset()
    if folder is None:
        return no_dataset()
    if args.quick:
        args.seeds, args.run_seeds, args.sizes = [0, 1], [0], [1000, 5000, 20000]
        args.parents = [2000, 5000]
    started = time.process_time()
    sizes_json: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    frame = pd.read_csv(folder / "adult.csv", usecols=list(sizes_json))[list(sizes_json)]
    real = frame.to_numpy().astype(np.int64)
    shape = list(sizes_json.values())
    scorer = Scorer(real, shape)
    sigmas = {t: noise_multiplier(EPSILON, DELTA, t) for t in ITERATIONS}
    n = len(real)

    print(f"adult-pgm: {n:,} records, {len(shape)} columns, {len(scorer.triples)} 3-way marginals")
    print(f"epsilon={EPSILON:g}, delta={DELTA:g}: sigma per histogram ", end="")
    print(", ".join(f"T={t}: {s:.2f}" for t, s in sigmas.items()))

    print("\n(b) votes per candidate against the noise: 48,842 votes over N candidates")
    head = f"{'N':>7} {'votes/cand.':>11} " + " ".join(
        f"{'/sigma T=' + str(t):>13}" for t in sigmas
    )
    print(head)
    spread = {}
    for size in args.sizes:
        mean_votes = n / size
        spread[str(size)] = {"mean_votes": mean_votes} | {
            f"T={t}": mean_votes / s for t, s in sigmas.items()
        }
        ratios = " ".join(f"{mean_votes / s:>13.2f}" for s in sigmas.values())
        print(f"{size:>7,} {mean_votes:>11.1f} {ratios}")

    print("\n(a)+(b) oracle populations of N real records (seeds " + f"{args.seeds}):", flush=True)
    floors = oracle(real, shape, scorer, args.sizes, sigmas, args.seeds)
    print_oracle(floors, args.sizes, sigmas)

    domain = Domain.from_sizes(sizes_json)
    support = {t: n / (2 * s) for t, s in sigmas.items()}
    print("\ncandidates a histogram can tell from noise (2 sigma votes each), n / (2 sigma): ")
    print("  " + ", ".join(f"T={t}: {v:,.0f}" for t, v in support.items()))
    print(
        f"\n(a') P perfect parents (real records) varied into {args.final:,} candidates "
        f"(degree 0.1), seeds {args.seeds}:",
        flush=True,
    )
    varied = parents_oracle(real, domain, scorer, args.parents, sigmas, args.seeds, args.final)

    runs: dict[str, Any] = {}
    if not args.skip_runs:
        table = Table({c: frame[c].to_numpy() for c in sizes_json}, domain)
        settings = RUNS[:4] if args.quick else RUNS
        print(f"\n(c) PE runs at epsilon=1 (seeds {args.run_seeds}; TVD, CPU s of fit+sample):")
        for setting in settings:
            results = [pe_run(table, scorer, seed=s, **setting) for s in args.run_seeds]
            runs[key(setting)] = {
                "setting": setting,
                "runs": results,
                "tvd": summary([r["tvd"] for r in results]),
                "cpu_s": summary([r["cpu_s"] for r in results]),
            }
            r = runs[key(setting)]
            print(
                f"  {key(setting):<28} TVD {fmt(r['tvd'])}  CPU {r['cpu_s']['mean']:6.1f} s",
                flush=True,
            )

    conclusion = conclude(floors, varied, sigmas, runs)
    print("\n" + conclusion["text"])
    print(f"\ntotal CPU {time.process_time() - started:.0f} s")
    write_json(
        {
            "benchmark": "pe_floor",
            "date": now(),
            "machine": machine(),
            "epsilon": EPSILON,
            "delta": DELTA,
            "goal_tvd": GOAL_TVD,
            "metric": "mean TVD over all 3-way marginals vs the full data (lower is better)",
            "sigmas": {str(t): s for t, s in sigmas.items()},
            "votes_vs_sigma": spread,
            "oracle": floors,
            "signal_candidates": {str(t): v for t, v in support.items()},
            "varied_parents": varied,
            "runs": runs,
            "conclusion": conclusion,
            "seeds": args.seeds,
            "run_seeds": args.run_seeds,
        },
        "pe_floor",
        args.json,
    )
    return 0


def print_oracle(floors: dict[str, Any], sizes: Sequence[int], sigmas: dict[int, float]) -> None:
    """One row per N: noiseless TVDs, then per T the best threshold's TVD."""
    print(
        f"\n{'N':>7} {'uniform':>8} {'exact':>8} " + " ".join(f"{'T=' + str(t):>8}" for t in sigmas)
    )
    for size in sizes:
        row = floors[str(size)]
        cells = []
        for t in sigmas:
            cells.append(min(row[f"T={t} H={h}"]["mean"] for h in ("0", "1s", "2s")))
        print(
            f"{size:>7,} {row['uniform']['mean']:>8.4f} {row['exact votes']['mean']:>8.4f} "
            + " ".join(f"{c:>8.4f}" for c in cells)
        )
    print(
        "(mean TVD; T columns: exact votes + N(0, sigma_T^2), best of thresholds 0, sigma, 2 sigma)"
    )
    print(f"\n{'N':>7} " + " ".join(f"{'>=sigma T=' + str(t):>12}" for t in sigmas), end="")
    print(" " + " ".join(f"{'mass>=2s T=' + str(t):>13}" for t in sigmas))
    for size in sizes:
        row = floors[str(size)]
        shares = " ".join(f"{row[f'T={t} share>=sigma']['mean']:>12.1%}" for t in sigmas)
        masses = " ".join(f"{row[f'T={t} mass>=2sigma']['mean']:>13.1%}" for t in sigmas)
        print(f"{size:>7,} {shares} {masses}")
    print("(share of candidates whose exact votes reach sigma; share of the records voting for")
    print(" a candidate whose exact votes reach 2 sigma, i.e. votes a 2-sigma threshold keeps)")


def conclude(
    floors: dict[str, Any],
    varied: dict[str, Any],
    sigmas: dict[int, float],
    runs: dict[str, Any],
) -> dict[str, Any]:
    """The lowest TVDs each idealisation reaches given the noise, against the goal."""
    best: dict[str, Any] = {}
    for t in sigmas:
        candidates = [
            (row[f"T={t} H={h}"]["mean"], int(size), h)
            for size, row in floors.items()
            for h in ("0", "1s", "2s")
        ]
        tvd, size, h = min(candidates)
        best[str(t)] = {"tvd": tvd, "N": size, "threshold": h}
    noiseless = min((row["exact votes"]["mean"], int(size)) for size, row in floors.items())
    uniform = min((row["uniform"]["mean"], int(size)) for size, row in floors.items())
    floor = min(b["tvd"] for b in best.values())
    # perfect parents varied into the last population: T >= 2 (T = 1 never varies)
    parents = min(
        (value["mean"], f"{name}, {weights}")
        for name, row in varied.items()
        for weights, value in row.items()
        if weights not in ("T=1",)
    )
    best_run = min(((r["tvd"]["mean"], k) for k, r in runs.items()), default=None)
    lines = [
        f"(a)+(b) populations of N real records with the last histogram's noise at epsilon="
        f"{EPSILON:g}: best {floor:.4f} ("
        + ", ".join(
            f"T={t}: {b['tvd']:.4f} at N={b['N']:,}, threshold {b['threshold']}"
            for t, b in best.items()
        )
        + f"); noiseless with exact votes {noiseless[0]:.4f} (N={noiseless[1]:,}), equal weights "
        f"{uniform[0]:.4f} (N={uniform[1]:,}). The votes do not make these populations better: "
        "they are real records already.",
        f"(a') perfect parents (real records) varied once by PE's variation API: best "
        f"{parents[0]:.4f} ({parents[1]}).",
    ]
    if best_run is not None:
        lines.append(f"(c) the best actual PE run: {best_run[0]:.4f} ({best_run[1]}).")
    lines.append(f"goal: mean 3-way TVD <= {GOAL_TVD}.")
    return {
        "floor_tvd": floor,
        "best_by_iterations": best,
        "noiseless": {"tvd": noiseless[0], "N": noiseless[1]},
        "uniform": {"tvd": uniform[0], "N": uniform[1]},
        "varied_parents_best": {"tvd": parents[0], "setting": parents[1]},
        "best_run": None if best_run is None else {"tvd": best_run[0], "setting": best_run[1]},
        "oracle_reaches_goal": floor <= GOAL_TVD,
        "varied_parents_reach_goal": parents[0] <= GOAL_TVD,
        "text": "\n".join(lines),
    }


if __name__ == "__main__":
    raise SystemExit(main())
