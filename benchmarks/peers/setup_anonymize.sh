#!/usr/bin/env bash
# Set up the anonymization benchmarks' peers and tools, each in its own venv (idempotent).
#
#   bash benchmarks/peers/setup_anonymize.sh [NAME...]     (default: all four)
#
#   benchmarks/.venvs/anjana/   anjana 1.2.3 (greedy k-anonymity; pulls pycanon and its pins)
#   benchmarks/.venvs/anonypy/  anonypy 0.2.1 (Mondrian) + pandas, which it imports
#   benchmarks/.venvs/pycanon/  pycanon (checks k, l, t of a table): the independent cross-check
#   benchmarks/.venvs/numba/    numba: what a compiled roll-up would cost (drivers/compiled_rollup.py)
#
# Everything comes from PyPI and is git-ignored.  pycanon pins exact versions of numpy, pandas
# and scipy, which is why it lives here and not in the project's test extras.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=benchmarks/peers/_venv.sh
source "$HERE/_venv.sh"  # make_venv

wanted() {  # wanted NAME: whether NAME was asked for (every venv when none was)
    [ ${#NAMES[@]} -eq 0 ] || [[ " ${NAMES[*]} " == *" $1 "* ]]
}

NAMES=("$@")
if wanted anjana; then make_venv anjana anjana==1.2.3; fi
if wanted anonypy; then make_venv anonypy anonypy==0.2.1 pandas; fi
if wanted pycanon; then make_venv pycanon pycanon; fi
if wanted numba; then make_venv numba numba; fi
