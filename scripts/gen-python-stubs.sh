#!/usr/bin/env bash
# Generates the Python package's protobuf and gRPC stubs (with .pyi type stubs) from proto/ into
# client/python/wavecrest/v1 (or OUT_DIR), with Debian's protoc and grpc_python_plugin. The stubs
# are committed so that `pip install ./client/python` needs no compiler; the CTest
# python_stubs_current regenerates them into a temporary directory and fails when they differ.
#
#   scripts/gen-python-stubs.sh [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/client/python}
plugin=$(command -v grpc_python_plugin) || { echo "grpc_python_plugin not found (protobuf-compiler-grpc)"; exit 77; }
mkdir -p "$out"
protoc -I "$here/proto" --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" \
  "$here/proto/wavecrest/v1/model.proto" "$here/proto/wavecrest/v1/advisor.proto"
# Only the Advisor's stubs ship; protoc writes no __init__.py.
rm -f "$out/wavecrest/v1/model_pb2_grpc.py"
echo "gen-python-stubs: $(ls "$out/wavecrest/v1" | grep -c _pb2) files in $out/wavecrest/v1"
# The typed answers (wavecrest/results.py) follow the stubs: regenerate them with the package's own.
if [[ $# -eq 0 ]]; then
  "$(command -v /usr/bin/python3 || command -v python3)" "$here/scripts/gen-python-results.py"
fi
