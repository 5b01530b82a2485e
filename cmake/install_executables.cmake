# Install script (see CMakeLists.txt): every file of bin/ becomes a command of
# <prefix>/<_rm_dest> that runs without a sourced setup file.
#
# An MCP client, a systemd unit or a desktop launcher starts a command with a minimal
# environment (no PYTHONPATH, often no PATH to the venv), so each installed command names
# its interpreter in its #! line and puts this install's Python packages first on
# sys.path itself, as setuptools does for the console scripts it installs.
#
# Inputs: _rm_source_dir (bin/), _rm_dest (lib/robot_memory or bin), _rm_python (the
# interpreter), _rm_python_dir (lib/pythonX.Y/site-packages, relative to the prefix),
# _rm_work (a scratch directory in the build tree).

set(_rm_site "${CMAKE_INSTALL_PREFIX}/${_rm_python_dir}")
string(LENGTH "#!${_rm_python}" _rm_shebang_length)
if(_rm_shebang_length GREATER 127 OR _rm_python MATCHES " ")
  # Linux reads at most 127 bytes of a #! line and splits it at spaces: start the
  # interpreter through sh instead (the same trampoline pip writes).
  set(_rm_head "#!/bin/sh\n'''exec' '${_rm_python}' \"$0\" \"$@\"\n' '''\n")
else()
  set(_rm_head "#!${_rm_python}\n")
endif()

file(GLOB _rm_scripts "${_rm_source_dir}/*")
file(MAKE_DIRECTORY "${_rm_work}/${_rm_dest}")
foreach(_rm_script IN LISTS _rm_scripts)
  get_filename_component(_rm_name "${_rm_script}" NAME)
  if(IS_DIRECTORY "${_rm_script}" OR _rm_name MATCHES "~$")
    continue()
  endif()
  file(READ "${_rm_script}" _rm_text)
  string(REGEX REPLACE "^#![^\n]*\n" "" _rm_body "${_rm_text}")
  file(WRITE "${_rm_work}/${_rm_dest}/${_rm_name}"
    "${_rm_head}"
    "# Installed from bin/${_rm_name}: this install's packages first, no setup file needed.\n"
    "import sys  # noqa: E402,I100\n"
    "if '${_rm_site}' not in sys.path:\n"
    "    sys.path.insert(0, '${_rm_site}')\n"
    "${_rm_body}")
  file(INSTALL "${_rm_work}/${_rm_dest}/${_rm_name}"
    DESTINATION "${CMAKE_INSTALL_PREFIX}/${_rm_dest}"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                     WORLD_READ WORLD_EXECUTE)
endforeach()
