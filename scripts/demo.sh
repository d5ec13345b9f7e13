#!/usr/bin/env bash
# The demo, in the order a newcomer gets answers: the CLI is built first and answers offline (the
# analytic model in process, labelled PREDICTED), then the server and worker are built and started
# with --workers auto (one supervised wavecrest-worker per GPU; on a machine without a GPU, one
# worker emulating an H100 with the analytic model), and the CLI runs against it, ending with a
# recommendation for Pythia-2.8B (h = 2560, a = 32) on the default device: the first GPU's kind,
# else h100-sxm. The build directory must be configured (make demo does it).
#
# usage: scripts/demo.sh [BUILD_DIR] [JOBS]      env: DEMO_KEEP=1, DEMO_HTTP_PORT=8080
set -euo pipefail
build=${1:-build}
jobs=${2:-$(nproc)}
cd "$(dirname "$0")/.."
started=$SECONDS
cli=("$build/client/wavecrest")

echo "== building the CLI (cmake --build $build --target wavecrest)"
cmake --build "$build" -j "$jobs" --target wavecrest
echo; echo "== the first answer, offline ($((SECONDS - started)) s after the build began; the server is built next):"
echo "== wavecrest recommend --model examples/models/pythia-2.8b.json --gpu h100-sxm --top 3"
"${cli[@]}" recommend --model examples/models/pythia-2.8b.json --gpu h100-sxm --top 3

echo; echo "== building the server and the worker, then the dashboard"
cmake --build "$build" -j "$jobs" --target programs  # the server and the worker (one target: in parallel)
bash scripts/web.sh build || echo "(no dashboard: the server runs without it)"
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
workers=auto
gpu=$("$build/gpu_worker/wavecrest-worker" devices |
  sed -nE 's/.*"catalog_name":"([a-z0-9-]+)".*/\1/p' | head -n 1)
gpu=${gpu:-h100-sxm}
web_flags=()
[[ -f web/dist/index.html ]] && web_flags=(--http_static_dir=web/dist)
echo "== starting wavecrest-server (--workers $workers; logs in $tmp/server.log)"
"$build/server/wavecrest-server" --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 \
  --port_file="$tmp/ports.json" --store="$tmp/results.db" --workers=$workers \
  --http_listen=127.0.0.1:${DEMO_HTTP_PORT:-0} --http_models_dir=examples/models \
  ${web_flags[@]+"${web_flags[@]}"} 2>"$tmp/server.log" &
server_pid=$!
for _ in $(seq 600); do [[ -s $tmp/ports.json ]] && break; sleep 0.05; done
[[ -s $tmp/ports.json ]] || { cat "$tmp/server.log"; echo "server did not start"; exit 1; }
port=$(sed -E 's/.*"grpc": ([0-9]+).*/\1/' "$tmp/ports.json")
http=$(sed -E 's/.*"http": ([0-9]+).*/\1/' "$tmp/ports.json")
server="--server=127.0.0.1:$port"
for _ in $(seq 200); do "${cli[@]}" health "$server" 2>/dev/null | grep -q "measure: SERVING" && break; sleep 0.05; done

echo; echo "== wavecrest health $server"
"${cli[@]}" health "$server" || true
echo; echo "== wavecrest devices $server"
"${cli[@]}" devices "$server"
echo; echo "== wavecrest analyze $server --model examples/models/pythia-2.8b.json --gpu a100-sxm-80gb --attention unfused"
"${cli[@]}" analyze "$server" --model examples/models/pythia-2.8b.json --gpu a100-sxm-80gb --attention unfused
echo; echo "== wavecrest time $server --gpu $gpu --gemm 8192x12288x4096,8192x12288x4095 --dtype bf16"
"${cli[@]}" time "$server" --gpu "$gpu" --gemm 8192x12288x4096,8192x12288x4095 --dtype bf16
echo; echo "== wavecrest time $server --gpu $gpu --model examples/models/llama-3-8b.json --layers"
"${cli[@]}" time "$server" --gpu "$gpu" --model examples/models/llama-3-8b.json --layers
echo; echo "== wavecrest recommend $server --model examples/models/pythia-2.8b.json --gpu $gpu --attention unfused --top 8"
"${cli[@]}" recommend "$server" --model examples/models/pythia-2.8b.json --gpu "$gpu" \
  --attention unfused --top 8

echo; echo "== the same API as JSON over HTTP: curl -s http://127.0.0.1:$http/v1/health"
curl -s "http://127.0.0.1:$http/v1/health"; echo
if [[ -n ${DEMO_KEEP:-} ]]; then
  if [[ ${#web_flags[@]} -gt 0 ]]; then
    echo; echo "== the dashboard: http://127.0.0.1:$http/ (the server keeps running; Ctrl-C stops it)"
  else
    echo; echo "== no dashboard (web/dist missing: make web builds it); the server keeps running"
  fi
  wait "$server_pid"
else
  echo; echo "== the demo stops its server now. To open the dashboard, keep it running:"
  echo "   DEMO_KEEP=1 make demo          (DEMO_HTTP_PORT=8080 for a fixed port)"
fi
