"""Journalist and marketer risk from the population model, against the truth counted in the
population, on UCI Adult taken as the population (32,561 people) and samples of it.

``safeshare risk SAMPLE --population-size N`` estimates how many people share each class
(Pitman, Zayatz, SNB, Dankar's choice among them); with ``--population FILE`` it counts them.
Here the population is known, so the estimate meets its truth, beside the naive ``F = f / pi``
(each class scaled by the sampling fraction), for the example's quasi-identifiers in
``docs/cli.md`` and the first four of them, 5% and 20% samples, three seeds each.

    .venv/bin/python benchmarks/risk_population_model.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from safeshare.data import Column, Domain, Kind, Table
from safeshare.evaluate.reidentification import reidentification_risk

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("SAFESHARE_SHARED", HERE.parents[1] / "shared"))
NAMES = [
    *("age", "workclass", "fnlwgt", "education", "education-num", "marital-status"),
    *("occupation", "relationship", "race", "sex", "capital-gain", "capital-loss"),
    *("hours-per-week", "native-country", "salary"),
]
EXAMPLE = ["age", "sex", "race", "marital-status", "education"]  # (docs/cli.md's)


def main() -> None:
    path = SHARED / "datasets" / "adult-uci" / "adult.data"
    if not path.is_file():
        print(f"{path} is absent (set SAFESHARE_SHARED); nothing to measure")
        return
    adult = pd.read_csv(path, header=None, names=NAMES, skipinitialspace=True, dtype=str)
    print("QIs  sample  seed  marketer: true  population model  f/pi  | journalist max")
    for qis in (EXAMPLE[:4], EXAMPLE):
        people = adult[qis]
        domain = Domain(
            tuple(
                Column(c, Kind.CATEGORICAL, categories=tuple(sorted(set(people[c])))) for c in qis
            )
        )
        population = Table.from_frame(people, domain)[0]
        for share in (0.05, 0.2):
            for seed in range(3):
                drawn = people.sample(frac=share, random_state=seed)
                sample = Table.from_frame(drawn, domain)[0]
                truth = reidentification_risk(sample, qis, population=population)
                model = reidentification_risk(sample, qis, population_size=len(people))
                naive = drawn.drop_duplicates().shape[0] / len(people)  # classes / N
                print(
                    f"{len(qis):>3}  {share:>6.0%}  {seed:>4}  {truth.marketer:>14.3f}  "
                    f"{model.marketer:>16.3f}  {naive:>4.3f}  | {truth.journalist_max:.2f} / "
                    f"{model.journalist_max:.2f}"
                )


if __name__ == "__main__":
    main()
