#!/usr/bin/env bash
# The dashboard (web/): build it, test it in a browser, or benchmark its rendering.
#
#   scripts/web.sh build                 npm ci when web/node_modules is missing; tsc; vite build -> web/dist
#   scripts/web.sh test  [build-dir]     build, then the Playwright tests against a real server
#   scripts/web.sh bench [build-dir]     build, then the render benchmark -> bench/results/dashboard.txt
#
# Exit 77 (skipped) only where npm itself is missing; scripts/install-deps.sh installs everything
# else (npm packages pinned by web/package-lock.json, Debian's chromium). No browser is downloaded.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-build}
build=$(cd "$here" && realpath -m "${2:-build}")
web=$here/web
if ! command -v npm >/dev/null 2>&1; then
  echo "web: npm not found (scripts/install-deps.sh installs nodejs): skipped"
  exit 77
fi
cd "$web"
if [[ ! -x node_modules/.bin/vite || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npx --no-install tsc --noEmit
npx --no-install vite build --logLevel warn
echo "web: built $(find dist -type f | wc -l) files into web/dist"
case $cmd in
  build) ;;
  test)
    export WAVECREST_BUILD_DIR=$build WAVECREST_WEB_OUT=$build/web-test-results
    npx --no-install playwright test --reporter=line
    echo "web: screenshots in $WAVECREST_WEB_OUT/screenshots"
    ;;
  bench)
    export WAVECREST_BUILD_DIR=$build WAVECREST_WEB_OUT=$build/web-bench-results WAVECREST_WEB_BENCH=1
    export WAVECREST_BENCH_OUT=$here/bench/results/dashboard.txt
    export WAVECREST_SCREENSHOT=$here/web/screenshot.png
    npx --no-install playwright test tests/bench.spec.ts --reporter=line
    ;;
  *) echo "usage: scripts/web.sh build|test|bench [build-dir]" >&2; exit 2 ;;
esac
