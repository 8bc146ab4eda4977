"""safeshare's exact search against ARX's (Flash), side by side on the same hierarchies.

Two tables safeshare's search was not tuned on, each with an integer sensitive attribute:
COMPAS (7,214 records; sensitive ``decile_score``, 1-10) and UCI Adult (32,561 records;
sensitive ``education-num``, 1-16, with ``education``, its one-to-one twin, left out).
Hierarchies are built once by safeshare (``auto``, ``dates``) and written as ARX CSV files,
so both tools read the same ones.  Per table, the first 6 and 8 quasi-identifiers under
k = 5 alone and with each of distinct l = 3, entropy l = 3, recursive (4, 3), and
t = 0.3 with equal, ordered and hierarchical distance, at 0% and 5% suppression; and the
first 11 quasi-identifiers under k = 5 alone (ARX's optimal search beyond its 100,000-node
default).  Quality model: precision (ARX's Precision, arithmetic mean).

What is timed: ARX's ``ARXAnonymizer.anonymize`` in one warm JVM (the data read before the
clock starts); safeshare's ``Anonymizer.fit`` in one Python process (encoding, search,
suppression, the released frame, quality and the engine's recount), CPU seconds of the
process.  Each side runs its cases in turn, twice, interleaved (ARX, safeshare, ARX,
safeshare), each round in a fresh process of its own (a JVM, a Python interpreter: on a
shared machine the same code runs up to a quarter slower in one process than in the next);
each figure is the median of the runs after a warm-up, and the table shows the smaller of the
two rounds' medians.

    ARX_SRC=/path/to/arx bash benchmarks/peers/setup_arx.sh
    .venv/bin/python benchmarks/anonymize_arx.py [--quick] [--rounds 2] [--cases "11 QIs"]

``--phases`` splits safeshare's fit instead, beside one round of ARX on the same cases: the
preparation (encoding, the distinct rows), the search with its checks (the roll-ups and their
judgement, replayed alone in the search's order), the release, and the budget ten times
ARX's speed would leave:

    .venv/bin/python benchmarks/anonymize_arx.py --phases --cases "11 QIs k=5 0%"
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.evaluator import Evaluator
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import NoSolutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from release_raw_tables import compas_csv

HERE = Path(__file__).resolve().parent
ARX = HERE / ".venvs" / "arx"
SHARED = Path(os.environ.get("SAFESHARE_SHARED", HERE.parents[1] / "shared"))
ADULT_NAMES = [
    *("age", "workclass", "fnlwgt", "education", "education-num", "marital-status"),
    *("occupation", "relationship", "race", "sex", "capital-gain", "capital-loss"),
    *("hours-per-week", "native-country", "salary"),
]
TABLES: dict[str, dict[str, Any]] = {
    "compas": {
        "sensitive": "decile_score",
        "qis": {
            **{"sex": "auto", "age": "auto", "race": "auto", "juv_fel_count": "auto"},
            **{"juv_misd_count": "auto", "priors_count": "auto", "c_charge_degree": "auto"},
            **{"juv_other_count": "auto", "dob": "dates", "compas_screening_date": "dates"},
            "is_recid": "auto",
        },
    },
    "adult-uci": {
        "sensitive": "education-num",
        "qis": {
            **{"age": "auto", "sex": "auto", "race": "auto", "marital-status": "auto"},
            **{"workclass": "auto", "relationship": "auto", "hours-per-week": "auto"},
            **{"native-country": "auto", "occupation": "auto", "capital-gain": "auto"},
            "capital-loss": "auto",
        },
    },
}
MODELS = {
    "k=5": ({}, "k=5"),
    "distinct l=3": ({"l_diversity": {"l": 3}}, "k=5,distinct=3"),
    "entropy l=3": ({"l_diversity": {"l": 3, "variant": "entropy"}}, "k=5,entropy=3"),
    "recursive (4,3)": (
        {"l_diversity": {"l": 3, "variant": "recursive", "c": 4}},
        "k=5,recursive=4:3",
    ),
    "t=0.3 equal": ({"t_closeness": {"t": 0.3}}, "k=5,equal=0.3"),
    "t=0.3 ordered": ({"t_closeness": {"t": 0.3, "distance": "ordered"}}, "k=5,ordered=0.3"),
    "t=0.3 hierarchical": (
        {"t_closeness": {"t": 0.3, "distance": "hierarchical"}},
        "k=5,hierarchical=0.3",
    ),
}


@dataclass
class Case:
    name: str
    table: str
    width: int
    model: str
    limit: float
    warm: int
    runs: int


def read_table(name: str, folder: Path) -> pd.DataFrame:
    if name == "compas":
        return pd.read_csv(compas_csv(folder), dtype=str)
    return pd.read_csv(
        SHARED / "datasets" / "adult-uci" / "adult.data",
        header=None,
        names=ADULT_NAMES,
        skipinitialspace=True,
        dtype=str,
    )


def write_arx_hierarchy(h: Hierarchy, path: Path) -> None:
    """One row per value: its label at every level, ``;``-separated (ARX's CSV format)."""
    rows = [
        ";".join([value, *(h.labels[level][h.maps[level][i]] for level in range(1, h.height + 1))])
        for i, value in enumerate(h.values)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _span(value: int, width: int) -> str:
    low = (value - 1) // width * width + 1
    return f"{low}-{low + width - 1}"


def prepare(folder: Path) -> dict[str, dict[str, Any]]:
    """Per table: its frame, its hierarchies (safeshare's) and their ARX files."""
    out = {}
    for name, spec in TABLES.items():
        frame = read_table(name, folder)
        sensitive, qis = spec["sensitive"], list(spec["qis"])
        frame = frame[[*qis, sensitive]].dropna().reset_index(drop=True)
        frame[sensitive] = frame[sensitive].astype(int).astype(str)
        config = {
            "quasi_identifiers": {c: {"hierarchy": h} for c, h in spec["qis"].items()},
            "privacy": {"k": 2},
        }
        built = Anonymizer(config).prepare(frame, None)
        hierarchies = dict(zip(qis, built.hierarchies, strict=True))
        files = {}
        for column, h in hierarchies.items():
            files[column] = folder / f"{name}-{column}.csv"
            write_arx_hierarchy(h, files[column])
        values = sorted({int(v) for v in frame[sensitive]})
        sens_rows = [[str(v), _span(v, 2), _span(v, 4), "*"] for v in values]
        sens_h = Hierarchy.from_rows(sensitive, sens_rows)
        sens_file = folder / f"{name}-{sensitive}.csv"
        write_arx_hierarchy(sens_h, sens_file)
        data_file = folder / f"{name}.csv"
        frame.to_csv(data_file, sep=";", index=False)
        out[name] = {
            "frame": frame,
            "sensitive": sensitive,
            "hierarchies": hierarchies,
            "files": files,
            "sensitive_file": sens_file,
            "sensitive_hierarchy": sens_h,
            "order": [str(v) for v in values],
            "data_file": data_file,
        }
    return out


def cases(quick: bool) -> list[Case]:
    out = []
    for table in TABLES:
        for width in (6,) if quick else (6, 8):
            for model in ("k=5", "entropy l=3", "t=0.3 hierarchical") if quick else MODELS:
                for limit in (0.0, 0.05):
                    out.append(
                        Case(
                            f"{table} {width} QIs {model} {limit:.0%}",
                            table,
                            width,
                            model,
                            limit,
                            3,
                            9,
                        )
                    )
        if not quick:
            for limit in (0.0, 0.05):  # (warm runs where they are cheap: ARX's JIT warms up)
                warm, runs = (3, 5) if limit == 0 else (0, 1)
                out.append(
                    Case(f"{table} 11 QIs k=5 {limit:.0%}", table, 11, "k=5", limit, warm, runs)
                )
    return out


def arx_round(todo: list[Case], tables: dict[str, dict[str, Any]], folder: Path) -> dict[str, dict]:
    lines = []
    for case in todo:
        t = tables[case.table]
        qis = list(t["hierarchies"])[: case.width]
        specs = ",".join(f"{c}={t['files'][c]}" for c in qis)
        model = MODELS[case.model][1]
        sensitive = t["sensitive"] if model != "k=5" else "-"
        fields = [case.name, str(t["data_file"]), specs, sensitive, str(t["sensitive_file"]), model]
        lines.append(
            "\t".join([*fields, str(case.limit), "optimal", "0", str(case.warm), str(case.runs)])
        )
    cases_file = folder / "cases.tsv"
    cases_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    classpath = (ARX / "classpath.txt").read_text().strip()
    done = subprocess.run(
        ["java", "-Xmx8g", "-cp", classpath, "ArxAnonymize", str(cases_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    out = {}
    for line in done.stdout.splitlines():
        name, median, low, cpu, transformation, score, checked = line.split("\t")
        out[name] = {"ms": float(median), "min_ms": float(low), "cpu_ms": float(cpu),
                     "node": transformation, "score": score, "checked": int(checked)}  # fmt: skip
    return out


def safeshare_config(case: Case, t: dict[str, Any]) -> dict[str, Any]:
    qis = list(t["hierarchies"])[: case.width]
    extra, _ = MODELS[case.model]
    sensitive = t["sensitive"]
    privacy: dict[str, Any] = {"k": 5}
    for key, value in extra.items():
        privacy[key] = {**value, "attribute": sensitive}
    return {
        "quasi_identifiers": {c: {} for c in qis},
        "sensitive": {sensitive: {"hierarchy": str(t["sensitive_file"]), "order": t["order"]}}
        if extra
        else {},
        "privacy": privacy,
        "suppression_limit": case.limit,
        "quality": "precision",
        "other_columns": "drop",
    }


def safeshare_round(todo: list[Case], tables: dict[str, dict[str, Any]]) -> dict[str, dict]:
    out = {}
    for case in todo:
        t = tables[case.table]
        qis = list(t["hierarchies"])[: case.width]
        given = {c: t["hierarchies"][c] for c in qis}
        given[t["sensitive"]] = t["sensitive_hierarchy"]  # (read once, as ARX's are)
        anonymizer = Anonymizer(safeshare_config(case, t), hierarchies=given)
        columns = [*qis, t["sensitive"]]
        frame = t["frame"][columns]
        times, node, score, checked = [], "none", float("nan"), 0
        for run in range(case.warm + case.runs):
            started = time.process_time()
            try:
                result = anonymizer.fit(frame)
                node, score = str([result.transformation[c] for c in qis]), result.search["score"]
                checked = result.search["transformations_checked"]
            except NoSolutionError:
                node = "none"
            if run >= case.warm:
                times.append((time.process_time() - started) * 1000)
        out[case.name] = {
            "cpu_ms": statistics.median(times),
            "node": node,
            "score": score,
            "checked": checked,
        }
        print(f"  safeshare {case.name}: {out[case.name]['cpu_ms']:.1f} ms", file=sys.stderr)
    return out


@contextmanager
def checks_recorded() -> Iterator[list[tuple[tuple[int, ...], bool]]]:
    """The nodes every :class:`Evaluator` assesses meanwhile, in order (with ``complete``)."""
    recorded: list[tuple[tuple[int, ...], bool]] = []
    assess = Evaluator.assess

    def recording(self: Evaluator, node: tuple[int, ...], complete: bool = True) -> Any:
        recorded.append((node, complete))
        return assess(self, node, complete)

    Evaluator.assess = recording  # type: ignore[method-assign]
    try:
        yield recorded
    finally:
        Evaluator.assess = assess  # type: ignore[method-assign]


def phases_round(todo: list[Case], tables: dict[str, dict[str, Any]], fits: int = 30) -> dict:
    """Per case, safeshare's fit split into its phases (CPU ms, medians of ``fits`` runs)."""
    out = {}
    for case in todo:
        t = tables[case.table]
        qis = list(t["hierarchies"])[: case.width]
        given = {c: t["hierarchies"][c] for c in qis}
        given[t["sensitive"]] = t["sensitive_hierarchy"]
        anonymizer = Anonymizer(safeshare_config(case, t), hierarchies=given)
        out[case.name] = fit_phases(anonymizer, t["frame"][[*qis, t["sensitive"]]], fits)
    return out


def fit_phases(anonymizer: Anonymizer, frame: pd.DataFrame, fits: int) -> dict[str, float]:
    """One case's phases, interleaved run by run; the release is what the fit adds to the
    preparation and the search."""
    for _ in range(5):  # (warm-up)
        anonymizer.fit(frame)
    problem = anonymizer.prepare(frame, None).problem
    with checks_recorded() as checks:
        anonymizer.search(problem)

    def replay() -> None:
        evaluator = Evaluator(problem)
        for node, complete in checks:
            evaluator.assess(node, complete)

    runs = {
        "fit": lambda: anonymizer.fit(frame),
        "prepare": lambda: anonymizer.prepare(frame, None),
        "search": lambda: anonymizer.search(problem),
        "checks": replay,
    }
    taken: dict[str, list[float]] = {phase: [] for phase in runs}
    for _ in range(fits):
        for phase, run in runs.items():
            started = time.process_time()
            run()
            taken[phase].append((time.process_time() - started) * 1000)
    phases = {phase: statistics.median(times) for phase, times in taken.items()}
    phases["release"] = phases["fit"] - phases["prepare"] - phases["search"]
    return {**phases, "checked": len(checks)}


def print_phases(todo: list[Case], arx: dict[str, dict], ours: dict[str, dict]) -> None:
    print(
        f"{'case':<28} {'ARX':>7} {'10x':>6} {'fit':>6} {'prepare':>8} {'search':>7} "
        f"{'checks':>7} {'release':>8} {'fit, checks free':>17}"
    )
    for case in todo:
        a, p = arx[case.name]["cpu_ms"], ours[case.name]
        print(
            f"{case.name:<28} {a:>7.1f} {a / 10:>6.1f} {p['fit']:>6.1f} {p['prepare']:>8.1f} "
            f"{p['search']:>7.1f} {p['checks']:>7.1f} {p['release']:>8.1f} "
            f"{p['fit'] - p['checks']:>17.1f}   ({p['checked']} checks)",
            flush=True,
        )


def safeshare_in_a_fresh_process(quick: bool, only: str, folder: Path) -> dict[str, dict]:
    """One :func:`safeshare_round` in a new Python process, as each of ARX's runs in a new JVM."""
    out = folder / "safeshare_round.json"
    command = [sys.executable, __file__, "--cases", only, "--safeshare-round", str(out)]
    subprocess.run([*command, *(["--quick"] if quick else [])], check=True)
    return json.loads(out.read_text())


def _close(arx: str, ours: float) -> bool:
    """Whether ARX's printed score and safeshare's agree (to 1e-6)."""
    try:
        return abs(float(arx) - ours) < 1e-6
    except ValueError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", default="", help="only the cases whose name holds this text")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "anonymize_arx.json")
    parser.add_argument("--phases", action="store_true", help="split safeshare's fit, beside ARX")
    parser.add_argument("--safeshare-round", type=Path, help=argparse.SUPPRESS)  # (the child)
    args = parser.parse_args()
    if args.safeshare_round is not None:  # one round of safeshare's, in this fresh process
        with tempfile.TemporaryDirectory() as tmp:
            todo = [case for case in cases(args.quick) if args.cases in case.name]
            ours = safeshare_round(todo, prepare(Path(tmp)))
        args.safeshare_round.write_text(json.dumps(ours) + "\n")
        return
    if not (ARX / "classpath.txt").is_file():
        sys.exit("ARX is not built: ARX_SRC=/path/to/arx bash benchmarks/peers/setup_arx.sh")
    todo = [case for case in cases(args.quick) if args.cases in case.name]
    if args.phases:
        with tempfile.TemporaryDirectory() as tmp:
            tables = prepare(Path(tmp))
            warmer = [replace(case, warm=max(case.warm, 10)) for case in todo]  # (ARX's JIT)
            print_phases(todo, arx_round(warmer, tables, Path(tmp)), phases_round(todo, tables))
        return
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tables = prepare(folder)
        for r in range(args.rounds):
            print(f"round {r + 1}: ARX", file=sys.stderr)
            arx = arx_round(todo, tables, folder)
            print(f"round {r + 1}: safeshare", file=sys.stderr)
            ours = safeshare_in_a_fresh_process(args.quick, args.cases, folder)
            rounds.append({"arx": arx, "safeshare": ours})
    rows = []
    print(
        f"{'case':<44} {'ARX ms':>8} {'ARX cpu':>8} {'checked':>7} {'ss cpu':>8} {'checked':>7} "
        f"{'ARX/ss':>7}  optimum (ARX / safeshare)"
    )
    for case in todo:
        arx_ms = min(r["arx"][case.name]["ms"] for r in rounds)
        arx_cpu = min(r["arx"][case.name]["cpu_ms"] for r in rounds)
        ours = min(r["safeshare"][case.name]["cpu_ms"] for r in rounds)
        a, s = rounds[0]["arx"][case.name], rounds[0]["safeshare"][case.name]
        agree = a["node"] == "none" if s["node"] == "none" else _close(a["score"], s["score"])
        rows.append({"case": case.name, "arx_ms": arx_ms, "arx_cpu_ms": arx_cpu,
                     "safeshare_cpu_ms": ours, "arx_node": a["node"], "safeshare_node": s["node"],
                     "arx_score": a["score"], "safeshare_score": s["score"], "agree": agree,
                     "arx_checked": a["checked"], "safeshare_checked": s["checked"]})  # fmt: skip
        print(
            f"{case.name:<44} {arx_ms:>8.1f} {arx_cpu:>8.1f} {a['checked']:>7} {ours:>8.1f} "
            f"{s['checked']:>7} {arx_cpu / ours:>6.2f}x  {'same' if agree else 'DIFFERS'} "
            f"{a['node']} {a['score']} / {s['node']} {s['score']:.6f}",
            flush=True,
        )
    ratios = [r["arx_cpu_ms"] / r["safeshare_cpu_ms"] for r in rows]
    print(
        f"\n{len(rows)} cases: ARX / safeshare CPU from {min(ratios):.2f}x to {max(ratios):.2f}x; "
        f"safeshare at least as fast in {sum(q >= 1 for q in ratios)}; the optimum's score "
        f"agrees in {sum(r['agree'] for r in rows)}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "rounds": rounds}, indent=1) + "\n")


if __name__ == "__main__":
    main()
