#!/usr/bin/env bash
# Set up the peers of benchmarks/mst_adult.py and aim_adult.py, each in its own venv (idempotent).
#
#   bash benchmarks/peers/setup.sh
#
#   benchmarks/.venvs/mbi/         mbi 2.0.0 (+ pandas, matplotlib for the mechanism scripts)
#   benchmarks/.venvs/smartnoise/  smartnoise-synth 1.0.8 (pulls mbi 1.1.0 from PyPI, torch)
#   benchmarks/peers/vendor/private-pgm/  mst.py, aim.py, mechanism.py, cdp2adp.py from the
#                                          Private-PGM repository (now github.com/ryan112358/mbi),
#                                          never committed
#
# The vendored scripts are copied from, in order: an existing complete copy (kept), a local clone
# or git dir named by PRIVATE_PGM_SRC, or a fresh clone of the repository (needs GitHub access).
# A copy that lacks some of the files (e.g. one made before aim.py was added) is completed from
# the same commit.
# Everything installed here is git-ignored.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENDOR="$HERE/vendor/private-pgm"
# shellcheck source=benchmarks/peers/_venv.sh
source "$HERE/_venv.sh"  # make_venv
REPO_URL="https://github.com/ryan112358/mbi"
# newest commit of the repository at the time of writing; its mechanisms/ read mbi 2.0's API
# except for Domain.attrs, which the drivers restore as an alias of Domain.attributes
PGM_COMMIT="361705d7f05f8c0ac4d5b3640e688eb4f692346e"
# mst.py (drivers/mbi_mst.py); aim.py and the Mechanism base class it imports (drivers/mbi_aim.py);
# cdp2adp.py, which both import
FILES=(mst.py cdp2adp.py aim.py mechanism.py)

copy_vendor() {  # copy_vendor GIT_DIR_OR_CHECKOUT
    local src="$1" rev="$PGM_COMMIT"
    if ! git -C "$src" cat-file -e "$rev^{commit}" 2>/dev/null; then
        rev="HEAD"
        echo "warning: $PGM_COMMIT not in $src, using its HEAD" >&2
    fi
    mkdir -p "$VENDOR"
    for f in "${FILES[@]}"; do
        git -C "$src" show "$rev:mechanisms/$f" >"$VENDOR/$f"
    done
    echo "$REPO_URL $(git -C "$src" rev-parse "$rev") ${FILES[*]/#/mechanisms/}" >"$VENDOR/SOURCE.txt"
    echo "copied ${FILES[*]} from $src at $(git -C "$src" rev-parse --short "$rev")"
}

vendor_complete() {
    local f
    for f in "${FILES[@]}"; do
        [ -f "$VENDOR/$f" ] || return 1
    done
}

setup_vendor() {
    if vendor_complete; then
        echo "vendor: $VENDOR already has ${FILES[*]}"
    elif [ -n "${PRIVATE_PGM_SRC:-}" ]; then
        copy_vendor "$PRIVATE_PGM_SRC"
    else
        local tmp
        tmp="$(mktemp -d)"
        trap 'rm -rf "$tmp"' RETURN
        if GIT_TERMINAL_PROMPT=0 git clone --quiet "$REPO_URL" "$tmp/mbi" 2>/dev/null; then
            copy_vendor "$tmp/mbi"
        else
            echo "vendor: could not clone $REPO_URL. Clone https://github.com/ryan112358/private-pgm" \
                "(now $REPO_URL) elsewhere and rerun with PRIVATE_PGM_SRC=<that clone>, or copy" \
                "${FILES[*]} from its mechanisms/ into $VENDOR/ by hand." \
                "The benchmark reports the mbi peer as 'not set up' until then." >&2
        fi
    fi
}

make_venv mbi mbi==2.0.0 pandas matplotlib
make_venv smartnoise smartnoise-synth==1.0.8
setup_vendor
