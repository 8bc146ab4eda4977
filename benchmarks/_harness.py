"""What the synthesis benchmarks on adult-pgm share: running drivers, measuring, scoring, reporting.

Each contender is a driver script in ``benchmarks/drivers/`` run by its own venv's python as
a fresh process; it writes synthetic integer codes as CSV.  The harness measures the process
with ``os.wait4`` (CPU = user + sys, peak RSS, wall; imports included) and scores the CSV
itself: the mean total-variation distance over all 3-way marginals against the full data.

A child's max RSS as Linux reports it is never below its parent's RSS at fork time, so this
module uses the standard library only while contenders run; numpy and pandas are imported
only to score, afterwards.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
DRIVERS = BENCH / "drivers"
VENVS = BENCH / ".venvs"
VENDOR_SOURCE = BENCH / "peers" / "vendor" / "private-pgm" / "SOURCE.txt"
NOT_SET_UP = 3  # a driver's exit status for "peer not set up"
SETUP_HINT = "run `bash benchmarks/peers/setup.sh`"


@dataclass(frozen=True)
class Contender:
    """One synthesizer: a driver script run by a given python, with extra driver arguments."""

    name: str
    label: str
    python: Path
    driver: Path
    packages: tuple[str, ...]
    args: tuple[str, ...] = ()

    @property
    def peer(self) -> bool:
        return not self.name.startswith("safeshare")


@dataclass(frozen=True)
class Case:
    """A contender at one epsilon, run ``repeats`` times (wall ``timeout``, optional CPU cap)."""

    key: str
    contender: Contender
    epsilon: float
    repeats: int
    timeout: float
    cpu_limit: float | None = None


def find_dataset() -> Path | None:
    """The adult-pgm folder under $SAFESHARE_SHARED or ../shared, if it is there."""
    env = os.environ.get("SAFESHARE_SHARED")
    shared = Path(env) if env else REPO.parent / "shared"
    folder = shared / "datasets" / "adult-pgm"
    if (folder / "adult.csv").is_file() and (folder / "adult-domain.json").is_file():
        return folder
    return None


def no_dataset() -> int:
    """Say that the data is missing and how to provide it; the benchmark exits 0."""
    print(
        "adult-pgm not found: set SAFESHARE_SHARED to the folder that holds "
        "datasets/adult-pgm/ (adult.csv, adult-domain.json) or put it at ../shared; "
        "skipping the benchmark."
    )
    return 0


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


def run_once(case: Case, folder: Path, workdir: Path, tag: str, delta: float) -> dict[str, Any]:
    """Run one case in a fresh process and measure it (its CSV is scored later)."""
    contender = case.contender
    if not contender.python.exists():
        return {"status": "not set up", "message": f"{contender.python} missing; {SETUP_HINT}"}
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{case.key}-{tag}")
    out = workdir / f"{stem}.csv"
    log = workdir / f"{stem}.log"
    command = [
        str(contender.python),
        str(contender.driver),
        str(folder / "adult.csv"),
        str(folder / "adult-domain.json"),
        str(out),
        "--epsilon",
        str(case.epsilon),
        "--delta",
        str(delta),
        *contender.args,
    ]
    with log.open("wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir)
        if case.cpu_limit is not None:  # SIGXCPU at the soft limit, SIGKILL 10 s later
            soft = math.ceil(case.cpu_limit)
            with contextlib.suppress(ProcessLookupError):  # already gone: nothing to cap
                resource.prlimit(proc.pid, resource.RLIMIT_CPU, (soft, soft + 10))
        code, usage, timed_out = wait_with_usage(proc, case.timeout)
        wall = time.perf_counter() - start
    run: dict[str, Any] = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
        "wall_s": wall,
        "log": str(log),
    }
    if timed_out:
        return {**run, "status": "timeout", "message": f"killed after {case.timeout:.0f} s wall"}
    if case.cpu_limit is not None and run["cpu_s"] >= case.cpu_limit and code != 0:
        return {
            **run,
            "status": "cpu limit",
            "message": f"stopped at its {case.cpu_limit:.0f} CPU s limit (exit {code})",
        }
    if code == NOT_SET_UP:
        return {**run, "status": "not set up", "message": log_tail(log)}
    if code != 0:
        return {**run, "status": "failed", "message": f"exit {code}: {log_tail(log)}"}
    return {**run, "status": "ok", "output": str(out)}


def describe_run(run: dict[str, Any]) -> str:
    """One line about a finished process."""
    if run["status"] == "ok":
        return f"CPU {run['cpu_s']:.1f} s, peak {run['peak_mb']:.0f} MB, wall {run['wall_s']:.1f} s"
    return f"{run['status']}: {run['message']}"


def run_cases(
    cases: list[Case],
    folder: Path,
    delta: float,
    prefix: str,
    on_done: Callable[[Case, dict[str, Any]], None] | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], Marginals, float]:
    """Run the cases interleaved (repeat by repeat) and score them.

    Returns the runs per case key, the scorer and the harness's own peak RSS before scoring
    (a floor under every child's peak).  ``on_done(case, run)`` sees each run while its
    driver's log (``run["log"]``) still exists.
    """
    runs: dict[str, list[dict[str, Any]]] = {c.key: [] for c in cases}
    sizes: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    with tempfile.TemporaryDirectory(prefix=f"{prefix}-") as tmp:
        for repeat in range(max(c.repeats for c in cases)):
            for case in cases:
                done = runs[case.key]
                if repeat >= case.repeats or (done and done[-1]["status"] == "not set up"):
                    continue
                run = run_once(case, folder, Path(tmp), str(repeat), delta)
                if on_done is not None:
                    on_done(case, run)
                run.pop("log", None)
                done.append(run)
                print(f"[{repeat + 1}/{case.repeats}] {case.key}: {describe_run(run)}", flush=True)
        # a child's peak RSS cannot read below this; numpy and pandas come in only now
        floor_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        marginals = Marginals(sizes, folder / "adult.csv")
        score(runs, marginals)
    return runs, marginals, floor_mb


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


def compare(base: dict[str, Any], other: dict[str, Any]) -> dict[str, float] | None:
    """``other``'s CPU and memory over ``base``'s, and base's TVD minus other's (if both ran)."""
    if not base.get("n") or not other.get("n"):
        return None
    return {
        "cpu_ratio": other["cpu_s"] / base["cpu_s"],
        "memory_ratio": other["peak_mb"] / base["peak_mb"],
        "tvd_diff": base["tvd_mean"] - other["tvd_mean"],
    }


def ratios(
    summaries: dict[str, dict[str, Any]], base: str = "safeshare", peers: Iterable[str] = ()
) -> dict[str, dict[str, float]]:
    """Per peer (default: every other entry): its CPU and memory over ``base``'s, TVD difference."""
    names = list(peers) or [name for name in summaries if name != base]
    out = {}
    for name in names:
        rel = compare(summaries.get(base, {}), summaries.get(name, {}))
        if rel is not None:
            out[name] = rel
    return out


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


def source_after(before: dict[str, Any]) -> dict[str, Any]:
    """The source state now, flagged (and warned about) if it changed since ``before``."""
    source = source_state()
    source["changed_during_run"] = source["src_sha256"] != before["src_sha256"]
    if source["changed_during_run"]:
        print(
            "\nWARNING: safeshare's src/ changed while the benchmark ran; its runs mix versions",
            file=sys.stderr,
        )
    return source


def machine() -> dict[str, Any]:
    """Cores, memory and platform of this machine."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(memory / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def load() -> float:
    """The 1-minute load average (the machine is shared: a high one means disturbed timings)."""
    return os.getloadavg()[0]


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_rows(rows: list[tuple[str, dict[str, Any]]], width: int = 12) -> None:
    """The results table: one row per (name, summary)."""
    head = (
        f"{'contender':<{width}} {'TVD (mean ± sd)':>17} {'CPU s':>8} {'peak MB':>8} {'wall s':>8}"
    )
    print("\n" + head + "  status")
    print("-" * (len(head) + 8))
    for name, s in rows:
        if s.get("n"):
            tvd = f"{s['tvd_mean']:.4f} ± {s['tvd_sd']:.4f}"
            row = (
                f"{name:<{width}} {tvd:>17} {s['cpu_s']:>8.1f} {s['peak_mb']:>8.0f} "
                f"{s['wall_s']:>8.1f}  {s['status']}"
            )
        else:
            row = f"{name:<{width}} {'-':>17} {'-':>8} {'-':>8} {'-':>8}  {s['status']}"
        print(row)


def print_ratios(
    rel: dict[str, dict[str, float]], base: str = "safeshare", width: int = 22
) -> None:
    """One line per peer: CPU and memory ratios over ``base``, and the TVD difference."""
    for name, r in rel.items():
        print(
            f"{name + '/' + base:<{width}} CPU {r['cpu_ratio']:6.1f}x   memory "
            f"{r['memory_ratio']:5.1f}x   TVD {base} - {name}: {r['tvd_diff']:+.4f}"
        )


def print_failures(summaries: dict[str, dict[str, Any]]) -> None:
    """Why each entry without a successful run has none."""
    for name, s in summaries.items():
        if not s.get("n") and s.get("message"):
            print(f"\n{name}: {s['status']}: {s['message']}")


def print_goals(checks: dict[str, dict[str, Any]], title: str = "goals for safeshare:") -> None:
    """Each goal's measured value and whether it is met."""
    if not checks:
        return
    print("\n" + title)
    width = max(24, *(len(goal) for goal in checks))
    for goal, check in checks.items():
        print(f"  {goal:<{width}} {check['value']:10.4f}  {'met' if check['met'] else 'NOT met'}")


def write_json(result: dict[str, Any], name: str, path: Path | None) -> Path:
    """Write the results (default ``results/<name>-<time>.json``) and say where."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = path or RESULTS / f"{name}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nresults: {path}")
    return path


def now() -> str:
    """The current UTC time, ISO 8601, to the second."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def vendor_source() -> str | None:
    """Where the vendored Private-PGM scripts came from (repository, commit, files)."""
    return VENDOR_SOURCE.read_text().strip() if VENDOR_SOURCE.is_file() else None
