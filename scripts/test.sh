#!/usr/bin/env bash
# Run the test suite:   ./scripts/test.sh [pytest args...]
#                  or:   ./scripts/test.sh test/test_foo.py[::test_bar] [pytest args...]
# (with test files or directories named, only those run; otherwise all of test/)
# Against ROS 2 Jazzy:   ROBOT_MEMORY_DISTRO=jazzy ./scripts/test.sh   (default: Kilted)
# Sets up / refreshes the environment (scripts/setup.sh, a few seconds when
# nothing changed), then runs pytest with the venv python against the colcon
# install tree.  Exit code is pytest's; "no tests collected" (5) is a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh --quiet

# shellcheck disable=SC1091
source scripts/env.sh

# A DDS domain of our own per run so concurrent runs never see each other
# (1..101: well below Fast DDS's 232 limit and its localhost port range).
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 101 + 1 ))}"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"

PY="$VIRTUAL_ENV/bin/python"  # the distribution's venv, activated by env.sh
# -P (Python >= 3.11): do not put the current directory first on sys.path, so
# `import robot_memory` resolves to the install tree (which also holds the
# generated robot_memory.msg / .srv), not to the bare source directory.
py_flags=()
if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then py_flags=(-P); fi

echo "[test] ROS 2 $ROBOT_MEMORY_DISTRO  ROS_DOMAIN_ID=$ROS_DOMAIN_ID  robot_memory from: $(cd /tmp && "$PY" -c 'import robot_memory, os; print(os.path.dirname(robot_memory.__file__))')"
# Named test paths (FILE, DIR or FILE::TEST) replace the default test/.
targets=(test/)
for arg in "$@"; do
  case "$arg" in -*) continue ;; esac
  if [ -e "${arg%%::*}" ]; then targets=(); break; fi
done
set +e
"$PY" "${py_flags[@]}" -m pytest "${targets[@]}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "[test] FAILED: pytest collected no tests" >&2
fi
exit "$rc"
