#!/usr/bin/env bash
# Starts a server on free loopback ports, runs bench/loadgen against it, writes
# bench/results/loadgen.txt, stops the server.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$build/server/wavecrest-server" --listen=127.0.0.1:0 --metrics_listen= \
  --port_file="$tmp/ports.json" 2>"$tmp/server.log" &
server=$!
for _ in $(seq 300); do [[ -s $tmp/ports.json ]] && break; sleep 0.05; done
port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$tmp/ports.json")
out=bench/results/loadgen.txt
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) cores, commit $(git rev-parse --short HEAD)"
  echo "# server and load generator on the same machine"
  for c in 1 8 32; do
    "$build/bench/loadgen" --server "127.0.0.1:$port" --requests 20000 --concurrency $c \
      --deadline_ms 1000 --model examples/models/llama-2-7b.json --gpu h100-sxm
    echo
  done
} 2>&1 | tee "$out"
