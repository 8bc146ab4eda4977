"""What a roll-up compiled with numba would cost a fresh process, and what it would save.

Run in its own venv (``bash benchmarks/peers/setup_anonymize.sh numba``); the numbers answer
whether the anonymization search's checks should be compiled:

    benchmarks/.venvs/numba/bin/python benchmarks/drivers/compiled_rollup.py

It times (CPU ms) importing numba, the first call of a roll-up kernel (compiling it), the
same in a second process (loading the compiled code from the cache), and one call on 60 and
on 7,000 source rows of 11 columns: a check's roll-up from a cached node and from the data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

KERNEL = '''
import numpy as np
from numba import njit

@njit(cache=True)
def smallest_class(codes, maps, offsets, sizes, weights):
    """The smallest class's weight at a node: rows keyed by their generalized codes."""
    n, c = codes.shape
    keys = np.empty(n, np.int64)
    for i in range(n):
        key = 0
        for j in range(c):
            key = key * sizes[j] + maps[offsets[j] + codes[i, j]]
        keys[i] = key
    order = np.argsort(keys)
    smallest, current, last = np.inf, 0.0, keys[order[0]]
    for t in range(n):
        i = order[t]
        if keys[i] != last:
            smallest, current, last = min(smallest, current), 0.0, keys[i]
        current += weights[i]
    return min(smallest, current)
'''


def one_process(folder: str) -> None:
    started = time.process_time()
    import numba  # noqa: F401

    imported = time.process_time() - started
    import numpy as np

    sys.path.insert(0, folder)
    from kernel import smallest_class

    rng = np.random.default_rng(0)
    maps = np.tile(np.array([0, 0, 1, 1, 2], dtype=np.int64), 11)
    offsets = np.arange(11, dtype=np.int64) * 5
    sizes = np.full(11, 3, dtype=np.int64)
    print(f"  import numba {imported * 1000:.0f} ms")
    for rows in (60, 7_000):
        codes = rng.integers(0, 5, size=(rows, 11))
        weights = np.ones(rows)
        started = time.process_time()
        smallest_class(codes, maps, offsets, sizes, weights)
        first = time.process_time() - started
        started = time.process_time()
        for _ in range(1_000):
            smallest_class(codes, maps, offsets, sizes, weights)
        each = (time.process_time() - started) / 1_000
        print(
            f"  {rows:>5} rows: first call {first * 1000:.1f} ms, then {each * 1e6:.1f} us a call"
        )


def main() -> None:
    if len(sys.argv) > 1:
        one_process(sys.argv[1])
        return
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "kernel.py"), "w", encoding="utf-8") as out:
            out.write(KERNEL)
        env = {**os.environ, "NUMBA_CACHE_DIR": os.path.join(folder, "cache")}
        for title in ("a fresh process, nothing cached", "a second process, the code cached"):
            print(title)
            subprocess.run([sys.executable, __file__, folder], check=True, env=env)


if __name__ == "__main__":
    main()
