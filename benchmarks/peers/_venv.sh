# make_venv, sourced by the peers' setup scripts: one venv per peer under benchmarks/.venvs/.
#
#   make_venv NAME PACKAGE[==VERSION] [EXTRA...]
#
# Creates benchmarks/.venvs/NAME when missing, then installs PACKAGE (at VERSION when pinned)
# and the EXTRA requirements unless they are already there (idempotent). PYTHON picks the
# interpreter (default python3).

VENVS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venvs"
PYTHON="${PYTHON:-python3}"

make_venv() {
    local name="$1" pin="$2"
    shift 2
    local venv="$VENVS/$name" pkg="${pin%%==*}" want="${pin##*==}"
    mkdir -p "$VENVS"
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv"
        "$PYTHON" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
    fi
    local have
    have="$({ "$venv/bin/python" -m pip show "$pkg" 2>/dev/null || true; } | sed -n 's/^Version: //p')"
    if { [ "$pkg" != "$want" ] && [ "$have" != "$want" ]; } || [ -z "$have" ] \
        || { [ $# -gt 0 ] && ! "$venv/bin/python" -m pip show "${@%%[=<>]*}" >/dev/null 2>&1; }; then
        echo "installing $pin $* into $venv"
        "$venv/bin/python" -m pip install --quiet "$pin" "$@"
    else
        echo "$name: $pin already installed"
    fi
}
