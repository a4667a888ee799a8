#!/usr/bin/env bash
# The README's demo: a local dev cluster, the sample component set deployed by the CLI, then the
# mothership (embedded default: SQLite, in-process reconciler) reconciling the same cluster,
# watched through the admin CLI, then operator mode: the example catalog and Kyma
# (examples/operator) reconciled by `reconciler operator run`. `make demo-down` stops everything.
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
  # a new mothership starts from an empty database: an earlier demo's registered the cluster
  # that `make demo-down` stopped, and would first reconcile that dead cluster
  rm -rf "$DEMO_DIR/mothership"
  # local demo only: authentication explicitly off, bound to 127.0.0.1; the console's Kyma view
  # reads the demo cluster
  RECONCILER_API_AUTH=none RECONCILER_DATA_DIR="$DEMO_DIR/mothership" \
    RECONCILER_API_CONSOLE_KUBECONFIG="$DEMO_DIR/kubeconfig" \
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
echo "The admin console: $URL/ui (no sign-in: authentication is off for the demo)"

echo "== 3. operator mode: examples/operator (catalog + Kyma) in namespace kcp-system"
echo "   (log: $DEMO_DIR/operator.log)"
KUBECONFIG="$DEMO_DIR/kubeconfig"
export KUBECONFIG
KUBECTL=$("$BIN/python" -c 'from reconciler.paths import find_binary; print(find_binary("kubectl"))')
"$BIN/reconciler" operator install-crds
"$KUBECTL" create namespace kcp-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
"$KUBECTL" -n kcp-system apply -f examples/operator/catalog.yaml -f examples/operator/kyma.yaml
pid_file="$DEMO_DIR/operator.pid"
if ! { [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; }; then
  # from the repository root: the catalog's chart link is relative to it
  # the example catalog links charts in this repository: local files allowed for the demo
  RECONCILER_OPERATOR_SOURCE_LOCAL_FILES=true \
    nohup "$BIN/reconciler" operator run --namespace kcp-system > "$DEMO_DIR/operator.log" 2>&1 &
  echo $! > "$pid_file"
fi
last=""
for _ in $(seq 1 240); do
  state=$("$KUBECTL" -n kcp-system get kyma demo -o jsonpath='{.status.state}' 2>/dev/null || true)
  [ "$state" != "$last" ] && echo "kyma demo: ${state:-(no status yet)}" && last=$state
  [ "$state" = Ready ] && break
  sleep 0.5
done
"$KUBECTL" -n kcp-system get kyma,manifest
echo "modules of kyma demo (name version state):"
"$KUBECTL" -n kcp-system get kyma demo \
  -o jsonpath='{range .status.modules[*]}  {.name} {.version} {.state}{"\n"}{end}'
"$KUBECTL" -n kyma-system get configmap hello-greeting -o jsonpath='{.data}{"\n"}'
echo "Try: $KUBECTL --kubeconfig $KUBECONFIG -n kcp-system get kyma demo -o yaml"
echo "The admin console (fleet, cluster history, the Kyma view): $URL/ui"
echo "Stop everything with: make demo-down"
