#!/usr/bin/env bash
# The Dockerfile's build stage, as a script so that the same steps run (and are tested) outside
# Docker: a Release build of the three programs without tests, installed under OUT/bin, with the
# shared libraries they load from the build system copied to OUT/lib, except what the runtime
# image has itself (glibc, libstdc++, libgcc, and CUDA's own libraries, which the NVIDIA runtime
# image and driver provide).
#
#   scripts/container-build.sh SRC OUT [BUILD_DIR]      JOBS=N  CMAKE_EXTRA="-DWAVECREST_CUDA=OFF"
#   STAGE_ONLY=1 scripts/container-build.sh SRC OUT BUILD_DIR   (install and copy libraries from
#       an existing build: what the test of these steps does, without a second full build)
set -euo pipefail
src=$(realpath "${1:?usage: container-build.sh SRC OUT [BUILD_DIR]}")
out=$(realpath -m "${2:?usage: container-build.sh SRC OUT [BUILD_DIR]}")
build=$(realpath -m "${3:-$src/build-release}")
jobs=${JOBS:-$(nproc)}
if [[ -z ${STAGE_ONLY:-} ]]; then
  # shellcheck disable=SC2086 # CMAKE_EXTRA holds several arguments
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWAVECREST_TESTS=OFF ${CMAKE_EXTRA:-} >/dev/null
  cmake --build "$build" -j "$jobs"
fi
cmake --install "$build" --prefix "$out" >/dev/null
mkdir -p "$out/lib"
# Libraries the image provides itself: the C/C++ runtime and CUDA (cudart, cuBLAS(Lt), cuDNN,
# NVML come from the runtime image and the host's driver).
provided='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcudart|libcublas|libcudnn|libnvidia|libcuda\.)'
for bin in "$out"/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $provided ]] && continue
    cp -Lu "$path" "$out/lib/$name"
  done
done
# The image carries no debug information (the build tree keeps it).
strip --strip-unneeded "$out"/bin/* "$out"/lib/*
missing=$(for bin in "$out"/bin/*; do LD_LIBRARY_PATH=$out/lib ldd "$bin" | grep "not found" |
  grep -Ev 'libcudart|libcublas|libcudnn' || true; done)
if [[ -n $missing ]]; then
  echo "container-build: unresolved libraries:"; echo "$missing"; exit 1
fi
echo "container-build: $(ls "$out/bin" | wc -l) programs, $(ls "$out/lib" | wc -l) libraries," \
  "$(du -sh "$out" | cut -f1) in $out"
