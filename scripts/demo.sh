#!/usr/bin/env bash
# The demo: set up (first run: a few minutes), then run memory_node beside a simulated robot
# for about a minute. Everything is written to demo/ inside the checkout (never your home):
# demo/robot-memory.md, its evidence database, the node's output and the ROS logs.
#
#   bash scripts/demo.sh [SECONDS]
#
# Optional environment:
#   ROBOT_MEMORY_DEMO_SECONDS  how long the robot runs, in real seconds (default 60; the
#                              SECONDS argument wins). The first entries form after ~8 s.
#   ROBOT_MEMORY_DEMO_DIR      where everything is written (default: demo/ in the checkout).
#                              It is emptied first, so it must not exist yet, be empty, or
#                              be a directory an earlier demo wrote.
#   ROBOT_MEMORY_SKIP_SETUP=1  do not run scripts/setup.sh (it has run already, e.g. in a test)
#   ROBOT_MEMORY_DISTRO        kilted (default) or jazzy: the ROS 2 to run on (scripts/distro.sh)
#   ROS_DOMAIN_ID              the DDS domain (default: one derived from this shell's PID)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEMO="${ROBOT_MEMORY_DEMO_DIR:-$ROOT/demo}"
case "$DEMO" in /*) ;; *) DEMO="$PWD/$DEMO" ;; esac
cd "$ROOT"
SECONDS_TO_RUN="${1:-${ROBOT_MEMORY_DEMO_SECONDS:-60}}"
if ! [[ "$SECONDS_TO_RUN" =~ ^[0-9]+([.][0-9]+)?$ ]] || [[ "$SECONDS_TO_RUN" =~ ^0*([.]0*)?$ ]]
then
  echo "demo.sh: the duration must be a positive number of seconds, not '$SECONDS_TO_RUN'" >&2
  exit 2
fi
MARKER=.robot_memory_demo
if [ "$DEMO" != "$ROOT/demo" ] && [ -d "$DEMO" ] && [ ! -e "$DEMO/$MARKER" ] \
   && [ -n "$(ls -A "$DEMO")" ]; then
  echo "demo.sh: $DEMO is not empty and no demo wrote it: choose another ROBOT_MEMORY_DEMO_DIR" >&2
  exit 2
fi

if [ "${ROBOT_MEMORY_SKIP_SETUP:-0}" != 1 ]; then
  # On a first run pip would keep its downloads in ~/.cache/pip: not from the demo.
  if [ -z "${PIP_CACHE_DIR:-}${PIP_NO_CACHE_DIR:-}" ]; then export PIP_NO_CACHE_DIR=1; fi
  bash scripts/setup.sh --quiet
fi
# shellcheck disable=SC1091
source scripts/env.sh
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 101 + 1 ))}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"

# Demo memory time starts again at the wall clock each run, so start from a clean slate.
rm -rf "$DEMO"
mkdir -p "$DEMO"
DEMO="$(cd "$DEMO" && pwd)"
: > "$DEMO/$MARKER"
# rcl writes every process's log to $ROS_LOG_DIR (else $ROS_HOME/log, else ~/.ros/log), and
# the robot-memory command line defaults to ~/.opencastor/: keep all of it in the demo.
export ROS_HOME="$DEMO/ros"
export ROS_LOG_DIR="$DEMO/log"
export CASTOR_ROBOT_MEMORY_FILE="$DEMO/robot-memory.md"
SHOWN="$DEMO/robot-memory.md"
if [ "$DEMO" = "$ROOT/demo" ]; then SHOWN=demo/robot-memory.md; fi

echo "[demo] memory_node + a simulated robot for ${SECONDS_TO_RUN} s (1 s = 48 memory-minutes);"
echo "[demo] files in $DEMO; the node's output is $DEMO/memory_node.log"

memory_node --ros-args --params-file config/demo.yaml \
  -p "memory_file:=$DEMO/robot-memory.md" -p "rules_file:=$ROOT/config/observation_rules.yaml" \
  >"$DEMO/memory_node.log" 2>&1 &
NODE_PID=$!
trap 'kill -TERM "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true' EXIT

# The simulated controller's ERROR records go to /rosout (that is the evidence) but not to
# this terminal, where they would read as the demo failing.
echo "[demo] the robot's error logs go to /rosout for memory_node, not to this terminal"
demo_robot --seconds "$SECONDS_TO_RUN" --ros-args --disable-stdout-logs

if ! kill -0 "$NODE_PID" 2>/dev/null; then
  echo "[demo] memory_node stopped early; the end of $DEMO/memory_node.log:" >&2
  tail -n 30 "$DEMO/memory_node.log" >&2
  exit 1
fi
kill -TERM "$NODE_PID"
wait "$NODE_PID" || true
trap - EXIT
echo
echo "[demo] what memory_node did:"
grep -E 'dream at' "$DEMO/memory_node.log" \
  | sed 's/^\[INFO\] \[[0-9.]*\] \[robot_memory\]: /  /' || true
echo
echo "[demo] $SHOWN:"
cat "$DEMO/robot-memory.md"
echo
echo "[demo] try: robot-memory show --file $SHOWN   (after: source scripts/env.sh)"
