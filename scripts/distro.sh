# shellcheck shell=bash
# Sourced by setup.sh, env.sh and test.sh: which ROS 2 distribution to build and test
# against, and where its trees lie in the checkout, so that Kilted and Jazzy coexist.
#
#   ROBOT_MEMORY_DISTRO=kilted|jazzy   (default: $ROS_DISTRO when a ROS 2 is sourced,
#                                       else kilted)
#
#   distribution  venv          colcon build / install   ROS 2 wheels (no ROS installed)
#   kilted        .venv         build/ install/          scripts/ros-requirements.txt
#   jazzy         .venv-jazzy   build-jazzy/ install-jazzy/  scripts/ros-requirements-jazzy.txt
#
# (any other sourced distribution gets the same -<distro> suffix).  Sets _rm_distro,
# _rm_venv, _rm_build, _rm_install, _rm_colcon_log, _rm_ros_reqs (absolute paths under
# $1, the checkout) or prints why not and returns 1.

_rm_select_distro() {
  local root=$1 suffix=''
  _rm_distro="${ROBOT_MEMORY_DISTRO:-${ROS_DISTRO:-kilted}}"
  if ! [[ "$_rm_distro" =~ ^[a-z]+$ ]]; then
    echo "robot_memory: ROBOT_MEMORY_DISTRO must be a ROS 2 distribution name such as" \
         "kilted or jazzy, not '$_rm_distro'" >&2
    return 1
  fi
  if [ -n "${ROS_DISTRO:-}" ] && [ -n "${ROBOT_MEMORY_DISTRO:-}" ] \
     && [ "$ROS_DISTRO" != "$ROBOT_MEMORY_DISTRO" ] && command -v ros2 >/dev/null 2>&1; then
    echo "robot_memory: ROBOT_MEMORY_DISTRO=$ROBOT_MEMORY_DISTRO but ROS 2 $ROS_DISTRO is" \
         "sourced in this shell: use a shell without it, or ROBOT_MEMORY_DISTRO=$ROS_DISTRO" >&2
    return 1
  fi
  [ "$_rm_distro" = kilted ] || suffix="-$_rm_distro"
  _rm_venv="$root/.venv$suffix"
  # env.sh exports ROBOT_MEMORY_VENV: one shell, one distribution (their paths would mix).
  if [ -n "${ROBOT_MEMORY_VENV:-}" ] && [ "$ROBOT_MEMORY_VENV" != "$_rm_venv" ]; then
    echo "robot_memory: this shell sourced scripts/env.sh for $ROBOT_MEMORY_VENV; for ROS 2" \
         "$_rm_distro ($_rm_venv) use a new shell" >&2
    return 1
  fi
  _rm_build="$root/build$suffix"
  _rm_install="$root/install$suffix"
  _rm_colcon_log="$root/log${suffix:+/$_rm_distro}"
  _rm_ros_reqs="$root/scripts/ros-requirements$suffix.txt"
}
