#!/usr/bin/env bash
# Lints proto/ with buf's default rules (exceptions argued in proto/buf.yaml). Exit 77 = skipped
# (buf not installed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
buf=$here/tools/node_modules/.bin/buf
if [[ ! -x $buf ]]; then
  echo "buf not installed (scripts/install-deps.sh installs it from npm): skipped"
  exit 77
fi
cd "$here/proto"
"$buf" lint 2> >(grep -v -e "deprecated" -e "^$" -e "^\s" >&2)
echo "buf lint: clean"
