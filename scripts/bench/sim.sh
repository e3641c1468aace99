#!/usr/bin/env bash
# Runs `drover sim` on the default Alibaba GPU trace (the FGD paper's
# setting: arrival 1.3, seed 1) and on a synthetic 5,000-node cluster of
# 8 GPUs each, printing one JSON object per run. Used by `make bench`.
#
#   DROVER      the binary (default: bin/drover, built first)
#   TRACE_DIR   the trace (default: ../shared/traces/alibaba-gpu-2023)
#   POLICY      -policy for both runs (default: default)
#   SYNTHETIC   set to 0 to skip the synthetic run
set -euo pipefail

cd "$(dirname "$0")/../.."
if [[ -z "${DROVER:-}" ]]; then
  DROVER=bin/drover
  go build -o "$DROVER" .
fi
TRACE_DIR=${TRACE_DIR:-../shared/traces/alibaba-gpu-2023}
POLICY=${POLICY:-default}
SYNTHETIC=${SYNTHETIC:-1}

if [[ -f "$TRACE_DIR/openb_node_list_all_node.csv" ]]; then
  echo "# drover sim: default trace, -arrival 1.3 -seed 1 -policy $POLICY"
  "$DROVER" sim -nodes "$TRACE_DIR/openb_node_list_all_node.csv" \
    -pods "$TRACE_DIR/openb_pod_list_default.csv" \
    -arrival 1.3 -seed 1 -policy "$POLICY" -json
else
  echo "# drover sim: trace not found in $TRACE_DIR, skipped" >&2
fi

if [[ "$SYNTHETIC" != 0 ]]; then
  echo "# drover sim: synthetic 5000 nodes x 8 GPUs, single-GPU tasks until full, in batch jobs of 2000 -policy $POLICY"
  "$DROVER" sim -synthetic-nodes 5000 -gpus-per-node 8 -policy "$POLICY" -json
  echo "# drover sim: synthetic 5000 nodes x 8 GPUs, the same tasks, one job each -policy $POLICY"
  "$DROVER" sim -synthetic-nodes 5000 -gpus-per-node 8 -job-size 1 -policy "$POLICY" -json
fi
