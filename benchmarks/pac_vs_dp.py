"""PAC Privacy next to the DP Gaussian mechanism at the same posterior-success bound.

For each application shipped in ``safeshare.pac`` (mean, histogram, linear and logistic
regression, k-means centroids, a small network) this calibrates PAC noise at MI budget
``beta`` (membership secrets: random halves of the records, prior 1/2) and runs the standard
DP Gaussian version of the same computation at the epsilon whose worst-case membership bound
equals PAC's, ``epsilon = ln((p - delta) / (1 - p))`` with ``p = posterior_success(beta)``,
``delta = 1e-5``.  It prints, per application:

* the noise power each adds (expected squared length of the noise in the released vector;
  for DP mechanisms that perturb intermediate statistics, the measured mean squared deviation
  of the release from the same computation without noise);
* the error power of each release against the non-private output on all the data
  (``E ||release - f(data)||^2``, over repeats: PAC's includes computing on a random half);
* the utility each leaves (error of means, TVD of the histogram, MSE of the regression,
  accuracy of the classifiers, k-means cost), next to the non-private value.

And the calibration time of a cheap function (column means) with 1,000 black-box runs.

Data: the packaged examples (statsmodels' ``fair``, 6,366 rows; ``randhie``, 20,190 rows);
public bounds from their packaged schemas.  Everything is seeded (reproducible, not secure).

    .venv/bin/python benchmarks/pac_vs_dp.py               # beta = 2^-4, about 6 minutes
    .venv/bin/python benchmarks/pac_vs_dp.py --mi 0.25 --repeats 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.data.examples import load_example
from safeshare.pac import calibrate, posterior_success
from safeshare.pac.applications import Histogram, LinearRegression, LogisticRegression, Mean
from safeshare.pac.dp_baseline import (
    DPRelease,
    dp_counterpart,
    dp_histogram,
    dp_kmeans,
    dp_linear_regression,
    dp_logistic_regression,
    dp_mean,
    dp_mlp,
)
from safeshare.pac.models import KMeans, SmallMLP, kmeans_cost
from safeshare.pac.outputs import flatten
from safeshare.pac.sampling import membership_mask, take_rows

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
DELTA = 1e-5
GOAL_SECONDS = 60.0
FAIR = ("rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation",
        "occupation_husb")  # fmt: skip
RANDHIE = ("lncoins", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp")


@dataclass
class App:
    """One application: the black box, its data, its DP twin and its utility metric."""

    name: str
    data: Any
    box: Callable[[Any], Any]
    dp: Callable[[float, np.random.Generator], DPRelease]
    utility: Callable[[np.ndarray], float]
    metric: str
    samples: int
    repeats: int


def public_bounds() -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
    """Bounds from the packaged schemas: answer codes of the survey, the experiment's design."""
    fair_schema = load_example("fair")[1].domain()
    fair = {
        c: (float(fair_schema[c].categories[0]), float(fair_schema[c].categories[-1])) for c in FAIR
    }
    fair["affairs"] = (0.0, 60.0)
    randhie = {"mdvis": (0.0, 80.0), "lncoins": (0.0, 4.62), "idp": (0.0, 1.0), "lpi": (0.0, 7.2),
               "fmde": (0.0, 8.4), "physlm": (0.0, 1.0), "disea": (0.0, 60.0), "hlthg": (0.0, 1.0),
               "hlthf": (0.0, 1.0), "hlthp": (0.0, 1.0)}  # fmt: skip
    return fair, randhie


def applications(repeats: int, samples: int, mlp_samples: int) -> list[App]:
    fair, _ = load_example("fair")
    randhie, _ = load_example("randhie")
    fair_bounds, randhie_bounds = public_bounds()
    apps: list[App] = []

    mean = Mean(("age", "yrs_married", "affairs"))
    exact_mean = mean(fair).to_numpy()
    apps.append(App(
        "mean (3 columns, fair)", fair, mean,
        lambda eps, gen: dp_mean(mean, fair, fair_bounds, eps, DELTA, gen),
        lambda v: float(np.sqrt(np.mean((v - exact_mean) ** 2))), "RMSE of the means",
        samples, repeats,
    ))  # fmt: skip

    small = fair.sample(200, random_state=0).reset_index(drop=True)  # the same mean, few records
    exact_small = mean(small).to_numpy()
    apps.append(App(
        "mean (3 columns, 200 records of fair)", small, mean,
        lambda eps, gen: dp_mean(mean, small, fair_bounds, eps, DELTA, gen),
        lambda v: float(np.sqrt(np.mean((v - exact_small) ** 2))), "RMSE of the means",
        samples, repeats,
    ))  # fmt: skip

    histogram = Histogram("rate_marriage", categories=(1.0, 2.0, 3.0, 4.0, 5.0))
    exact_hist = histogram(fair).to_numpy()
    apps.append(App(
        "histogram (5 bins, fair)", fair, histogram,
        lambda eps, gen: dp_histogram(histogram, fair, eps, DELTA, gen),
        lambda v: float(0.5 * np.abs(v - exact_hist).sum()), "TVD to the true shares",
        samples, repeats,
    ))  # fmt: skip

    ols = LinearRegression("mdvis", RANDHIE)
    _, target = ols.design(randhie)
    apps.append(App(
        "linear regression (10 coef., randhie)", randhie, ols,
        lambda eps, gen: dp_linear_regression(ols, randhie, randhie_bounds, eps, DELTA, gen),
        lambda v: float(np.mean((ols.predict(v, randhie) - target) ** 2)), "MSE of predictions",
        samples, repeats,
    ))  # fmt: skip

    heavy = LinearRegression("affairs", FAIR)  # a heavy-tailed target: mean 0.7, public max 60
    _, affairs = heavy.design(fair)
    apps.append(App(
        "linear regression (9 coef., heavy-tailed target, fair)", fair, heavy,
        lambda eps, gen: dp_linear_regression(heavy, fair, fair_bounds, eps, DELTA, gen),
        lambda v: float(np.mean((heavy.predict(v, fair) - affairs) ** 2)), "MSE of predictions",
        samples, repeats,
    ))  # fmt: skip

    logistic = LogisticRegression("affairs", FAIR, fair_bounds, l2=1e-3)
    apps.append(App(
        "logistic regression (9 coef., fair)", fair, logistic,
        lambda eps, gen: dp_logistic_regression(logistic, fair, eps, DELTA, gen),
        lambda v: logistic.accuracy(v, fair), "accuracy",
        samples, repeats,
    ))  # fmt: skip

    kmeans = KMeans.from_pool(fair, FAIR, k=4, bounds=fair_bounds, seed=0)
    points = kmeans.points(fair)
    start = np.linspace(0.2, 0.8, 4)[:, None] * np.ones((4, len(FAIR)))  # public, data-free
    apps.append(App(
        "k-means (4 x 8 centroids, fair)", fair, kmeans,
        lambda eps, gen: dp_kmeans(kmeans, fair, start, eps, DELTA, gen),
        lambda v: kmeans_cost(points, v.reshape(4, len(FAIR))), "k-means cost",
        samples, repeats,
    ))  # fmt: skip

    mlp = SmallMLP("affairs", FAIR, fair_bounds, hidden=8, steps=300)
    apps.append(App(
        f"small network ({mlp.size} params, fair)", fair, mlp,
        lambda eps, gen: dp_mlp(mlp, fair, eps, DELTA, gen),
        lambda v: mlp.accuracy(v, fair), "accuracy",
        mlp_samples, max(3, repeats // 10),
    ))  # fmt: skip
    return apps


def run_app(app: App, beta: float, seed: int) -> dict[str, Any]:
    epsilon = dp_counterpart(beta, DELTA)
    exact = flatten(app.box(app.data))[1]
    started, cpu = time.perf_counter(), time.process_time()
    release = calibrate(app.box, app.data, mi_budget=beta, samples=app.samples, rng=seed)
    calibration_s = time.perf_counter() - started
    calibration_cpu = time.process_time() - cpu
    generator = np.random.default_rng(seed + 1)
    pac_values, dp_values, dp_noise = [], [], []
    for _ in range(app.repeats):  # each PAC repeat: a fresh secret half and fresh noise
        half = take_rows(app.data, membership_mask(len(app.data), generator))
        pac_values.append(flatten(app.box(half))[1] + release.noise.sample(generator))
        dp = app.dp(epsilon, generator)
        dp_values.append(np.asarray(dp.value, dtype=float).ravel())
        dp_noise.append(dp.noise_power)
    pac_err = float(np.mean([np.sum((v - exact) ** 2) for v in pac_values]))
    dp_err = float(np.mean([np.sum((v - exact) ** 2) for v in dp_values]))
    return {
        "application": app.name,
        "outputs": int(exact.size),
        "beta": beta,
        "posterior_success": posterior_success(beta),
        "dp_epsilon": epsilon,
        "pac_noise_power": release.noise.power,
        "pac_method": release.calibration.method,
        "pac_runs": release.calibration.runs,
        "pac_margin": release.calibration.margin,
        "pac_converged": release.calibration.converged,
        "pac_calibration_s": calibration_s,
        "pac_calibration_cpu_s": calibration_cpu,
        # analytic for output perturbation; otherwise the measured deviation caused by DP
        "dp_noise_power": float(np.mean(dp_noise)) if np.mean(dp_noise) > 0 else dp_err,
        "pac_error_power": pac_err,
        "dp_error_power": dp_err,
        "metric": app.metric,
        "pac_utility": float(np.mean(pac_scores := [app.utility(v) for v in pac_values])),
        "dp_utility": float(np.mean(dp_scores := [app.utility(v) for v in dp_values])),
        "pac_utility_sd": float(np.std(pac_scores, ddof=1)),
        "dp_utility_sd": float(np.std(dp_scores, ddof=1)),
        "exact_utility": app.utility(exact),
        "repeats": app.repeats,
    }


def timing(workers: int, seed: int) -> dict[str, Any]:
    """Calibration of a cheap function (3 column means on fair) with exactly 1,000 runs."""
    frame, _ = load_example("fair")
    box = Mean(("age", "yrs_married", "affairs"))
    started, cpu = time.perf_counter(), time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    release = calibrate(box, frame, mi_budget=2**-4, samples=1000, tolerance=1e-9,
                        max_margin=10.0, workers=workers, rng=seed)  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = time.process_time() - cpu + (after.ru_utime + after.ru_stime)
    cpu_s -= children.ru_utime + children.ru_stime
    return {"workers": workers, "runs": release.calibration.runs + release.calibration.reruns,
            "wall_s": wall, "cpu_s": cpu_s, "goal_s": GOAL_SECONDS}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mi", type=float, default=2**-4, help="PAC budget beta (nats)")
    parser.add_argument("--samples", type=int, default=1000, help="most black-box runs per app")
    parser.add_argument("--mlp-samples", type=int, default=400, help="runs for the network")
    parser.add_argument("--repeats", type=int, default=50, help="releases averaged per app")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="run apps whose name contains this")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    rows = []
    for app in applications(args.repeats, args.samples, args.mlp_samples):
        if args.only and args.only not in app.name:
            continue
        rows.append(run_app(app, args.mi, args.seed))
        print(f"done: {app.name} ({rows[-1]['pac_calibration_s']:.1f} s calibration)", flush=True)
    timings = [timing(w, args.seed) for w in (1, 2)]

    beta = args.mi
    print(f"\nbeta = {beta:g} nats -> posterior success <= {posterior_success(beta):.2%} "
          f"(prior 1/2) = DP epsilon {dp_counterpart(beta, DELTA):.4g} at delta {DELTA:g}\n")  # fmt: skip
    print("| application | d | PAC noise power | DP noise power | DP / PAC | PAC error power "
          "| DP error power | metric | PAC | DP | no noise | winner |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        higher_better = r["metric"] == "accuracy"
        pac_better = (r["pac_utility"] > r["dp_utility"]) == higher_better
        spread = math.hypot(r["pac_utility_sd"], r["dp_utility_sd"]) / math.sqrt(r["repeats"])
        winner = "PAC" if pac_better else "DP"
        if abs(r["pac_utility"] - r["dp_utility"]) < 2 * spread:
            winner = "tie (within 2 s.e.)"
        print(
            f"| {r['application']} | {r['outputs']} | {r['pac_noise_power']:.3g} "
            f"| {r['dp_noise_power']:.3g} | {r['dp_noise_power'] / r['pac_noise_power']:.3g}x "
            f"| {r['pac_error_power']:.3g} | {r['dp_error_power']:.3g} | {r['metric']} "
            f"| {r['pac_utility']:.4g} ± {r['pac_utility_sd']:.2g} "
            f"| {r['dp_utility']:.4g} ± {r['dp_utility_sd']:.2g} | {r['exact_utility']:.4g} "
            f"| {winner} |"
        )
    print()
    for t in timings:
        verdict = "meets" if t["wall_s"] <= GOAL_SECONDS else "MISSES"
        print(f"calibration, 3 column means on fair, {t['runs']} black-box runs, "
              f"workers={t['workers']}: {t['wall_s']:.2f} s wall, {t['cpu_s']:.2f} s CPU "
              f"({verdict} the {GOAL_SECONDS:.0f} s goal)")  # fmt: skip

    RESULTS.mkdir(exist_ok=True)
    path = args.json or RESULTS / f"pac_vs_dp-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps({
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "rows": rows, "timing": timings,
    }, indent=2, default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else x))  # fmt: skip
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
