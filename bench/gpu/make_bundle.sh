#!/usr/bin/env bash
# make_bundle.sh [BUILD_DIR]: packs stripped copies of the programs a GPU run needs
# (wavecrest-server, wavecrest-worker, wavecrest, gpu_test, cudnn_sdpa_test) into .devbundle with
# ../shared/tools/device-bundle.sh, under the device tool's 64 MiB carry limit.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.devbundle/' "$exclude" 2>/dev/null || echo '/.devbundle/' >> "$exclude"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for b in server/wavecrest-server gpu_worker/wavecrest-worker client/wavecrest tests/gpu_test \
  tests/cudnn_sdpa_test; do
  cp "$build/$b" "$tmp/"
  strip "$tmp/$(basename "$b")"
done
rm -rf .devbundle
bash ../shared/tools/device-bundle.sh .devbundle "$tmp"/*
