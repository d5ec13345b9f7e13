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
[[ $status == 0 ]] && echo "layering: core <- service <- {server, client, gpu_worker} holds"
exit $status
