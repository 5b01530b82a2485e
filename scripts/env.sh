# shellcheck shell=bash
# Source me (after scripts/setup.sh):   source scripts/env.sh
# For ROS 2 Jazzy:   ROBOT_MEMORY_DISTRO=jazzy source scripts/env.sh   (after the same
# variable given to setup.sh; scripts/distro.sh says which trees each distribution uses)
#
# Activates .venv, points ament/cmake at the ROS 2 it was built against,
# sources the colcon install tree (generated robot_memory.msg / .srv, the
# hand-written robot_memory package, `robot-memory` and `memory_node` on PATH)
# and keeps DDS discovery on this host unless told otherwise.
#
# Note: install/ holds a COPY of robot_memory/; re-run scripts/setup.sh after
# editing sources (scripts/test.sh does that for you; it takes ~1-3 s).

_rm_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$_rm_root/scripts/distro.sh"
if ! _rm_select_distro "$_rm_root"; then
  unset -f _rm_select_distro
  unset _rm_root _rm_distro _rm_venv _rm_build _rm_install _rm_colcon_log _rm_ros_reqs
  return 1 2>/dev/null || exit 1
fi
unset -f _rm_select_distro
if [ ! -x "$_rm_venv/bin/python" ] || [ ! -f "$_rm_install/local_setup.bash" ]; then
  echo "robot_memory: ROS 2 $_rm_distro is not set up here: run" \
       "'${ROBOT_MEMORY_DISTRO:+ROBOT_MEMORY_DISTRO=$ROBOT_MEMORY_DISTRO }bash scripts/setup.sh' first" >&2
  unset _rm_root _rm_distro _rm_venv _rm_build _rm_install _rm_colcon_log _rm_ros_reqs
  return 1 2>/dev/null || exit 1
fi

# The ROS setup scripts read unset variables: relax nounset while sourcing.
case $- in *u*) _rm_nounset=1; set +u ;; *) _rm_nounset=0 ;; esac

_rm_mode="$(sed -n 1p "$_rm_venv/.robot_memory_mode" 2>/dev/null || echo wheels)"
_rm_built_for="$(sed -n 2p "$_rm_venv/.robot_memory_mode" 2>/dev/null || true)"
if [ "$_rm_mode" = system ] && [ -z "${ROS_DISTRO:-}" ] && [ -n "$_rm_built_for" ] \
   && [ -f "/opt/ros/$_rm_built_for/setup.bash" ]; then
  # shellcheck disable=SC1090
  source "/opt/ros/$_rm_built_for/setup.bash"
fi

# shellcheck disable=SC1091
VIRTUAL_ENV_DISABLE_PROMPT="${VIRTUAL_ENV_DISABLE_PROMPT:-1}" source "$_rm_venv/bin/activate"

if [ "$_rm_mode" = wheels ] && [ -z "${_ROS_WHEELS_BOOTSTRAP_COMPLETE:-}" ]; then
  # Do once here what the ros-wheels-bootstrapper .pth hook otherwise does at every Python
  # start (put the wheels' libraries on LD_LIBRARY_PATH, then re-execute Python): without
  # this every robot-memory call starts Python twice (bench/bench_cli.py, python_start).
  _rm_libs="$_rm_venv/lib"
  for _rm_dir in "$_rm_venv"/lib/python3*/site-packages/ros_*.libs; do
    if [ -d "$_rm_dir" ]; then _rm_libs="$_rm_libs:$_rm_dir"; fi
  done
  export LD_LIBRARY_PATH="$_rm_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1
  unset _rm_libs _rm_dir
fi

if [ "$_rm_mode" = wheels ]; then
  # The venv is the ament prefix of the ROS 2 wheels.
  case ":${AMENT_PREFIX_PATH:-}:" in *":$_rm_venv:"*) ;;
    *) export AMENT_PREFIX_PATH="$_rm_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;; esac
  case ":${CMAKE_PREFIX_PATH:-}:" in *":$_rm_venv:"*) ;;
    *) export CMAKE_PREFIX_PATH="$_rm_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;; esac
fi

# shellcheck disable=SC1091
source "$_rm_install/local_setup.bash"

export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
# This shell now uses this distribution: setup.sh and test.sh run from it keep to it.
export ROBOT_MEMORY_DISTRO="$_rm_distro" ROBOT_MEMORY_VENV="$_rm_venv"

[ "$_rm_nounset" = 1 ] && set -u
unset _rm_root _rm_mode _rm_built_for _rm_nounset _rm_distro _rm_venv _rm_build _rm_install \
  _rm_colcon_log _rm_ros_reqs
true
