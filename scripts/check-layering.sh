#!/usr/bin/env bash
# The layering the folders promise, checked on the includes: core <- service <- {server, client,
# gpu_worker}. core includes none of the others; service only core; client and gpu_worker never
# server; nothing includes a program's folder but that folder and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
check() {  # check DIR PATTERN WHY
  local hits
  hits=$(grep -rnE "#include \"($2)/" "$1" --include='*.h' --include='*.cc' --include='*.cu' || true)
  if [[ -n $hits ]]; then
    echo "layering: $1 must not include $2/ ($3):"; echo "$hits"; status=1
  fi
}
check core "service|server|client|gpu_worker" "the core is the domain alone"
check service "server|client|gpu_worker" "the service library sits under the programs"
for dir in client gpu_worker bench; do check "$dir" "server" "the server's internals are its own"; done
check server "client|gpu_worker" "programs do not include each other"
check gpu_worker "client" "programs do not include each other"
# Inside the layers (issue 20): the transport plans nothing, the logic knows no transport, and
# the CUDA engine is the worker's own.
check_files() {  # check_files PATTERN WHY FILE...
  local pattern=$1 why=$2; shift 2
  local hits
  hits=$(grep -nE "#include [\"<]($pattern)" "$@" || true)
  if [[ -n $hits ]]; then echo "layering: $why:"; echo "$hits"; status=1; fi
}
check_files "core/" "the transport (server/advisor_service.cc) calls service/, which plans" \
  server/advisor_service.cc server/advisor_service.h
check_files "grpcpp/|grpc\+\+/|server/|wavecrest/v1/advisor.grpc" \
  "the logic layer (service/*_logic, service/measurer) knows no transport" \
  service/*_logic.h service/*_logic.cc service/measurer.h service/measurer.cc
for dir in core service server client bench; do
  check "$dir" "gpu_worker/cuda" "the CUDA engine is the worker's own"
done
[[ $status == 0 ]] && echo "layering: core <- service <- {server, client, gpu_worker} holds; transport, logic and engine kept apart"
exit $status
