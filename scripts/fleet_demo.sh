#!/usr/bin/env bash
# A fleet to try in one command: a fleet store (PostgreSQL when installed), two sites' Zenoh
# routers and a handful of simulated robots with different faults; prints the fleet report
# and the fleet's lessons, then stops everything it started (scripts/fleet_demo.py).
#
#   bash scripts/fleet_demo.sh [--short] [--sqlite] [--dir DIR]
#
# --dir DIR keeps the files (memory files, keys, logs, the database) in DIR; without it they
# go to a temporary directory removed at the end. Needs no ROS: only the fleet extra, which
# scripts/setup.sh installs.
#   ROBOT_MEMORY_SKIP_SETUP=1  do not run scripts/setup.sh (it has run already, e.g. in a test)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${ROBOT_MEMORY_SKIP_SETUP:-0}" != 1 ]; then
  if [ -z "${PIP_CACHE_DIR:-}${PIP_NO_CACHE_DIR:-}" ]; then export PIP_NO_CACHE_DIR=1; fi
  bash "$ROOT/scripts/setup.sh" --quiet
fi
# shellcheck disable=SC1091
source "$ROOT/scripts/env.sh"
exec python "$ROOT/scripts/fleet_demo.py" "$@"
