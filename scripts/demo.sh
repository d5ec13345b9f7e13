#!/usr/bin/env bash
# The demo: an offline analysis of a shipped model (no server, no GPU needed).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
echo "== wavecrest analyze --model examples/models/pythia-2.8b.json --gpu a100-sxm-80gb"
"$build/client/wavecrest" analyze --model examples/models/pythia-2.8b.json --gpu a100-sxm-80gb
