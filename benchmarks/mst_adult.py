"""MST on adult-pgm, side by side: safeshare vs mbi 2.0 (Private-PGM) vs smartnoise-synth.

Every contender runs as its own process (a driver in ``benchmarks/drivers/``, with its own
venv's python) that fits MST at epsilon=1, delta=1e-9 and writes the synthetic integer codes
as CSV.  This harness measures each process (CPU = user + sys, peak RSS, wall; imports
included), then scores the CSV itself: the mean total-variation distance over all 3-way
marginals against the full data.  Peers are set up by ``bash benchmarks/peers/setup.sh``.

A child's max RSS as Linux reports it is never below its parent's RSS at fork time, so the
harness stays small (standard library only) while the contenders run, and imports numpy and
pandas only afterwards, to score the CSVs.

    .venv/bin/python benchmarks/mst_adult.py --repeats 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
EPSILON = 1.0
DELTA = 1e-9
NOT_SET_UP = 3  # a driver's exit status for "peer not set up"
SETUP_HINT = "run `bash benchmarks/peers/setup.sh`"
# the goal for safeshare: TVD no worse than mbi (reference 0.112), >= 10x less CPU
# than mbi, peak memory <= 500 MB
GOAL_MBI_TVD = 0.112
GOAL_CPU_RATIO = 10.0
GOAL_PEAK_MB = 500.0


@dataclass(frozen=True)
class Contender:
    """One synthesizer: a driver script run by a given python."""

    name: str
    label: str
    python: Path
    driver: Path
    packages: tuple[str, ...]

    @property
    def peer(self) -> bool:
        return self.name != "safeshare"


def contenders() -> list[Contender]:
    """safeshare (this venv) and the peers (their own venvs under benchmarks/.venvs/)."""
    drivers = BENCH / "drivers"
    venvs = BENCH / ".venvs"
    return [
        Contender(
            "safeshare",
            "safeshare MST",
            Path(sys.executable),
            drivers / "safeshare_mst.py",
            ("safeshare", "numpy"),
        ),
        Contender(
            "mbi",
            "mbi 2.0 + Private-PGM mechanisms/mst.py",
            venvs / "mbi" / "bin" / "python",
            drivers / "mbi_mst.py",
            ("mbi", "jax", "numpy"),
        ),
        Contender(
            "smartnoise",
            "smartnoise-synth 1.0.8 MST",
            venvs / "smartnoise" / "bin" / "python",
            drivers / "smartnoise_mst.py",
            ("smartnoise-synth", "mbi", "jax", "numpy"),
        ),
    ]


def find_dataset() -> Path | None:
    """The adult-pgm folder under $SAFESHARE_SHARED or ../shared, if it is there."""
    env = os.environ.get("SAFESHARE_SHARED")
    shared = Path(env) if env else REPO.parent / "shared"
    folder = shared / "datasets" / "adult-pgm"
    if (folder / "adult.csv").is_file() and (folder / "adult-domain.json").is_file():
        return folder
    return None


class Marginals:
    """Mean TVD over all 3-way marginals between the real table and synthetic ones."""

    def __init__(self, sizes: dict[str, int], real_csv: Path) -> None:
        import pandas as pd

        self.sizes = sizes
        self.shape = tuple(sizes.values())
        self.triples = list(itertools.combinations(range(len(sizes)), 3))
        self.real = pd.read_csv(real_csv, usecols=list(sizes))[list(sizes)].to_numpy()

    def _counts(self, codes: np.ndarray, triple: tuple[int, ...]) -> np.ndarray:
        import numpy as np

        dims = tuple(self.shape[i] for i in triple)
        index = np.ravel_multi_index(tuple(codes[:, i] for i in triple), dims)
        return np.bincount(index, minlength=math.prod(dims))

    def mean_tvd(self, synthetic: np.ndarray) -> float:
        """0.5 * sum |p_real - p_synth| per triple, averaged over the triples."""
        import numpy as np

        tvds = []
        for triple in self.triples:
            p = self._counts(self.real, triple)
            q = self._counts(synthetic, triple)
            tvds.append(0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum()))
        return statistics.fmean(tvds)

    def read_codes(self, path: Path) -> np.ndarray:
        """A driver's CSV as an (n, d) code matrix; ValueError if it does not fit the domain."""
        import numpy as np
        import pandas as pd

        try:
            frame = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            raise ValueError(str(error)) from error
        if sorted(frame.columns) != sorted(self.sizes):
            raise ValueError(f"columns {list(frame.columns)} differ from {list(self.sizes)}")
        if len(frame) == 0:
            raise ValueError("no rows")
        codes = frame[list(self.sizes)].to_numpy()
        if not np.issubdtype(codes.dtype, np.integer):
            raise ValueError(f"codes are not integers (dtype {codes.dtype})")
        if codes.min() < 0 or (codes >= np.array(self.shape)).any():
            raise ValueError("codes lie outside the domain")
        return codes.astype(np.int64)


def wait_with_usage(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, Any, bool]:
    """Reap ``proc`` with wait4: (exit code, its rusage, whether it was killed for time)."""
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage, killed.is_set()


def log_tail(path: Path, lines: int = 12) -> str:
    """The last lines of a driver's log."""
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.strip().splitlines()[-lines:])


def run_once(
    contender: Contender, folder: Path, workdir: Path, tag: str, timeout: float
) -> dict[str, Any]:
    """Run one contender in a fresh process and measure it (its CSV is scored later)."""
    if not contender.python.exists():
        return {"status": "not set up", "message": f"{contender.python} missing; {SETUP_HINT}"}
    out = workdir / f"{contender.name}-{tag}.csv"
    log = workdir / f"{contender.name}-{tag}.log"
    command = [
        str(contender.python),
        str(contender.driver),
        str(folder / "adult.csv"),
        str(folder / "adult-domain.json"),
        str(out),
        "--epsilon",
        str(EPSILON),
        "--delta",
        str(DELTA),
    ]
    with log.open("wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir)
        code, usage, timed_out = wait_with_usage(proc, timeout)
        wall = time.perf_counter() - start
    run: dict[str, Any] = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
        "wall_s": wall,
    }
    if timed_out:
        return {**run, "status": "timeout", "message": f"killed after {timeout:.0f} s"}
    if code == NOT_SET_UP:
        return {**run, "status": "not set up", "message": log_tail(log)}
    if code != 0:
        return {**run, "status": "failed", "message": f"exit {code}: {log_tail(log)}"}
    return {**run, "status": "ok", "output": str(out)}


def score(runs: dict[str, list[dict[str, Any]]], marginals: Marginals) -> None:
    """Add each successful run's TVD (or mark it failed if its CSV does not fit the domain)."""
    for name, done in runs.items():
        for i, run in enumerate(done):
            if run["status"] != "ok":
                continue
            path = Path(run.pop("output"))
            try:
                codes = marginals.read_codes(path)
            except ValueError as error:
                run.update(status="failed", message=f"bad output {path.name}: {error}")
                print(f"[{i + 1}] {name}: {run['message']}")
                continue
            run.update(rows=len(codes), tvd=marginals.mean_tvd(codes))
            print(f"[{i + 1}] {name}: TVD {run['tvd']:.4f} ({len(codes):,} rows)")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median CPU/memory/wall and mean +- sd of TVD over the successful runs."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        last = runs[-1] if runs else {"status": "skipped", "message": ""}
        return {"status": last["status"], "message": last.get("message", ""), "n": 0}
    tvds = [r["tvd"] for r in ok]
    return {
        "status": "ok" if len(ok) == len(runs) else f"ok {len(ok)}/{len(runs)}",
        "n": len(ok),
        "tvd_mean": statistics.fmean(tvds),
        "tvd_sd": statistics.stdev(tvds) if len(tvds) > 1 else 0.0,
        "tvd_min": min(tvds),
        "tvd_max": max(tvds),
        "cpu_s": statistics.median(r["cpu_s"] for r in ok),
        "peak_mb": statistics.median(r["peak_mb"] for r in ok),
        "wall_s": statistics.median(r["wall_s"] for r in ok),
    }


def ratios(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per peer: its CPU and memory over safeshare's, and safeshare's TVD minus the peer's."""
    base = summaries.get("safeshare", {})
    if not base.get("n"):
        return {}
    out = {}
    for name, peer in summaries.items():
        if name == "safeshare" or not peer.get("n"):
            continue
        out[name] = {
            "cpu_ratio": peer["cpu_s"] / base["cpu_s"],
            "memory_ratio": peer["peak_mb"] / base["peak_mb"],
            "tvd_diff": base["tvd_mean"] - peer["tvd_mean"],
        }
    return out


def goals(summaries: dict[str, dict[str, Any]], rel: dict[str, dict[str, float]]) -> dict:
    """The issue's targets for safeshare, checked where the numbers exist."""
    base = summaries.get("safeshare", {})
    if not base.get("n"):
        return {}
    checks: dict[str, Any] = {
        "peak_mb<=500": {"value": base["peak_mb"], "met": base["peak_mb"] <= GOAL_PEAK_MB},
        "tvd<=0.112 (reference)": {
            "value": base["tvd_mean"],
            "met": base["tvd_mean"] <= GOAL_MBI_TVD,
        },
    }
    if "mbi" in rel:
        mbi = summaries["mbi"]
        checks["tvd<=mbi"] = {
            "value": base["tvd_mean"],
            "mbi": mbi["tvd_mean"],
            "met": base["tvd_mean"] <= mbi["tvd_mean"],
        }
        checks["mbi_cpu/cpu>=10"] = {
            "value": rel["mbi"]["cpu_ratio"],
            "met": rel["mbi"]["cpu_ratio"] >= GOAL_CPU_RATIO,
        }
    return checks


def versions(contender: Contender) -> dict[str, str]:
    """Installed versions of the contender's main packages, read by its own python."""
    if not contender.python.exists():
        return {}
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for p in sys.argv[1:]:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run(
        [str(contender.python), "-c", code, *contender.packages],
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(done.stdout) if done.returncode == 0 else {}


def source_state() -> dict[str, Any]:
    """The commit and a digest of safeshare's source files (editable install: they are live)."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "src").rglob("*.py")):
        digest.update(str(path.relative_to(REPO)).encode())
        digest.update(path.read_bytes())
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=False
    )
    return {
        "commit": head.stdout.strip() or None,
        "dirty": [line[3:] for line in dirty.stdout.splitlines()],
        "src_sha256": digest.hexdigest(),
    }


def machine() -> dict[str, Any]:
    """Cores, memory and platform of this machine."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(memory / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(
    chosen: list[Contender], summaries: dict[str, dict[str, Any]], rel: dict, checks: dict
) -> None:
    """The results table, the ratio rows and the goal checks."""
    head = f"{'contender':<12} {'TVD (mean ± sd)':>17} {'CPU s':>8} {'peak MB':>8} {'wall s':>8}"
    print("\n" + head + "  status")
    print("-" * (len(head) + 8))
    for c in chosen:
        s = summaries[c.name]
        if s.get("n"):
            tvd = f"{s['tvd_mean']:.4f} ± {s['tvd_sd']:.4f}"
            row = (
                f"{c.name:<12} {tvd:>17} {s['cpu_s']:>8.1f} {s['peak_mb']:>8.0f} "
                f"{s['wall_s']:>8.1f}  {s['status']}"
            )
        else:
            row = f"{c.name:<12} {'-':>17} {'-':>8} {'-':>8} {'-':>8}  {s['status']}"
        print(row)
    for name, r in rel.items():
        print(
            f"{name + '/safeshare':<22} CPU {r['cpu_ratio']:6.1f}x   memory "
            f"{r['memory_ratio']:5.1f}x   TVD safeshare - {name}: {r['tvd_diff']:+.4f}"
        )
    for name, s in summaries.items():
        if not s.get("n") and s.get("message"):
            print(f"\n{name}: {s['status']}: {s['message']}")
    if checks:
        print("\ngoals for safeshare:")
        for goal, check in checks.items():
            print(f"  {goal:<24} {check['value']:10.4f}  {'met' if check['met'] else 'NOT met'}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print/write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh runs per contender")
    who = parser.add_mutually_exclusive_group()
    names = [c.name for c in contenders()]
    who.add_argument("--only", choices=names, help="run this contender only")
    who.add_argument("--skip-peers", action="store_true", help="run safeshare only")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, help="where to write the JSON (default results/)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    folder = find_dataset()
    if folder is None:
        print(
            "adult-pgm not found: set SAFESHARE_SHARED to the folder that holds "
            "datasets/adult-pgm/ (adult.csv, adult-domain.json) or put it at ../shared; "
            "skipping the benchmark."
        )
        return 0

    chosen = [
        c
        for c in contenders()
        if (args.only is None or c.name == args.only) and not (args.skip_peers and c.peer)
    ]
    sizes: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    print(
        f"adult-pgm: {len(sizes)} columns, {math.comb(len(sizes), 3)} 3-way marginals; "
        f"epsilon={EPSILON}, delta={DELTA}; {args.repeats} repeat(s) of "
        f"{', '.join(c.name for c in chosen)}",
        flush=True,
    )

    source_before = source_state()
    runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in chosen}
    with tempfile.TemporaryDirectory(prefix="mst_adult-") as tmp:
        for repeat in range(args.repeats):
            for c in chosen:
                if runs[c.name] and runs[c.name][-1]["status"] == "not set up":
                    continue
                run = run_once(c, folder, Path(tmp), str(repeat), args.timeout)
                runs[c.name].append(run)
                if run["status"] == "ok":
                    detail = (
                        f"CPU {run['cpu_s']:.1f} s, peak {run['peak_mb']:.0f} MB, "
                        f"wall {run['wall_s']:.1f} s"
                    )
                else:
                    detail = f"{run['status']}: {run['message']}"
                print(f"[{repeat + 1}/{args.repeats}] {c.name}: {detail}", flush=True)
        # a child's peak RSS cannot read below this; numpy and pandas come in only now
        floor_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        marginals = Marginals(sizes, folder / "adult.csv")
        score(runs, marginals)

    source = source_state()
    source["changed_during_run"] = source["src_sha256"] != source_before["src_sha256"]
    if source["changed_during_run"]:
        print(
            "\nWARNING: safeshare's src/ changed while the benchmark ran; its runs mix versions",
            file=sys.stderr,
        )
    summaries = {c.name: summarize(runs[c.name]) for c in chosen}
    rel = ratios(summaries)
    checks = goals(summaries, rel)
    print_table(chosen, summaries, rel, checks)

    vendor_source = BENCH / "peers" / "vendor" / "private-pgm" / "SOURCE.txt"
    result = {
        "benchmark": "mst_adult",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "safeshare_source": source,
        "dataset": {"path": str(folder), "rows": len(marginals.real), "columns": len(sizes)},
        "epsilon": EPSILON,
        "delta": DELTA,
        "metric": "mean TVD over all 3-way marginals vs the full data (lower is better)",
        "units": {"cpu_s": "user+sys s", "peak_mb": "max RSS, MiB", "wall_s": "s"},
        "peak_floor_mb": floor_mb,
        "repeats": args.repeats,
        "contenders": {
            c.name: {
                "label": c.label,
                "versions": versions(c),
                "summary": summaries[c.name],
                "runs": runs[c.name],
            }
            for c in chosen
        },
        "ratios_vs_safeshare": rel,
        "goals": checks,
    }
    if "mbi" in result["contenders"] and vendor_source.is_file():
        result["contenders"]["mbi"]["mechanism_source"] = vendor_source.read_text().strip()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = args.json or RESULTS / f"mst_adult-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
