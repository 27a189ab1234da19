#!/usr/bin/env bash
# One entry point for newcomers and CI.
#   bash dev.sh demo    set up .venv and privatize a sample text with GloVe 6B 50d
#   bash dev.sh test    set up .venv and run lint, type checks and the whole test suite
#   bash dev.sh bench   set up .venv and run the benchmarks in benchmarks/
#   bash dev.sh lowest  run the tests against the oldest dependency versions allowed,
#                       then import each floor beside the newest numpy and scipy
# Needs only Python >= 3.11 and network access to PyPI. Set PYTHON to choose the interpreter.
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
usable() {
  command -v "$1" >/dev/null 2>&1 &&
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

pick_python() {
  if [ -n "${PYTHON:-}" ]; then  # asked for: that one or an error, never another
    usable "$PYTHON" && { echo "$PYTHON"; return 0; }
    echo "dev.sh: PYTHON=$PYTHON: not found, or not a Python >= 3.11" >&2
    return 1
  fi
  for candidate in python3.11 python3.12 python3.13 python3; do
    usable "$candidate" && { echo "$candidate"; return 0; }
  done
  echo "dev.sh: Python >= 3.11 not found (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

version_of() { "$1" -c 'import sys; print(sys.version)'; }

setup() {
  local python
  python=$(pick_python)
  if [ -x "$VENV/bin/python" ] && [ -n "${PYTHON:-}" ] &&
     [ "$(version_of "$VENV/bin/python")" != "$(version_of "$python")" ]; then
    echo "dev.sh: $VENV runs another Python than PYTHON=$PYTHON: recreating it" >&2
    rm -rf "$VENV"
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    "$python" -m venv "$VENV"
  fi
  # Reinstall only when the package metadata changed (entry points live there).
  local stamp="$VENV/.dxp-installed" want
  want=$(cat pyproject.toml | "$VENV/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "dev.sh: installing dxp_plugins and its dependencies into $VENV (log: $VENV/install.log) ..." >&2
    if ! { "$VENV/bin/python" -m pip install --disable-pip-version-check --upgrade pip &&
           "$VENV/bin/python" -m pip install --disable-pip-version-check -e ".[dev]"; } \
         > "$VENV/install.log" 2>&1; then
      tail -n 30 "$VENV/install.log" >&2
      echo "dev.sh: installation failed (full log: $VENV/install.log)" >&2
      return 1
    fi
    echo "$want" > "$stamp"
  fi
}

cmd=${1:-help}
shift || true
case "$cmd" in
  demo)
    setup
    "$VENV/bin/dxp" privatize examples/sample.txt --epsilon 10 --report - "$@"
    ;;
  test)
    setup
    "$VENV/bin/ruff" check dxp_plugins tests benchmarks examples
    "$VENV/bin/ruff" format --check dxp_plugins tests benchmarks examples
    "$VENV/bin/mypy"
    "$VENV/bin/python" -m pytest "$@"
    ;;
  bench)
    setup
    "$VENV/bin/python" benchmarks/run_all.py "$@"
    ;;
  lowest)
    # The suite against the oldest versions pyproject.toml allows (uv's lowest-direct
    # resolution) in a fresh .venv-lowest, on the oldest Python found. Linters run in `test`.
    # matplotlib < 3.10.8 calls pyparsing names that new pyparsing deprecates: not ours.
    lowest=.venv-lowest
    rm -rf "$lowest"
    "$(pick_python)" -m venv "$lowest"
    "$lowest/bin/python" -m pip install -q --disable-pip-version-check uv
    "$lowest/bin/uv" pip install -q --python "$lowest/bin/python" \
      --resolution lowest-direct --compile-bytecode -e ".[dev]"
    "$lowest/bin/python" -m pytest -p no:cacheprovider \
      -W "ignore::pyparsing.warnings.PyparsingDeprecationWarning" "$@"
    # ... and each floor beside the newest numpy and scipy, which the run above never pairs.
    "$lowest/bin/python" .ci/floors.py "$lowest/bin/uv" "$lowest/bin/python"
    ;;
  *)
    sed -n '2,7p' "$0"
    exit 2
    ;;
esac
