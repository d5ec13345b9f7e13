#!/usr/bin/env bash
# Starts a server on free loopback ports, runs bench/loadgen against it, writes
# bench/results/loadgen.txt, stops the server.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$build/server/wavecrest-server" --listen=127.0.0.1:0 --metrics_listen= \
  --port_file="$tmp/ports.json" 2>"$tmp/server.log" &
server=$!
for _ in $(seq 300); do [[ -s $tmp/ports.json ]] && break; sleep 0.05; done
port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$tmp/ports.json")
out=bench/results/loadgen.txt
# CPU seconds the server process has used (user + system), from /proc.
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$server/stat"; }
{
  bench_header
  echo "# server and load generator on the same machine (they share the cores: the client's CPU"
  echo "# per call is about the server's, so the server's own cost is printed per call too);"
  echo "# the load generator is async (one thread driving completion queues) unless it says sync"
  run() {
    local before after
    before=$(server_cpu)
    "$build/bench/loadgen" --server "127.0.0.1:$port" --deadline_ms 1000 \
      --model examples/models/llama-2-7b.json --gpu h100-sxm "$@"
    after=$(server_cpu)
    awk -v a="$after" -v b="$before" -v n="$2" \
      'BEGIN {printf "server CPU  %.1f us per Analyze (incl. warm-up and any Recommend)\n", (a - b) / (n + 200) * 1e6}'
    echo
  }
  # Enough calls for a run of a few seconds at each concurrency (a sub-second run is noisy here).
  run --requests 20000 --concurrency 1
  for c in 8 32; do
    run --requests 80000 --concurrency $c
  done
  # The same load from one blocking thread per call in flight (what this file showed before the
  # async client): the client's context switches then cost the shared cores more than the server.
  run --requests 80000 --concurrency 32 --client_api sync
  # A launcher's predicted Recommend while 32 Analyze clients keep the server busy.
  run --requests 80000 --concurrency 32 --recommend_clients 1
} 2>&1 | tee "$out"
