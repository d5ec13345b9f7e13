#!/usr/bin/env bash
# The Python package's committed stubs and typed results (wavecrest/results.py) equal what
# proto/ generates now, and the package is mypy-clean (strict; the generated modules and grpcio,
# which ships no types, excepted).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$here/scripts/gen-python-stubs.sh" "$tmp" >/dev/null
if ! diff -r "$tmp/wavecrest/v1" "$here/client/python/wavecrest/v1" -x __init__.py -x __pycache__; then
  echo "client/python/wavecrest/v1 is stale: run scripts/gen-python-stubs.sh and commit"; exit 1
fi
python3=$(command -v /usr/bin/python3 || command -v python3)
"$python3" "$here/scripts/gen-python-results.py" "$tmp/results.py" >/dev/null
if ! diff "$tmp/results.py" "$here/client/python/wavecrest/results.py"; then
  echo "client/python/wavecrest/results.py is stale: run scripts/gen-python-results.py and commit"; exit 1
fi
echo "python: the committed stubs and typed results are current"
if ! command -v mypy >/dev/null 2>&1; then
  echo "python: mypy not found (scripts/install-deps.sh installs it): type check skipped"; exit 77
fi
cd "$here/client/python"
mypy --config-file pyproject.toml wavecrest examples
