# Copyright 2026 robot_memory maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The launch file, shown with real processes: what `ros2 launch` would start, started here.

``launch`` and ``launch_ros`` cannot be installed on this machine, so the launch file is not
run; what launch_ros makes of it is well defined, though, and that is what runs here. The
installed launch file is read (its AST) for the package, executable, node name and
parameters it names, and each of those is then used: the installed
``lib/<package>/<executable>`` runs with ``--ros-args -r __node:=<name> -r
__ns:=/<namespace>``, ``--params-file`` the installed default config (the default of the
``params_file`` argument) and, when ``rrn`` or ``memory_file`` is given, a second
``--params-file`` holding them under ``/**: ros__parameters:`` (launch_ros writes a dict of
parameters to a temporary YAML file like that). With both arguments empty the launch file
passes no overrides and the default config applies: its empty ``memory_file`` means
``$CASTOR_ROBOT_MEMORY_FILE``, else ``~/.opencastor/robot-memory.md``, so HOME is a
directory of the test's own and nothing touches the real home.

The console: the launch file's own rule (its ``console_options`` function, compiled from
the installed file) decides, from the ``color`` argument and whether launch's output is a
terminal, ``emulate_tty`` and the environment; ``emulate_tty`` runs the node on a
pseudo-terminal here as launch does, and the node's output goes to a log file.
"""

import ast
import datetime as dt
import os
import pathlib
import pty
import re
import signal
import stat
import subprocess
import threading

import pytest
from rcl_interfaces.srv import GetParameters
from rclpy.parameter import parameter_value_to_python
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.locations import default_db_path
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.settings_file import flat_parameters
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from robot_memory.testing.processes import end_process
from support.paths import REPO
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import wait_ready

LAUNCH_FILE = 'robot_memory_launch.py'
PACKAGE = 'robot_memory'
RRN = 'RRN-000000000301'
# Anything that would otherwise default to a place under HOME falls back to HOME itself.
UNSET = ('ROS_HOME', 'ROS_LOG_DIR', 'CASTOR_ROBOT_MEMORY_FILE', 'XDG_CACHE_HOME',
         'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME')


def _share_directories() -> list:
    """share/robot_memory as ament_index_python finds it, and by walking AMENT_PREFIX_PATH."""
    found = []
    try:
        from ament_index_python.packages import get_package_share_directory  # noqa: I100
    except ImportError:
        pass
    else:
        found.append(pathlib.Path(get_package_share_directory(PACKAGE)))
    for prefix in filter(None, os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)):
        share = pathlib.Path(prefix) / 'share' / PACKAGE
        if (share / 'package.xml').is_file():
            found.append(share)
            break
    return found


def _config_argument(call_node) -> str:
    """Return the argument name of ``LaunchConfiguration('<name>')``."""
    assert isinstance(call_node, ast.Call) and call_node.func.id == 'LaunchConfiguration', \
        ast.dump(call_node)
    return ast.literal_eval(call_node.args[0])


def _console_rule(tree, node):
    """How the launch file sets up the node's console: ``rule(color, terminal) -> options``."""
    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
    if 'emulate_tty' in keywords or None not in keywords:  # a fixed choice (launch: False)
        fixed = {'emulate_tty': ast.literal_eval(keywords.get('emulate_tty',
                                                              ast.Constant(False))),
                 'additional_env': {}}
        return lambda color, terminal: fixed
    # **console_options(LaunchConfiguration('color').perform(context), sys.stdout.isatty())
    starred = keywords[None]
    assert ast.unparse(starred.args[1]) == 'sys.stdout.isatty()', ast.unparse(starred)
    assert _config_argument(starred.args[0].func.value) == 'color', ast.unparse(starred)
    [function] = [item for item in tree.body if isinstance(item, ast.FunctionDef)
                  and item.name == starred.func.id]
    namespace = {}
    exec(compile(ast.Module(body=[function], type_ignores=[]), 'launch', 'exec'), namespace)
    return namespace[function.name]


def launch_facts(path: pathlib.Path) -> dict:
    """Return what the launch file at ``path`` tells launch_ros to run, read from its AST."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    [node] = [item for item in calls if getattr(item.func, 'id', '') == 'Node']
    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
    facts = {name: ast.literal_eval(keywords[name]) for name in ('package', 'executable', 'name')}
    facts['namespace'] = _config_argument(keywords['namespace'])
    facts['console'] = _console_rule(tree, node)
    parameters = keywords['parameters']
    assert isinstance(parameters, ast.List) and len(parameters.elts) == 2, ast.dump(parameters)
    facts['params_argument'] = _config_argument(parameters.elts[0])
    overrides = parameters.elts[1].id
    # for name in (...): value = LaunchConfiguration(name).perform(...); if value: overrides[..]
    [loop] = [item for item in ast.walk(tree) if isinstance(item, ast.For)
              and any(isinstance(target, ast.Subscript) and target.value.id == overrides
                      for assign in ast.walk(item) if isinstance(assign, ast.Assign)
                      for target in assign.targets)]
    facts['overrides'] = ast.literal_eval(loop.iter)
    facts['only_non_empty'] = any(
        isinstance(item, ast.If) and isinstance(item.test, ast.Name) and any(
            isinstance(assign, ast.Assign) and isinstance(assign.targets[0], ast.Subscript)
            for assign in item.body) for item in loop.body)
    # DeclareLaunchArgument('params_file', default_value=X), X = os.path.join(
    #     get_package_share_directory('<package>'), '<dir>', '<file>')
    declared = {ast.literal_eval(item.args[0]): {keyword.arg: keyword.value
                                                 for keyword in item.keywords}
                for item in calls if getattr(item.func, 'id', '') == 'DeclareLaunchArgument'}
    facts['arguments'] = list(declared)
    default = declared[facts['params_argument']]['default_value']
    [assign] = [item for item in ast.walk(tree) if isinstance(item, ast.Assign)
                and getattr(item.targets[0], 'id', None) == default.id]
    join = assign.value
    assert ast.unparse(join.func) == 'os.path.join', ast.unparse(join)
    assert join.args[0].func.id == 'get_package_share_directory', ast.unparse(join)
    facts['default_params'] = (ast.literal_eval(join.args[0].args[0]),
                               *[ast.literal_eval(part) for part in join.args[1:]])
    facts['empty_defaults'] = {name: ast.literal_eval(declared[name]['default_value'])
                               for name in (facts['namespace'], *facts['overrides'])}
    return facts


@pytest.fixture(scope='module')
def installed():
    """(share directory, prefix, facts of the installed launch file)."""
    shares = _share_directories()
    assert shares, 'share/robot_memory is on no AMENT_PREFIX_PATH: source scripts/env.sh'
    share = shares[0]
    assert all(other.resolve() == share.resolve() for other in shares), shares
    return share, share.parents[1], launch_facts(share / 'launch' / LAUNCH_FILE)


class LaunchedNode:
    """The process launch_ros would start for the launch file; stop() ends it by PID."""

    def __init__(self, installed, tmp_path, namespace, home, overrides=None, env=None,
                 color='auto', terminal=False):
        share, prefix, facts = installed
        package, *parts = facts['default_params']
        assert package == facts['package'] == PACKAGE
        self.executable = prefix / 'lib' / facts['package'] / facts['executable']
        self.default_params = share.parent / package / pathlib.Path(*parts)
        self.namespace = namespace
        self.name = facts['name']
        command = [str(self.executable), '--ros-args', '-r', f'__node:={self.name}',
                   '-r', f'__ns:=/{namespace}', '--params-file', str(self.default_params)]
        self.overrides = {name: value for name, value in (overrides or {}).items()
                          if value or not facts['only_non_empty']}
        assert set(self.overrides) <= set(facts['overrides']), self.overrides
        if self.overrides:
            # launch_ros: a dict of parameters becomes a temporary YAML file like this one.
            params = tmp_path / f'{namespace}-launch-params.yaml'
            params.write_text(yaml.safe_dump({'/**': {'ros__parameters': self.overrides}}))
            command += ['--params-file', str(params)]
        self.command = command
        self.env = {name: value for name, value in os.environ.items() if name not in UNSET}
        self.env.update(env or {}, HOME=str(home))
        self.env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        console = facts['console'](color, terminal)
        self.env.update(console['additional_env'])
        self.emulate_tty = console['emulate_tty']
        self.log_path = tmp_path / f'{namespace}-node.log'
        self.cwd = tmp_path
        self.process = None

    @property
    def prefix(self) -> str:
        """Return the node's fully qualified name."""
        return f'/{self.namespace}/{self.name}'

    def start(self) -> 'LaunchedNode':
        self._log = open(self.log_path, 'wb')
        self._copier = None
        if not self.emulate_tty:
            self.process = subprocess.Popen(self.command, stdout=self._log,
                                            stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd)
            return self
        # emulate_tty: launch reads the node's output from a pseudo-terminal.
        leader, follower = pty.openpty()
        self.process = subprocess.Popen(self.command, stdout=follower, stderr=follower,
                                        env=self.env, cwd=self.cwd)
        os.close(follower)

        def copy():
            while True:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the node closed the terminal
                    data = b''
                if not data:
                    os.close(leader)
                    return
                self._log.write(data)
                self._log.flush()

        self._copier = threading.Thread(target=copy, daemon=True)
        self._copier.start()
        return self

    def stop(self) -> int:
        """SIGINT, as launch sends at shutdown; the exit code (SIGKILL if it hangs)."""
        end_process(self.process, signal.SIGINT, 20)
        if self._copier is not None:
            self._copier.join(10)
        self._log.close()
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors='replace') if self.log_path.exists() else ''


def _set(config) -> dict:
    """Return the values of ``config`` a node reports: an empty list is declared not set (None)."""
    return {name: None if value == [] else value for name, value in config.items()}


def _parameters(probe, node, names) -> dict:
    """Return the node's values of parameters ``names`` (~/get_parameters)."""
    reply = call(probe, GetParameters, f'{node.prefix}/get_parameters',
                 GetParameters.Request(names=list(names)))
    assert len(reply.values) == len(names), 'a parameter is not declared or not set'
    return {name: parameter_value_to_python(value) for name, value in zip(names, reply.values)}


def _come_up_and_dream(probe, node, rrn) -> dict:
    """Check the node is up under its name, serves ~/get_context, reports ``rrn``; dream."""
    wait_ready(probe, node)
    assert (node.name, f'/{node.namespace}') in probe.get_node_names_and_namespaces()
    context = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
    assert context.success, context.message
    status = health(probe, 'memory file', timeout=10.0, where=rrn)
    dream = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
    assert dream.success, dream.message
    return status


def _written(path, rrn):
    assert wait_for(path.is_file, 5.0), f'{path} was not written'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, oct(path.stat().st_mode)
    assert default_db_path(path).is_file(), 'the evidence database lies beside it, named after it'
    document = MemoryFile(path).load(dt.datetime.now(UTC)).document
    assert document.rrn == rrn


def test_the_launch_file_names_an_installed_executable_node_and_config(installed):
    share, prefix, facts = installed
    assert (share / 'launch' / LAUNCH_FILE).read_text() == \
        (REPO / 'launch' / LAUNCH_FILE).read_text(), 'the installed launch file is stale'
    assert facts['package'] == PACKAGE and facts['executable'] == 'memory_node'
    assert facts['name'] == 'robot_memory' and facts['namespace'] == 'namespace'
    assert facts['params_argument'] == 'params_file'
    assert facts['overrides'] == ('rrn', 'memory_file') and facts['only_non_empty']
    assert facts['arguments'] == ['namespace', 'rrn', 'memory_file', 'params_file', 'color']
    assert facts['empty_defaults'] == {'namespace': '', 'rrn': '', 'memory_file': ''}
    assert facts['default_params'] == (PACKAGE, 'config', 'robot_memory.yaml')
    assert (share / 'config' / 'robot_memory.yaml').read_text() == \
        (REPO / 'config' / 'robot_memory.yaml').read_text(), 'the installed config is stale'
    executable = prefix / 'lib' / facts['package'] / facts['executable']
    assert executable.is_file() and os.access(executable, os.X_OK), executable


def test_rrn_and_memory_file_arguments_override_the_default_config(installed, probe, tmp_path):
    memory = tmp_path / 'robot a' / 'robot-memory.md'  # a path with a space in it
    node = LaunchedNode(installed, tmp_path, 'launched_a', tmp_path / 'home',
                        overrides={'rrn': RRN, 'memory_file': str(memory)}).start()
    try:
        status = _come_up_and_dream(probe, node, RRN)
        assert status['path'] == str(memory), status
        config = flat_parameters(
            yaml.safe_load(node.default_params.read_text())['/**']['ros__parameters'])
        values = _parameters(probe, node, sorted(_set(config)))
    finally:
        assert node.stop() == 0, node.log()
    _written(memory, RRN)
    assert values == {**_set(config), 'rrn': RRN, 'memory_file': str(memory)}
    assert config['rrn'] != RRN and config['dream_time'], 'the overrides must change something'


@pytest.mark.parametrize('where', ['home', 'environment'])
def test_empty_arguments_leave_the_default_config_in_force(installed, probe, tmp_path, where):
    home = tmp_path / 'home'
    home.mkdir()
    chosen = tmp_path / 'elsewhere' / 'memory.md'
    env = {'CASTOR_ROBOT_MEMORY_FILE': str(chosen)} if where == 'environment' else {}
    node = LaunchedNode(installed, tmp_path, f'launched_{where}', home,
                        overrides={'rrn': '', 'memory_file': ''}, env=env)
    assert node.command.count('--params-file') == 1, 'empty arguments pass no overrides'
    config = flat_parameters(
        yaml.safe_load(node.default_params.read_text())['/**']['ros__parameters'])
    assert config['memory_file'] == '', 'this test expects the config to leave it to HOME'
    expected = chosen if where == 'environment' else home / '.opencastor' / 'robot-memory.md'
    node.start()
    try:
        status = _come_up_and_dream(probe, node, config['rrn'])
        assert status['path'] == str(expected), status
        values = _parameters(probe, node, sorted(_set(config)))
    finally:
        assert node.stop() == 0, node.log()
    assert values == _set(config)
    _written(expected, config['rrn'])
    if where == 'environment':
        assert not (home / '.opencastor').exists(), 'the environment variable comes first'
    assert sorted(os.listdir(home)) == (['.ros'] if where == 'environment'
                                        else ['.opencastor', '.ros']), os.listdir(home)


@pytest.mark.parametrize('color, terminal, colored', [
    ('auto', False, False), ('auto', True, True), ('always', False, True),
    ('never', True, False)])
def test_colour_only_on_a_terminal_or_when_asked(installed, color, terminal, colored):
    console = installed[2]['console'](color, terminal)
    assert console['emulate_tty'] is colored
    assert console['additional_env']['RCUTILS_COLORIZED_OUTPUT'] == ('1' if colored else '0')


def test_an_unknown_colour_choice_is_refused(installed):
    with pytest.raises(ValueError, match="'auto', 'always' or 'never'"):
        installed[2]['console']('yes', True)


@pytest.mark.parametrize('terminal', [False, True], ids=['to a file', 'on a terminal'])
def test_launch_output_is_plain_in_a_file_and_the_stop_is_logged(installed, probe, tmp_path,
                                                                 terminal):
    """`ros2 launch ... > launch.log`: launch's output is no terminal, so no escape codes."""
    home = tmp_path / 'home'
    namespace = 'launched_tty' if terminal else 'launched_file'
    node = LaunchedNode(installed, tmp_path, namespace, home, terminal=terminal,
                        env={'RCUTILS_COLORIZED_OUTPUT': '1'}).start()  # the caller's wish
    try:
        wait_ready(probe, node)
        # Its services answer a moment before it logs that it is ready: a stop before that
        # line would end a start-up, not a running node.
        assert wait_for(lambda: 'robot_memory ready' in node.log(), 20.0), node.log()
    finally:
        assert node.stop() == 0, node.log()
    log = node.log()
    if terminal:
        assert '\x1b[' in log, 'on a terminal the log lines are coloured'
        return
    assert '\x1b' not in log, repr(log[:400])
    stopped = [line for line in log.splitlines() if 'robot_memory stopped:' in line]
    assert len(stopped) == 1, log
    database = home / '.opencastor' / 'robot-memory.db'
    assert re.fullmatch(r'\[INFO\] \[[0-9.]+\] \[[a-z_/.]+\]: robot_memory stopped: flushed \d+ '
                        rf'observations to {re.escape(str(database))}; since start \d+ stored, '
                        r'0 dropped \(backlog full\)( \(stop signals received: SIGINT[^)]*\))?',
                        stopped[0]), stopped[0]
