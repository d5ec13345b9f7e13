#!/usr/bin/env bash
# Installs the Debian 12 packages wavecrest needs to build, test and run its demo.
# Idempotent: installs only what is missing, and does nothing (not even `apt-get update`) when all
# of it is present. Needs root (or sudo) only when something is missing.
set -euo pipefail

# What building the three programs needs (also all the Dockerfile's build stage installs, on
# Ubuntu 24.04, whose gRPC 1.51 / protobuf 3.21 / Abseil 20220623 match Debian 12's).
build_packages=(
  build-essential cmake pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libcivetweb-dev libsqlite3-dev nlohmann-json3-dev
  libpq-dev    # the PostgreSQL measurement store a fleet of replicas shares (--store postgresql://)
  libgoogle-perftools-dev   # tcmalloc, the server's allocator (CMakeLists.txt: WAVECREST_TCMALLOC)
)
# What `make test` and `make demo` need besides.
test_packages=(
  sqlite3 libgtest-dev libgmock-dev libbenchmark-dev
  universal-ctags   # scripts/long-functions.py reads functions as ctags does (the long-functions lint)
  python3 python3-grpcio python3-protobuf python3-venv python3-pip mypy   # the Python package: venv install, type check
  prometheus   # for promtool, which checks our /metrics output in a test
  curl
  openssl      # the TLS tests make their certificates at test time
  clang-14 libclang-rt-14-dev   # scripts/sanitize.sh: ASan+UBSan suite and libFuzzer targets
  chromium     # the dashboard's browser tests (Playwright drives Debian's Chromium)
  docker-compose   # validates deploy/compose (`docker-compose config`; no daemon needed)
  postgresql   # the fleet tests start a throwaway cluster (initdb, pg_ctl) per test
)
build_only=0
[[ ${1:-} == --build-only ]] && build_only=1
packages=("${build_packages[@]}")
[[ $build_only == 1 ]] || packages+=("${test_packages[@]}")
# kubectl renders deploy/k8s (kustomize): Debian's kubernetes-client, unless a kubectl is present
# from elsewhere (installing both would collide on /usr/bin/kubectl).
if [[ $build_only == 0 ]] && ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: Debian packages done"
fi
[[ $build_only == 1 ]] && exit 0

# Lint and validation tools from npm into tools/node_modules, pinned by tools/package-lock.json:
# buf (proto lint), dockerfile-utils (Dockerfile lint), kubernetes-models and yaml (manifest
# schemas). Without npm the tests that use them report themselves skipped.
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -x $here/tools/node_modules/.bin/buf || ! -x $here/tools/node_modules/.bin/dockerfile-utils ||
      $here/tools/package-lock.json -nt $here/tools/node_modules/.package-lock.json ]]; then
  if command -v npm >/dev/null 2>&1; then
    echo "install-deps: installing buf, dockerfile-utils and the Kubernetes schemas into tools/node_modules"
    (cd "$here/tools" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
      echo "install-deps: npm install in tools/ failed; the lint and deploy tests will be skipped"
  else
    echo "install-deps: npm not found; the lint and deploy tests will be skipped"
  fi
fi

# The dashboard's build and test tools (Vite, TypeScript, Playwright, uPlot) from npm into
# web/node_modules, pinned by web/package-lock.json. Playwright drives Debian's chromium above;
# it downloads no browser.
if [[ ! -x $here/web/node_modules/.bin/vite ]]; then
  if command -v npm >/dev/null 2>&1; then
    echo "install-deps: installing the dashboard's npm packages into web/node_modules"
    (cd "$here/web" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
      echo "install-deps: npm install for web/ failed; the dashboard test will fail"
  else
    echo "install-deps: npm not found; the dashboard is not built and its test is skipped"
  fi
fi
