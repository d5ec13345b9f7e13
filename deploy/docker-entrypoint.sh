#!/bin/sh
# The image's entrypoint. First argument: server | worker | cli | healthcheck; the rest go to the
# program. Defaults put the server on all interfaces inside the container (ports 50051 gRPC,
# 8080 HTTP + dashboard, 9464 metrics) with its store in $WAVECREST_STORE (a postgresql:// URI that
# replicas share), else a SQLite file under /var/lib/wavecrest/cache.
set -eu
role=${1:-server}
[ $# -gt 0 ] && shift
case $role in
  server)
    exec wavecrest-server --listen=0.0.0.0:50051 --http_listen=0.0.0.0:8080 \
      --metrics_listen=0.0.0.0:9464 --http_static_dir=/opt/wavecrest/share/web \
      --http_models_dir=/opt/wavecrest/share/models \
      --store="${WAVECREST_STORE:-/var/lib/wavecrest/cache/results.db}" "$@" ;;
  worker)
    exec wavecrest-worker "$@" ;;
  cli)
    exec wavecrest "$@" ;;
  healthcheck)
    # Server: the Advisor service must be SERVING. Worker: set WAVECREST_HEALTH_ADDRESS and
    # WAVECREST_HEALTH_SERVICE= (empty: the worker's overall health).
    exec wavecrest health --server="${WAVECREST_HEALTH_ADDRESS:-127.0.0.1:50051}" \
      --service="${WAVECREST_HEALTH_SERVICE-wavecrest.v1.Advisor}" --deadline=4 ;;
  *)
    echo "usage: (server | worker | cli | healthcheck) [flags...]" >&2
    exit 2 ;;
esac
