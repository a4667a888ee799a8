#!/usr/bin/env bash
# The whole control-plane flow: a Runtime becomes a (simulated) Gardener Shoot, the infrastructure
# manager writes its kubeconfig Secret, and operator mode installs the Kyma's module on the shoot.
# Two dev clusters: the control plane (which also acts as the garden) and the shoot.
# `make demo-down` stops everything.
set -euo pipefail
BIN=${BIN:-.venv/bin}
DEMO_DIR=${DEMO_DIR:-$HOME/.cache/reconciler/dev-cluster}
SHOOT_DIR="$DEMO_DIR/shoot"
KCP="$DEMO_DIR/kubeconfig"
# the test bed's kubectl (a fresh machine has none on PATH)
KUBECTL=$("$BIN/python" -c 'from reconciler.paths import find_binary; print(find_binary("kubectl"))')
k() { "$KUBECTL" --kubeconfig "$KCP" "$@"; }

"$BIN/reconciler" dev-cluster up --dir "$DEMO_DIR"
"$BIN/reconciler" dev-cluster up --dir "$SHOOT_DIR" --no-kubelet

start() {  # name, then the command: started once, its pid in DEMO_DIR/<name>.pid
  local name=$1; shift
  if [ -f "$DEMO_DIR/$name.pid" ] && kill -0 "$(cat "$DEMO_DIR/$name.pid")" 2>/dev/null; then
    return
  fi
  nohup "$@" > "$DEMO_DIR/$name.log" 2>&1 &
  echo $! > "$DEMO_DIR/$name.pid"
}

echo "== 1. Gardener simulator: garden = the control plane, every shoot = $SHOOT_DIR"
start gardener "$BIN/reconciler" dev-cluster gardener --garden "$KCP" \
  --shoot "$SHOOT_DIR/kubeconfig" --workdir "$DEMO_DIR/garden" --project demo \
  --default-domain kyma.example.com
for _ in $(seq 1 100); do [ -f "$DEMO_DIR/garden/garden-kubeconfig" ] && break; sleep 0.2; done

echo "== 2. CRDs, the infrastructure manager and the operator"
"$BIN/reconciler" infra install-crds --kubeconfig "$KCP"
"$BIN/reconciler" operator install-crds --kubeconfig "$KCP"
k create namespace kcp-system --dry-run=client -o yaml | k apply -f - >/dev/null
# Gardener polled every second, not at KIM's 60/30/90/15 s, so the demo takes seconds
RECONCILER_INFRA_GARDENER_PROJECT=demo RECONCILER_INFRA_CREATE_POLL_INTERVAL=1 \
  RECONCILER_INFRA_UPDATE_POLL_INTERVAL=1 RECONCILER_INFRA_DELETE_POLL_INTERVAL=1 \
  RECONCILER_INFRA_GARDENER_REQUEUE_INTERVAL=1 \
  start infra "$BIN/reconciler" infra run --kubeconfig "$KCP" \
  --garden-kubeconfig "$DEMO_DIR/garden/garden-kubeconfig" --namespace kcp-system
RECONCILER_OPERATOR_SOURCE_LOCAL_FILES=true \
  start operator "$BIN/reconciler" operator run --kubeconfig "$KCP" --namespace kcp-system

echo "== 3. a Runtime and a Kyma of the same name"
k -n kcp-system apply -f examples/operator/catalog.yaml -f examples/infra/runtime.yaml \
  -f examples/infra/kyma.yaml
for _ in $(seq 1 300); do
  runtime=$(k -n kcp-system get runtime demo-runtime -o jsonpath='{.status.state}' || true)
  kyma=$(k -n kcp-system get kyma demo-runtime -o jsonpath='{.status.state}' || true)
  echo "Runtime demo-runtime: ${runtime:-?}   Kyma demo-runtime: ${kyma:-?}"
  [ "$runtime" = Ready ] && [ "$kyma" = Ready ] && break
  sleep 1
done
k -n garden-demo get shoots.core.gardener.cloud demo \
  -o jsonpath='{"Shoot demo: "}{.status.lastOperation.type} {.status.lastOperation.state}{"\n"}'
k -n kcp-system get secret kubeconfig-demo-runtime --show-labels
k -n kcp-system get gardenerclusters.infrastructuremanager.kyma-project.io demo-runtime \
  -o jsonpath='{"GardenerCluster demo-runtime, skr-domain: "}{.metadata.annotations.skr-domain}{"\n"}'
echo "== on the shoot, reached with the Runtime's kubeconfig Secret:"
k -n kcp-system get secret kubeconfig-demo-runtime -o jsonpath='{.data.config}' | base64 -d \
  > "$DEMO_DIR/demo-runtime.kubeconfig"
"$KUBECTL" --kubeconfig "$DEMO_DIR/demo-runtime.kubeconfig" -n kyma-system get configmaps
"$KUBECTL" --kubeconfig "$DEMO_DIR/demo-runtime.kubeconfig" get clusterrolebindings \
  -l reconciler.kyma-project.io/managed-by=infrastructure-manager
echo "Logs: $DEMO_DIR/{gardener,infra,operator}.log   Stop everything with: make demo-down"
