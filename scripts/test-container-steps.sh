#!/usr/bin/env bash
# Runs the Dockerfile's build-stage steps here, short of a second full build (no Docker daemon is
# needed): the build-only package list installs (or is present), CMake configures the shipping
# build (-DWAVECREST_TESTS=OFF, Release), and scripts/container-build.sh stages the programs of
# an existing build with the libraries they load; the staged programs then run through the
# image's entrypoint from that staging directory alone.
#
#   scripts/test-container-steps.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:?usage: test-container-steps.sh BUILD_DIR}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$here/scripts/install-deps.sh" --build-only
cmake -S "$here" -B "$tmp/configure" -DCMAKE_BUILD_TYPE=Release -DWAVECREST_TESTS=OFF >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
if grep -Eq "^(GTest|benchmark)_DIR:PATH=/" "$tmp/configure/CMakeCache.txt"; then
  echo "the shipping build looked for GoogleTest or Google Benchmark"; exit 1
fi
echo "configure: the shipping build (Release, no tests) configures"

STAGE_ONLY=1 bash "$here/scripts/container-build.sh" "$here" "$tmp/out" "$build"
for p in wavecrest-server wavecrest-worker wavecrest; do
  [[ -x $tmp/out/bin/$p ]] || { echo "staged: $p missing"; exit 1; }
done
# What the runtime image would load: the staged libraries and the C/C++ runtime, nothing else
# from this machine's /usr/lib beyond glibc, libstdc++, libgcc and CUDA.
for bin in "$tmp"/out/bin/*; do
  LD_LIBRARY_PATH=$tmp/out/lib ldd "$bin" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
    case $path in
      "$tmp"/out/lib/*) ;;
      *) [[ $name =~ ^(libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcudart|libcublas|libcudnn|libnvidia|libcuda\.) ]] ||
           { echo "staged: $(basename "$bin") loads $name from $path, not from the image"; exit 1; } ;;
    esac
  done
done
echo "staged: every library the programs load is in the image or its base"

# The image's one-time setup parses (it needs root and changes the system, so it runs only in
# an image build).
sh -n "$here/deploy/image-setup.sh"
# The image's entrypoint, with the staged programs first on PATH.
export PATH=$tmp/out/bin:$PATH LD_LIBRARY_PATH=$tmp/out/lib
sh "$here/deploy/docker-entrypoint.sh" cli --version >"$tmp/version.txt" 2>&1 || true
grep -qi "wavecrest" "$tmp/version.txt" || { echo "entrypoint cli --version:"; cat "$tmp/version.txt"; exit 1; }
sh "$here/deploy/docker-entrypoint.sh" worker --help >/dev/null 2>&1 || true
set +e
sh "$here/deploy/docker-entrypoint.sh" nonsense 2>/dev/null; code=$?
WAVECREST_HEALTH_ADDRESS=127.0.0.1:1 sh "$here/deploy/docker-entrypoint.sh" healthcheck >/dev/null 2>&1; health=$?
set -e
[[ $code == 2 ]] || { echo "entrypoint: an unknown role must exit 2, got $code"; exit 1; }
[[ $health != 0 ]] || { echo "entrypoint: healthcheck passed with no server"; exit 1; }
echo "entrypoint: cli runs, an unknown role exits 2, healthcheck fails with no server ($health)"
