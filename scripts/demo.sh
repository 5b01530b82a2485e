#!/usr/bin/env bash
# The demo: set up (first run: a few minutes), then run memory_node beside a simulated robot
# for about a minute. Everything is written to demo/ inside the checkout (never your home):
# demo/robot-memory.md, its evidence database and the node's log.
#
#   bash scripts/demo.sh [SECONDS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_TO_RUN="${1:-60}"

bash scripts/setup.sh --quiet
# shellcheck disable=SC1091
source scripts/env.sh
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 101 + 1 ))}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"

DEMO="$ROOT/demo"
# Demo memory time starts again at the wall clock each run, so start from a clean slate.
rm -rf "$DEMO"
mkdir -p "$DEMO"
echo "[demo] memory_node + a simulated robot for ${SECONDS_TO_RUN} s (1 s = 48 memory-minutes);"
echo "[demo] files in $DEMO; the node's log is $DEMO/memory_node.log"

memory_node --ros-args --params-file config/demo.yaml \
  -p "memory_file:=$DEMO/robot-memory.md" -p "rules_file:=$ROOT/config/observation_rules.yaml" \
  >"$DEMO/memory_node.log" 2>&1 &
NODE_PID=$!
trap 'kill -TERM "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true' EXIT

demo_robot --seconds "$SECONDS_TO_RUN"

kill -TERM "$NODE_PID"
wait "$NODE_PID" || true
trap - EXIT
echo
echo "[demo] what memory_node did:"
grep -E 'dream at' "$DEMO/memory_node.log" | sed 's/^\[INFO\] \[[0-9.]*\] \[robot_memory\]: /  /' || true
echo
echo "[demo] $DEMO/robot-memory.md:"
cat "$DEMO/robot-memory.md"
echo
echo "[demo] try: robot-memory show --file demo/robot-memory.md   (after: source scripts/env.sh)"
