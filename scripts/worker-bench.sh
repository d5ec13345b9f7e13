#!/usr/bin/env bash
# Starts wavecrest-server with one emulating worker and a fresh result cache, runs
# bench/worker_roundtrip against it and writes bench/results/worker_roundtrip.txt.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
tmp=$(mktemp -d)
pid=""
trap '[[ -n $pid ]] && kill -TERM $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/server/wavecrest-server" --listen=127.0.0.1:0 --metrics_listen= --port_file="$tmp/p.json" \
  --workers=1 --worker_backend=analytic --store="$tmp/cache.db" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 600); do [[ -s $tmp/p.json ]] && break; sleep 0.05; done
port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$tmp/p.json")
for _ in $(seq 600); do
  "$build/client/wavecrest" health --server=127.0.0.1:$port 2>/dev/null | grep -q "measure: SERVING" && break
  sleep 0.05
done
out=bench/results/worker_roundtrip.txt
{
  bench_header
  echo "# wavecrest-server --workers=1 --worker_backend=analytic (emulating h100-sxm: no GPU time) --store=fresh"
  "$build/bench/worker_roundtrip" --server=127.0.0.1:$port --repeat=20
} 2>&1 | tee "$out"
