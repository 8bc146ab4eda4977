"""Privacy attacks side by side: safeshare vs anonymeter 1.1.0, and DCR at 100,000 x 100,000.

Both run the singling-out (multivariate, 3 columns), linkability and inference attacks with 500
attacks on 10,000 training rows of UCI Adult, with a control set of 10,000 other rows, on five
releases with known answers:

* ``copy``: the training rows themselves (every attack should find a large risk);
* ``noisy copy``: the training rows with 10% of the cells replaced by the column's value in
  another training row (a large risk);
* ``k=5``: the training rows 5-anonymized on age, sex, race and marital-status by safeshare's
  anonymizer (auto hierarchies, 5% suppression), the other columns kept as they are (a large
  risk through them); safeshare reads its generalized values as the codes they cover,
  anonymeter reads the columns the release wrote as text as text in all three tables (its
  predicates cannot compare ``17-26`` with 39);
* ``k=5, recoded``: the same release, anonymeter given train and control recoded to the
  release's cells (39 written ``37-46``, as a reader holding the hierarchy would): its
  predicates then mean what safeshare's covered-set predicates mean, the like-for-like check;
* ``resample``: 10,000 further Adult rows, independent of train and control (no risk);
* ``resample, control 2,500``: the same release with a control set a quarter of train's size.
  No risk either: anonymeter compares the attack's success on train with that on the smaller
  control as they are, where safeshare first cuts train to control's size.

Every contender runs as its own process (a driver in ``benchmarks/drivers/`` with its own venv's
python); the harness measures the process (CPU = user + sys, peak RSS, wall; imports included)
and reads each attack's own time and risk from the driver's JSON.  Then safeshare's DCR runs on
100,000 released x 100,000 reference mixed-type rows, twice (a close release, a far one).

    .venv/bin/python benchmarks/eval_anonymeter.py --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
ATTACKS = ("singling_out", "linkability", "inference")
QUASI_IDENTIFIERS = ("age", "sex", "race", "marital-status")
NOISE = 0.10  # the noisy copy's share of cells taken from another training row
NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]  # fmt: skip
NOT_SET_UP = (
    "run: python3 -m venv benchmarks/.venvs/anonymeter && "
    "benchmarks/.venvs/anonymeter/bin/pip install anonymeter==1.1.0"
)
GOAL_SPEEDUP = 20.0
GOAL_DCR_SECONDS = 30.0
GOAL_DCR_MB = 2048.0


def find_adult() -> Path | None:
    env = os.environ.get("SAFESHARE_SHARED")
    shared = Path(env) if env else REPO.parent / "shared"
    path = shared / "datasets" / "adult-uci" / "adult.data"
    return path if path.is_file() else None


def prepare(adult: Path, folder: Path, rows: int, seed: int) -> dict[str, Path]:
    """train, control and the two synthetic tables as CSV with a header (standard library only)."""
    with adult.open(encoding="utf-8") as handle:
        records = [[v.strip() for v in r] for r in csv.reader(handle) if len(r) == len(NAMES)]
    random.Random(seed).shuffle(records)
    if len(records) < 3 * rows:
        raise SystemExit(f"Adult has {len(records)} rows; --rows {rows} needs {3 * rows}")
    parts = {
        "train": records[:rows],
        "control": records[rows : 2 * rows],
        "resample": records[2 * rows : 3 * rows],
    }
    paths = {}
    for name, part in parts.items():
        paths[name] = folder / f"{name}.csv"
        with paths[name].open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(NAMES)
            writer.writerows([["" if v == "?" else v for v in r] for r in part])
    paths["copy"] = paths["train"]
    paths["noisy copy"] = folder / "noisy_copy.csv"
    noisy = random.Random(seed + 1)
    with paths["noisy copy"].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(NAMES)
        for row in parts["train"]:
            cells = [parts["train"][noisy.randrange(rows)][i] if noisy.random() < NOISE else v
                     for i, v in enumerate(row)]  # fmt: skip
            writer.writerow(["" if v == "?" else v for v in cells])
    paths["control 2,500"] = folder / "control_small.csv"
    with paths["control 2,500"].open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(NAMES)
        writer.writerows(
            [["" if v == "?" else v for v in r] for r in parts["control"][: rows // 4]]
        )
    paths["k=5"] = five_anonymous(paths["train"], folder)
    paths.update(recoded(paths, "k=5", folder))
    return paths


def five_anonymous(train: Path, folder: Path) -> Path:
    """The training rows 5-anonymized by safeshare's anonymizer, written as text."""
    import pandas as pd

    from safeshare.anonymize.anonymizer import Anonymizer

    config = {
        "quasi_identifiers": {c: {"hierarchy": "auto"} for c in QUASI_IDENTIFIERS},
        "privacy": {"k": 5},
        "suppression_limit": 0.05,
        "other_columns": "keep",
    }
    frame = pd.read_csv(train, dtype=str, keep_default_na=False)
    path = folder / "k5.csv"
    Anonymizer(config).fit(frame).frame.to_csv(path, index=False)
    return path


def recoded(paths: dict[str, Path], release: str, folder: Path) -> dict[str, Path]:
    """Train and control with each quasi-identifier's value written as the ``release``'s cell
    holding it (``*`` where none does), as ``train recoded`` and ``control recoded``."""
    import numpy as np
    import pandas as pd

    from safeshare.data import encode_frame, read_frame
    from safeshare.evaluate.generalized import cell_sets
    from safeshare.release.evaluation import evaluation_domain

    tables = {name: read_frame(paths[name]) for name in ("train", "control")}
    domain, _ = evaluation_domain(tables["train"], tables["control"])
    written = pd.read_csv(paths[release], dtype=str, keep_default_na=False)
    cells = {c: sorted(set(written[c]) - {"*"}) for c in QUASI_IDENTIFIERS}
    sets = {c: cell_sets(pd.DataFrame({c: v}), domain.project([c])) for c, v in cells.items()}
    out = {}
    for name, table in tables.items():
        frame = pd.read_csv(paths[name], dtype=str, keep_default_na=False)
        codes = encode_frame(table, domain)[0]
        for c in QUASI_IDENTIFIERS:
            masks = sets[c].masks[c][sets[c].rows[c]][:, codes.column(c)]
            frame[c] = np.where(masks.any(axis=0), np.array(cells[c])[masks.argmax(axis=0)], "*")
        out[f"{name} recoded"] = folder / f"{name}_recoded.csv"
        frame.to_csv(out[f"{name} recoded"], index=False)
    return out


# each case: the release, the control set, whether the release holds generalized values, and
# the train and control tables anonymeter reads instead (None: the same as safeshare's)
CASES: dict[str, tuple[str, str, bool, tuple[str, str] | None]] = {
    "copy": ("copy", "control", False, None),
    "noisy copy": ("noisy copy", "control", False, None),
    "k=5": ("k=5", "control", True, None),
    "k=5, recoded": ("k=5", "control", True, ("train recoded", "control recoded")),
    "resample": ("resample", "control", False, None),
    "resample, control 2,500": ("resample", "control 2,500", False, None),
}


def run(command: list[str], timeout: float, cwd: Path) -> dict[str, Any]:
    """Run a driver; its last stdout line is JSON.  Adds cpu, peak MB and wall from wait4."""
    with tempfile.TemporaryFile() as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except KeyboardInterrupt:
            proc.kill()
            raise
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        sink.seek(0)
        text = sink.read().decode(errors="replace")
    if proc.returncode != 0 or wall > timeout:
        return {"error": f"exit {proc.returncode}: " + "\n".join(text.splitlines()[-8:])}
    result = json.loads(text.strip().splitlines()[-1])
    result.update(cpu=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024, wall=wall)
    return result


def contenders(only: str | None) -> dict[str, list[str]]:
    drivers = BENCH / "drivers"
    peers = {
        "safeshare": [sys.executable, str(drivers / "safeshare_eval.py")],
        "anonymeter": [
            str(BENCH / ".venvs" / "anonymeter" / "bin" / "python"),
            str(drivers / "anonymeter_eval.py"),
        ],
    }
    return {k: v for k, v in peers.items() if only in (None, k)}


def inside(value: float, interval: list[float]) -> bool:
    return interval[0] - 1e-9 <= value <= interval[1] + 1e-9


def summarize(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Medians per case and contender; whether safeshare's risks fall in anonymeter's intervals."""
    out: dict[str, Any] = {}
    for case, by_contender in runs.items():
        out[case] = {}
        for name, results in by_contender.items():
            ok = [r for r in results if "error" not in r]
            if not ok:
                out[case][name] = {"error": results[0]["error"] if results else "no run"}
                continue
            entry = {
                attack: {
                    "seconds": statistics.median(r[attack]["seconds"] for r in ok),
                    "risk": statistics.median(r[attack]["risk"] for r in ok),
                    "intervals": [r[attack]["interval"] for r in ok],
                    "risks": [r[attack]["risk"] for r in ok],
                }
                for attack in ATTACKS
            }
            entry["attacks_seconds"] = statistics.median(
                sum(r[a]["seconds"] for a in ATTACKS) for r in ok
            )
            entry["cpu"] = statistics.median(r["cpu"] for r in ok)
            entry["peak_mb"] = statistics.median(r["peak_mb"] for r in ok)
            out[case][name] = entry
        ours, peer = out[case].get("safeshare"), out[case].get("anonymeter")
        if ours and peer and "error" not in ours and "error" not in peer:
            out[case]["speedup"] = peer["attacks_seconds"] / ours["attacks_seconds"]
            out[case]["cpu_ratio"] = peer["cpu"] / ours["cpu"]
            out[case]["inside"] = {
                a: [inside(r, i) for r in ours[a]["risks"] for i in peer[a]["intervals"]]
                for a in ATTACKS
            }
            out[case]["peer_inside_ours"] = {
                a: [inside(r, i) for r in peer[a]["risks"] for i in ours[a]["intervals"]]
                for a in ATTACKS
            }
    return out


def print_attacks(summary: dict[str, Any]) -> None:
    for case, entry in summary.items():
        print(f"\n{case}: train, control and release as above, 500 attacks (medians)")
        header = f"{'attack':<14}{'safeshare s':>12}{'anonymeter s':>14}{'ratio':>8}"
        print(header + "  safeshare risk   anonymeter risk [interval]")
        ours, peer = entry.get("safeshare", {}), entry.get("anonymeter", {})
        for attack in ATTACKS:
            a, b = ours.get(attack), peer.get(attack)
            ratio = f"{b['seconds'] / a['seconds']:.1f}x" if a and b else "-"
            risk_a = f"{a['risk']:+.3f}" if a else "-"
            risk_b = (
                f"{b['risk']:.3f} [{b['intervals'][0][0]:.3f}, {b['intervals'][0][1]:.3f}]"
                if b
                else "-"
            )
            ours_s = a["seconds"] if a else float("nan")
            peer_s = b["seconds"] if b else float("nan")
            print(f"{attack:<14}{ours_s:>12.2f}{peer_s:>14.2f}{ratio:>8}  {risk_a:>14}   {risk_b}")
        if "speedup" in entry:
            share = {a: f"{sum(v)}/{len(v)}" for a, v in entry["inside"].items()}
            back = {a: f"{sum(v)}/{len(v)}" for a, v in entry["peer_inside_ours"].items()}
            print(
                f"three attacks: {entry['speedup']:.1f}x faster "
                f"(process CPU {entry['cpu_ratio']:.1f}x)\n"
                f"safeshare's risk inside anonymeter's interval (run pairs): {share}\n"
                f"anonymeter's risk inside safeshare's interval (run pairs): {back}"
            )
        for name in ("safeshare", "anonymeter"):
            if "error" in entry.get(name, {}):
                print(f"{name}: {entry[name]['error']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--attacks", type=int, default=500)
    parser.add_argument("--only", choices=("safeshare", "anonymeter"))
    parser.add_argument("--skip-dcr", action="store_true")
    parser.add_argument("--cases", nargs="*", help=f"some of {list(CASES)} (default: all)")
    parser.add_argument("--dcr-rows", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    adult = find_adult()
    if adult is None:
        print("UCI Adult not found under $SAFESHARE_SHARED or ../shared/datasets: nothing to run")
        return 0
    runners = contenders(args.only)
    if "anonymeter" in runners and not Path(runners["anonymeter"][0]).exists():
        print(f"anonymeter is not set up ({NOT_SET_UP}); running safeshare alone")
        runners.pop("anonymeter")
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = prepare(adult, Path(tmp), args.rows, seed=0)
        for case, (release, control, generalized, recoding) in CASES.items():
            if args.cases and case not in args.cases:
                continue
            runs[case] = {name: [] for name in runners}
            for repeat in range(args.repeats):
                for name, command in runners.items():
                    tables = recoding if recoding and name == "anonymeter" else ("train", control)
                    files = [str(paths[t]) for t in (*tables, release)]
                    extra = ["--attacks", str(args.attacks), "--seed", str(repeat)]
                    extra += ["--generalized"] if generalized else []
                    result = run([*command, *files, *extra], 1800, BENCH / "drivers")
                    runs[case][name].append(result)
                    print(
                        f"{case} #{repeat + 1} {name}: "
                        + (result.get("error") or f"{result['wall']:.1f} s"),
                        flush=True,
                    )
    summary = summarize(runs)
    print_attacks(summary)
    dcr: dict[str, Any] = {}
    if not args.skip_dcr:
        driver = [
            sys.executable,
            str(BENCH / "drivers" / "safeshare_dcr.py"),
            str(adult),
            "--rows",
            str(args.dcr_rows),
        ]
        for kind in ("resample", "marginals"):
            results = [
                run([*driver, "--release", kind, "--seed", str(r)], 1800, BENCH / "drivers")
                for r in range(args.repeats)
            ]
            ok = [r for r in results if "error" not in r]
            dcr[kind] = {
                "dcr_seconds": statistics.median(r["dcr_seconds"] for r in ok) if ok else None,
                "peak_mb": statistics.median(r["peak_mb"] for r in ok) if ok else None,
                "runs": results,
            }
        print(
            f"\nDCR, {args.dcr_rows:,} released x {args.dcr_rows:,} reference rows (15 mixed columns), medians:"
        )
        for kind, entry in dcr.items():
            if entry["dcr_seconds"] is None:
                print(f"{kind}: {entry['runs'][0].get('error')}")
                continue
            verdict = (
                "meets"
                if entry["dcr_seconds"] <= GOAL_DCR_SECONDS and entry["peak_mb"] <= GOAL_DCR_MB
                else "MISSES"
            )
            print(
                f"{kind:<10} {entry['dcr_seconds']:.1f} s, peak {entry['peak_mb']:.0f} MB ({verdict} <= 30 s, <= 2 GB)"
            )
    record = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "summary": summary,
        "dcr": dcr,
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    target = args.json or RESULTS / f"eval_anonymeter-{time.strftime('%Y%m%d-%H%M%S')}.json"
    target.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nwritten: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
