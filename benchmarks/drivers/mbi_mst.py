"""Benchmark driver: MST from the Private-PGM/mbi ``mechanisms/`` folder on mbi 2.0.

The mechanism scripts are third-party code and are not committed; ``benchmarks/peers/setup.sh``
copies them into ``benchmarks/peers/vendor/private-pgm/``.  Run with the peer's own venv:
``benchmarks/.venvs/mbi/bin/python mbi_mst.py DATA.csv DOMAIN.json OUT.csv``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _driver import job

VENDOR = Path(__file__).resolve().parent.parent / "peers" / "vendor" / "private-pgm"
NOT_SET_UP = 3  # exit status the harness reads as "peer not set up"


def main() -> None:
    """Fit the upstream MST mechanism on the data and write the synthetic integer codes."""
    run = job(__doc__)
    if not (VENDOR / "mst.py").is_file() or not (VENDOR / "cdp2adp.py").is_file():
        print(
            f"mbi peer not set up: {VENDOR} lacks mst.py / cdp2adp.py. Run "
            "`bash benchmarks/peers/setup.sh`, or clone https://github.com/ryan112358/private-pgm "
            "(now github.com/ryan112358/mbi) and copy mechanisms/mst.py and mechanisms/cdp2adp.py "
            f"into {VENDOR}/",
            file=sys.stderr,
        )
        sys.exit(NOT_SET_UP)

    import pandas as pd
    from mbi import Dataset, Domain

    # mbi 2.0 removed the deprecated alias Domain.attrs that upstream mechanisms/mst.py still
    # reads; restore it (same value as Domain.attributes) instead of editing the vendored file.
    if not hasattr(Domain, "attrs"):
        Domain.attrs = property(lambda self: self.attributes)

    sys.path.insert(0, str(VENDOR))
    from mst import MST

    data = Dataset(
        {name: run.frame[name].to_numpy() for name in run.sizes}, Domain.fromdict(run.sizes)
    )
    synthetic = MST(data, run.epsilon, run.delta).to_dict()
    run.write(pd.DataFrame({name: synthetic[name] for name in run.sizes}))


if __name__ == "__main__":
    main()
