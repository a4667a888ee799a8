#!/usr/bin/env bash
# The README's demo: a local dev cluster, the sample component set deployed by the CLI, then the
# mothership (embedded default: SQLite, in-process reconciler) reconciling the same cluster,
# watched through the admin CLI. `make demo-down` stops everything.
set -euo pipefail
BIN=${BIN:-.venv/bin}
DEMO_DIR=${DEMO_DIR:-$HOME/.cache/reconciler/dev-cluster}
PORT=${DEMO_PORT:-8080}
URL="http://127.0.0.1:$PORT"

"$BIN/reconciler" dev-cluster up --dir "$DEMO_DIR"
echo "== 1. reconciler deploy: the sample component set, straight from the CLI"
"$BIN/reconciler" deploy --kubeconfig "$DEMO_DIR/kubeconfig" --workspace examples/kyma-like \
  --profile evaluation

echo "== 2. the mothership on the embedded default, at $URL (log: $DEMO_DIR/mothership.log)"
if ! curl -fs "$URL/health/live" >/dev/null 2>&1; then
  # local demo only: authentication explicitly off, bound to 127.0.0.1
  RECONCILER_API_AUTH=none RECONCILER_DATA_DIR="$DEMO_DIR/mothership" \
    nohup "$BIN/reconciler" mothership serve --workspace examples/kyma-like --port "$PORT" \
    > "$DEMO_DIR/mothership.log" 2>&1 &
  echo $! > "$DEMO_DIR/mothership.pid"
  for _ in $(seq 1 100); do
    curl -fs "$URL/health/ready" >/dev/null 2>&1 && break
    sleep 0.2
  done
fi
"$BIN/reconciler" cluster register demo --kubeconfig "$DEMO_DIR/kubeconfig" \
  --workspace examples/kyma-like --kyma-version 2.4.0 --url "$URL"
for _ in $(seq 1 240); do
  status=$("$BIN/reconciler" cluster status demo --url "$URL" -o json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  echo "cluster demo: $status"
  case "$status" in ready|error) break ;; esac
  sleep 0.5
done
"$BIN/reconciler" cluster status demo --url "$URL"
"$BIN/reconciler" reconciliation list --url "$URL"
echo "Try: $BIN/reconciler cluster history demo --url $URL"
echo "Stop everything with: make demo-down"
