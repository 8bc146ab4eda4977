"""Anonymization on adult-arx, side by side: safeshare vs anjana 1.2.3, anonypy 0.2.1, pycanon.

The problem (issue 3): ``datasets/adult-arx`` (30,162 records), the 8 quasi-identifiers (every
column but salary-class) with ARX's hierarchy files, k = 5; loss = ARX's Precision.  Known
optima: 0.6875 without suppression (two transformations tie), 0.503431 with at most 1%
suppressed (207 records, unique).

Every contender runs as its own process (a driver in ``benchmarks/drivers/`` under its own
venv's python); the harness measures each process with ``os.wait4`` (CPU = user + sys, peak
RSS, wall) and reads the driver's JSON answer:

* ``safeshare in-process``: ``Anonymizer.fit`` on the in-memory frame, the median of 31 runs
  after a warm-up, at 0% and at 1% suppression (the driver times itself);
* ``safeshare cold``: a fresh ``safeshare anonymize adult.csv --config anon.yaml --out DIR``
  process (read, anonymize, write anonymized.csv + card.json + report.html), median of 5;
* ``anjana``: its greedy k-anonymity (on pycanon) at 0% and 1%, once each (~5 s);
* ``anonypy``: its Mondrian k-anonymity (no hierarchies; NCP instead of precision), once;
* ``pycanon``: k, l and t of safeshare's released table, recomputed independently;
* ``1M rows``: k = 10 + distinct l = 2 on salary-class, on 1,000,000 rows made by
  ``make_adult_1m.py`` (adult-arx resampled with perturbation); read + fit in one process.

    .venv/bin/python benchmarks/anonymize_adult.py              # everything (~2 min)
    .venv/bin/python benchmarks/anonymize_adult.py --skip-peers  # safeshare only

Peers are set up by ``bash benchmarks/peers/setup_anonymize.sh``; a peer that is not set up is
reported as such.  The JSON goes to ``benchmarks/results/anonymize_adult-<time>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
DRIVERS = BENCH / "drivers"
VENVS = BENCH / ".venvs"
QUASI_IDENTIFIERS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
)
OPTIMUM = {0.0: 0.6875, 0.01: 0.503431}
# the goals and ARX's figures (Java 17, Flash, warm JVM, in-process median)
GOAL_MS = {0.0: 30.0, 0.01: 120.0}
ARX_MS = {0.0: 33.0, 0.01: 462.0}
ARX_COLD_S = (1.3, 2.2)
GOAL_BIG_S, GOAL_BIG_MB = 5.0, 2048.0
SETUP_HINT = "run `bash benchmarks/peers/setup_anonymize.sh`"


def find_dataset() -> Path | None:
    """The adult-arx folder under $SAFESHARE_SHARED or ../shared, if it is there."""
    env = os.environ.get("SAFESHARE_SHARED")
    shared = Path(env) if env else REPO.parent / "shared"
    folder = shared / "datasets" / "adult-arx"
    return folder if (folder / "adult.csv").is_file() else None


def run(python: Path, args: list[str], timeout: float = 900) -> dict[str, Any]:
    """Run a driver in a fresh process; its JSON answer plus what the process cost."""
    if not python.exists():
        return {"status": "not set up", "message": f"{python} missing; {SETUP_HINT}"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([str(python), *args], stdout=out, stderr=err, cwd=DRIVERS)
        killed = threading.Event()
        timer = threading.Timer(timeout, lambda: (killed.set(), proc.kill()))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    cost = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "wall_s": wall,
    }
    code = os.waitstatus_to_exitcode(status)
    if killed.is_set():
        return {**cost, "status": "timeout"}
    if code != 0:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-6:])
        return {**cost, "status": "failed", "message": f"exit {code}: {tail}"}
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    answer = json.loads(lines[-1]) if lines else {}
    return {**cost, "status": "ok", **answer}


def write_config(folder: Path, workdir: Path) -> Path:
    """The adult-arx config of the issue: k = 5, at most 1% suppressed."""
    lines = ["quasi_identifiers:"]
    lines += [
        f"  {c}: {{hierarchy: {folder / f'adult_hierarchy_{c}.csv'}}}" for c in QUASI_IDENTIFIERS
    ]
    lines += ["sensitive: [salary-class]", "privacy: {k: 5}", "suppression_limit: 0.01", ""]
    path = workdir / "anon.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def cold_runs(folder: Path, workdir: Path, repeats: int) -> dict[str, Any]:
    """A fresh `safeshare anonymize` process per repeat; median wall, CPU and peak memory."""
    config = write_config(folder, workdir)
    runs = []
    for i in range(repeats):
        out = workdir / f"cold-{i}"
        args = ["anonymize", str(folder / "adult.csv"), "--config", str(config)]
        done = run(
            Path(sys.executable),
            [str(DRIVERS / "safeshare_anonymize_cli.py"), *args, "--out", str(out), "--quiet"],
        )
        if done["status"] != "ok":
            return done
        runs.append(done)
    card = json.loads((workdir / "cold-0" / "card.json").read_text())
    return {
        "status": "ok",
        "n": repeats,
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "peak_mb": statistics.median(r["peak_mb"] for r in runs),
        "loss": card["search"]["score"],
        "suppressed": card["suppressed"],
        "released": str(workdir / "cold-0" / "anonymized.csv"),
    }


def big_run(folder: Path, workdir: Path, suppression: float) -> dict[str, Any]:
    """k = 10 + l = 2 on 1,000,000 perturbed Adult rows (made once, kept in results/)."""
    data = RESULTS / "adult_1m.csv"
    if not data.exists():
        made = subprocess.run(
            [sys.executable, str(BENCH / "make_adult_1m.py"), "--out", str(data)],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0 or not data.exists():
            return {"status": "failed", "message": made.stderr[-400:]}
    args = [str(DRIVERS / "safeshare_anonymize.py"), str(folder), "--big", str(data)]
    args += ["--k", "10", "--l", "2", "--suppression", str(suppression)]
    return run(Path(sys.executable), args)


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def fmt(value: Any, spec: str = ".4f") -> str:
    return "—" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31, help="in-process runs per case")
    parser.add_argument("--cold", type=int, default=5, help="cold processes")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    folder = find_dataset()
    if folder is None:
        print("needs datasets/adult-arx under $SAFESHARE_SHARED or ../shared; nothing to do")
        return 0
    me = Path(sys.executable)
    results: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average": os.getloadavg(),
    }
    driver = str(DRIVERS / "safeshare_anonymize.py")
    for suppression in (0.0, 0.01):
        key = f"safeshare_inprocess_{suppression:g}"
        results[key] = run(
            me,
            [
                driver,
                str(folder),
                "--suppression",
                str(suppression),
                "--repeats",
                str(args.repeats),
            ],
        )
        print(key, json.dumps(results[key]))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        results["safeshare_cold"] = cold_runs(folder, workdir, args.cold)
        print("safeshare_cold", json.dumps(results["safeshare_cold"]))
        if not args.skip_peers:
            released = results["safeshare_cold"].get("released")
            results["pycanon_check"] = (
                run(
                    VENVS / "pycanon" / "bin" / "python",
                    [str(DRIVERS / "pycanon_check.py"), released],
                )
                if released
                else {"status": "skipped"}
            )
            print("pycanon_check", json.dumps(results["pycanon_check"]))
            anjana = VENVS / "anjana" / "bin" / "python"
            for suppression in (0.0, 0.01):
                key = f"anjana_{suppression:g}"
                results[key] = run(
                    anjana,
                    [
                        str(DRIVERS / "anjana_anonymize.py"),
                        str(folder),
                        "--suppression",
                        str(suppression),
                    ],
                )
                print(key, json.dumps(results[key]))
            results["anonypy"] = run(
                VENVS / "anonypy" / "bin" / "python",
                [str(DRIVERS / "anonypy_anonymize.py"), str(folder)],
            )
            print("anonypy", json.dumps(results["anonypy"]))
        if not args.skip_big:
            for suppression in (0.0, 0.01):
                key = f"big_1m_{suppression:g}"
                results[key] = big_run(folder, workdir, suppression)
                print(key, json.dumps(results[key]))
        for summary in results.values():
            if isinstance(summary, dict):
                summary.pop("released", None)
    print()
    print(summarize(results))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = args.json or RESULTS / f"anonymize_adult-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten {path}")
    return 0


def summarize(results: dict[str, Any]) -> str:
    rows = [
        [
            "contender",
            "suppression",
            "loss (precision)",
            "time",
            "CPU s (process)",
            "peak MB",
            "vs goal / ARX",
        ]
    ]
    for suppression in (0.0, 0.01):
        r = results.get(f"safeshare_inprocess_{suppression:g}", {})
        if r.get("status") == "ok":
            median = r["median_ms"]
            rows.append(
                [
                    "safeshare in-process (fit, median)",
                    f"{suppression:.0%}",
                    f"{r['loss']:.6f} ({r['suppressed']} supp.)",
                    f"{median:.1f} ms",
                    f"{r['cpu_s']:.1f}",
                    f"{r['peak_mb']:.0f}",
                    f"goal {GOAL_MS[suppression]:.0f} ms; ARX {ARX_MS[suppression]:.0f} ms = "
                    f"{ARX_MS[suppression] / median:.1f}x",
                ]
            )
    cold = results.get("safeshare_cold", {})
    if cold.get("status") == "ok":
        rows.append(
            [
                "safeshare cold process",
                "1%",
                f"{cold['loss']:.6f}",
                f"{cold['wall_s']:.2f} s",
                f"{cold['cpu_s']:.2f}",
                f"{cold['peak_mb']:.0f}",
                f"ARX cold {ARX_COLD_S[0]}–{ARX_COLD_S[1]} s",
            ]
        )
    for suppression in (0.0, 0.01):
        r = results.get(f"anjana_{suppression:g}", {})
        if r:
            ok = r.get("status") == "ok"
            ss = results.get(f"safeshare_inprocess_{suppression:g}", {})
            ratio = (
                f"{1000 * r['seconds'] / ss['median_ms']:.0f}x safeshare's time"
                if ok and ss.get("status") == "ok"
                else r.get("status", "")
            )
            rows.append(
                [
                    "anjana 1.2.3",
                    f"{suppression:.0%}",
                    fmt(r.get("loss")) if ok else r.get("status", ""),
                    f"{r['seconds']:.2f} s" if ok else "—",
                    fmt(r.get("cpu_s"), ".1f"),
                    fmt(r.get("peak_mb"), ".0f"),
                    ratio,
                ]
            )
    r = results.get("anonypy", {})
    if r:
        ok = r.get("status") == "ok"
        rows.append(
            [
                "anonypy 0.2.1 (Mondrian, NCP)",
                "0%",
                f"NCP {r['ncp']:.4f}, k={r['k']}" if ok else r.get("status", ""),
                f"{r['seconds']:.1f} s" if ok else "—",
                fmt(r.get("cpu_s"), ".1f"),
                fmt(r.get("peak_mb"), ".0f"),
                "",
            ]
        )
    r = results.get("pycanon_check", {})
    if r:
        ok = r.get("status") == "ok"
        rows.append(
            [
                "pycanon check of safeshare's table",
                "1%",
                f"k={r['k']}, l={r['l']}, t={r['t']:.3f}" if ok else r.get("status", ""),
                f"{r['seconds']:.2f} s" if ok else "—",
                fmt(r.get("cpu_s"), ".1f"),
                fmt(r.get("peak_mb"), ".0f"),
                "",
            ]
        )
    for suppression in (0.0, 0.01):
        r = results.get(f"big_1m_{suppression:g}", {})
        if r:
            ok = r.get("status") == "ok"
            rows.append(
                [
                    "safeshare 1M rows, k=10 + l=2",
                    f"{suppression:.0%}",
                    f"{r['loss']:.6f} ({r['suppressed']} supp.)" if ok else r.get("status", ""),
                    f"{r['total_s']:.2f} s (read {r['read_s']:.2f})" if ok else "—",
                    fmt(r.get("cpu_s"), ".1f"),
                    fmt(r.get("peak_mb"), ".0f"),
                    f"goal {GOAL_BIG_S:.0f} s, {GOAL_BIG_MB:.0f} MB",
                ]
            )
    return table(rows)


if __name__ == "__main__":
    sys.exit(main())
