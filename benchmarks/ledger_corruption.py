"""Single-bit corruptions of a privacy ledger: how many are refused, how many change nothing
the ledger reports, and how many give silently wrong figures (the goal: none).

    python benchmarks/ledger_corruption.py [--flips 400] [--seeds 5]

A ledger with two datasets, a spend, a refund and a raised total is written once; each trial
flips one random bit of a written (non-zero) byte of the file, opens the ledger and reads
every dataset's figures.  Any exception other than the ledger's one-line LedgerError counts
as a traceback.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from safeshare.dp import Ledger, PrivacyBudget
from safeshare.errors import LedgerError


def _figures(ledger: Ledger) -> list[tuple[object, ...]]:
    return sorted(
        (
            s.fingerprint,
            s.name,
            s.spent_epsilon,
            s.spent_delta,
            s.total.epsilon,
            s.total.delta,
            s.releases,
        )
        for s in ledger.datasets()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flips", type=int, default=400, help="flips per seed")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "ledger.sqlite"
    ledger, one = Ledger(path), PrivacyBudget(1.0, 1e-9)
    ledger.set_total("f00d", PrivacyBudget(3.0, 1e-8), name="data.csv")
    spent = ledger.spend("f00d", one, label="release mst")
    ledger.spend("beef", one, label="train dp-sgd", name="other.csv")
    ledger.refund(spent.spend_id, "engine job failed")
    truth, original = _figures(ledger), path.read_bytes()
    written = [i for i, byte in enumerate(original) if byte]
    counts = {"refused": 0, "unchanged": 0, "silently wrong": 0, "traceback": 0}
    for seed in range(args.seeds):
        rng = random.Random(seed)
        for _ in range(args.flips):
            data = bytearray(original)
            data[rng.choice(written)] ^= 1 << rng.randrange(8)
            path.write_bytes(bytes(data))
            try:
                seen = _figures(Ledger(path))
            except LedgerError:
                counts["refused"] += 1
                continue
            except Exception:  # what the goal counts as a failure
                counts["traceback"] += 1
                continue
            counts["unchanged" if seen == truth else "silently wrong"] += 1
    total = args.flips * args.seeds
    print(f"{total} single-bit flips of {len(written)} written bytes ({len(original)} in all):")
    for name, count in counts.items():
        print(f"  {name:<15} {count:>6}  {count / total:6.1%}")


if __name__ == "__main__":
    main()
