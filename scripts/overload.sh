#!/usr/bin/env bash
# Overload benchmark (issue: hardening): starts a server with one emulating worker on free loopback
# ports, drives it with Analyze clients beside Recommend (AUTO) streaming clients, RUNS times per
# client count, and reports whether the server survived, its RSS and open fds before, at the end of
# the load and after it. Writes bench/results/overload.txt unless OUT is set.
#
#   scripts/overload.sh [build] ; RUNS=10 CLIENTS="64 128 256" MODEL=examples/models/llama-2-70b.json
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
runs=${RUNS:-10}
clients=${CLIENTS:-"64 128 256"}
model=${MODEL:-examples/models/llama-2-70b.json}
requests=${REQUESTS:-6000}
out=${OUT:-bench/results/overload.txt}
server_bin=${SERVER_WRAPPER:-}
tmp=$(mktemp -d)
server=""
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$tmp"' EXIT

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo "-"; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

start_server() {
  rm -f "$tmp/ports.json"
  $server_bin "$build/server/wavecrest-server" --listen=127.0.0.1:0 --metrics_listen= \
    --workers=auto --emulate=h100-sxm --store="$tmp/cache.db" \
    --port_file="$tmp/ports.json" 2>>"$tmp/server.log" &
  server=$!
  for _ in $(seq 600); do [[ -s $tmp/ports.json ]] && break; sleep 0.05; done
  [[ -s $tmp/ports.json ]] || { echo "server did not start"; tail -5 "$tmp/server.log"; exit 1; }
  port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$tmp/ports.json")
}

{
  bench_header
  echo "# server (--workers=auto, one emulating worker) and load generator on the same machine"
  echo "# model $model; per run: $requests Analyze requests at C clients beside C/2 Recommend clients"
  crashes=0
  for c in $clients; do
    r=$((c / 2))
    for run in $(seq "$runs"); do
      start_server
      sleep 0.5
      before="rss $(rss_kb $server) kB, fds $(fds $server)"
      "$build/bench/loadgen" --server "127.0.0.1:$port" --requests "$requests" --concurrency "$c" \
        --recommend_clients "$r" --deadline_ms 2000 --recommend_deadline_ms 5000 --warmup 0 \
        --model "$model" --gpu h100-sxm >"$tmp/load.txt" 2>&1 || true
      during="rss $(rss_kb $server) kB, fds $(fds $server)"
      if kill -0 "$server" 2>/dev/null; then
        sleep 1
        after="rss $(rss_kb $server) kB, fds $(fds $server)"
        kill -TERM "$server"
        if wait "$server"; then verdict="survived, exit 0"; else verdict="survived, exit $?"; fi
      else
        wait "$server" && code=0 || code=$?
        verdict="CRASHED (exit $code)"; after="-"
        crashes=$((crashes + 1))
        grep -E "malloc|double free|corrupt|Segmentation|Abort" "$tmp/server.log" | tail -2 || true
      fi
      server=""
      echo "== clients $c Analyze + $r Recommend, run $run: $verdict"
      echo "   before: $before; end of load: $during; after: $after"
      sed 's/^/   /' "$tmp/load.txt"
      : >"$tmp/server.log"
      rm -f "$tmp/cache.db"*
    done
  done
  echo "# crashes: $crashes"
} 2>&1 | tee "$out"
