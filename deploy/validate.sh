#!/usr/bin/env bash
# Checks the deployment files with real tools, offline: the Dockerfile with dockerfile-utils'
# linter; the image's entrypoint with `sh -n`; deploy/k8s rendered by `kubectl kustomize` and
# validated against the Kubernetes and prometheus-operator schemas (tools/validate-k8s.mjs);
# deploy/compose with `docker-compose config` for each profile; the compose Prometheus config
# with promtool. Exit 77 (skipped) when a tool is missing (scripts/install-deps.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
tools=$here/tools/node_modules
need() {
  if ! command -v "$1" >/dev/null 2>&1 && [[ ! -x $1 ]]; then
    echo "validate: $1 not found (scripts/install-deps.sh installs it): skipped"
    exit 77
  fi
}
need kubectl; need docker-compose; need node; need promtool; need "$tools/.bin/dockerfile-utils"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Dockerfile: every diagnostic is a failure (the linter prints nothing when clean).
"$tools/.bin/dockerfile-utils" lint Dockerfile >"$tmp/lint.txt" 2>&1 || true
if [[ -s $tmp/lint.txt ]]; then echo "Dockerfile:"; cat "$tmp/lint.txt"; exit 1; fi
grep -q '^USER 10001' Dockerfile || { echo "Dockerfile: the runtime stage must not run as root"; exit 1; }
grep -q '^HEALTHCHECK' Dockerfile || { echo "Dockerfile: no HEALTHCHECK"; exit 1; }
echo "Dockerfile: lint clean, non-root, HEALTHCHECK"
sh -n deploy/docker-entrypoint.sh
bash -n scripts/container-build.sh
echo "entrypoint: sh -n clean"

# deploy/k8s (the base) and each overlay, each with the kinds it adds.
base=Deployment,StatefulSet,Service,NetworkPolicy,PodDisruptionBudget
for render in "deploy/k8s:$base" "deploy/k8s/overlays/postgres:$base,Secret" \
              "deploy/k8s/overlays/monitoring:$base,ServiceMonitor" \
              "deploy/k8s/overlays/h200-pool:$base" \
              "deploy/k8s/overlays/everything:$base,Secret,ServiceMonitor"; do
  dir=${render%%:*}
  kubectl kustomize "$dir" >"$tmp/k8s.yaml" 2>"$tmp/kustomize.err" ||
    { echo "$dir:"; cat "$tmp/kustomize.err"; exit 1; }
  echo -n "$dir: "
  node "$here/tools/validate-k8s.mjs" "$tmp/k8s.yaml" "${render#*:}"
done
# The base applies on a cluster without the prometheus-operator CRDs.
if kubectl kustomize deploy/k8s | grep -q 'kind: ServiceMonitor'; then
  echo "deploy/k8s: the ServiceMonitor belongs in overlays/monitoring"; exit 1
fi

compose=deploy/compose/compose.yaml
fleet=deploy/compose/compose.postgres.yaml
for profile in gpu cpu; do
  docker-compose -f "$compose" --profile "$profile" config -q
  docker-compose -f "$compose" -f "$fleet" --profile "$profile" config -q
done
services=$(docker-compose -f "$compose" config --services | sort | tr '\n' ' ')
[[ $services == "grafana prometheus server worker worker-cpu " ]] ||
  { echo "compose: unexpected services: $services"; exit 1; }
services=$(docker-compose -f "$compose" -f "$fleet" config --services | sort | tr '\n' ' ')
[[ $services == "grafana postgres prometheus server server-replica worker worker-cpu " ]] ||
  { echo "compose (fleet): unexpected services: $services"; exit 1; }
# The fleet file points both servers at its database.
stores=$(docker-compose -f "$compose" -f "$fleet" --profile cpu config |
  grep -c 'WAVECREST_STORE: postgresql://wavecrest@postgres:5432/wavecrest')
[[ $stores == 2 ]] || { echo "compose (fleet): $stores servers use the database, not 2"; exit 1; }
echo "compose: config valid for profiles gpu and cpu, alone and with the fleet ($services)"
cp deploy/compose/prometheus.yml deploy/prometheus/alerts.yml "$tmp/"
promtool check config "$tmp/prometheus.yml" >/dev/null
echo "compose: prometheus.yml and its alert rules pass promtool"
