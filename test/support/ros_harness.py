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
Helpers for integration tests: memory_node as a real subprocess, an rclpy probe node.

The node under test is the installed ``memory_node`` executable (on PATH after
``source scripts/env.sh``, which scripts/test.sh does), started in its own process with a
parameters file, on the run's ROS_DOMAIN_ID with discovery kept on this host.
"""

import os
import pathlib
import select
import shutil
import signal
import subprocess
import tempfile
import time

import yaml

from robot_memory.testing.processes import end_process

NODE_EXECUTABLE = shutil.which('memory_node')
# Node parameters for a node whose memory time runs fast (30 memory-minutes a second).
FAST = {'time_scale': 1800.0, 'dream.initial_max': 0.9, 'flush_period_s': 0.1}
_STARTED = []  # every NodeProcess started in this test session, in order


def started_count() -> int:
    """How many node processes this session has started so far."""
    return len(_STARTED)


def stop_started_since(mark: int) -> list:
    """
    End every node started after ``mark`` that still runs; their namespaces.

    A test that fails between starting a node and stopping it must not leave the node
    running into the next tests, where it answers on their topics and services.
    """
    left = [node for node in _STARTED[mark:] if node.process.poll() is None]
    for node in left:
        node.stop(signal.SIGINT, timeout=10.0)  # SIGKILL only if it does not end
    return [node.namespace for node in left]


class NodeProcess:
    """memory_node running in a subprocess under ``namespace``; stop() ends it by PID."""

    def __init__(self, tmp_path: pathlib.Path, namespace: str, remaps=(), env=None,
                 **parameters):
        self.tmp_path = pathlib.Path(tmp_path)
        self.env = dict(env or {})  # extra environment of the node process
        self.namespace = namespace
        self.remaps = [arg for remap in remaps for arg in ('-r', remap)]  # e.g. '/a:=/b'
        self.memory_file = self.tmp_path / 'robot-memory.md'
        values = {'memory_file': str(self.memory_file), 'rrn': 'RRN-000000000042',
                  'dream_time': ''}
        values.update(parameters)
        self.rrn = values['rrn']  # the hardware_id of the node's own health statuses
        self.params_file = self.tmp_path / f'{namespace}-params.yaml'
        self.params_file.write_text(yaml.safe_dump({'/**': {'ros__parameters': values}}))
        self.starts = 0
        self.process = None
        self.wrapper: list = []  # a command the node runs under, e.g. setpriv dropping caps

    @property
    def prefix(self) -> str:
        """Return the node's fully qualified name, e.g. /t1/robot_memory."""
        return f'/{self.namespace}/robot_memory'

    def start(self, new_group: bool = False) -> 'NodeProcess':
        """Start the node (does not wait); ``new_group``: in a process group of its own."""
        assert NODE_EXECUTABLE, 'memory_node is not on PATH: run the tests with scripts/test.sh'
        # Each start logs into files of its own: its output, and rcl's file log in a
        # ROS_LOG_DIR of its own (never ~/.ros/log, shared by every run). A restart
        # no longer overwrites what the previous start printed.
        self.starts += 1
        self._log = open(self.log_path, 'wb')
        env = dict(os.environ)
        env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        env['ROS_LOG_DIR'] = str(self.ros_log_dir)
        env['PYTHONFAULTHANDLER'] = '1'  # a hung start shows where: see dump_stacks
        env.update(self.env)
        self.process = subprocess.Popen(
            [*self.wrapper, NODE_EXECUTABLE, '--ros-args', '-r', f'__ns:=/{self.namespace}',
             *self.remaps,
             '--params-file', str(self.params_file)],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp_path,
            start_new_session=new_group)
        _STARTED.append(self)
        return self

    @property
    def log_path(self) -> pathlib.Path:
        """Return what the latest start printed (standard output and error)."""
        return self.tmp_path / f'{self.namespace}-node-{max(self.starts, 1)}.log'

    @property
    def ros_log_dir(self) -> pathlib.Path:
        """Return the ROS_LOG_DIR of the latest start."""
        return self.tmp_path / f'{self.namespace}-ros-log-{max(self.starts, 1)}'

    def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait for the process to end by itself; its exit code."""
        code = self.process.wait(timeout)
        self._log.close()
        return code

    def stop(self, sig=signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` and wait for the exit code (SIGKILL if it does not end)."""
        if self.process is None:
            return 0
        code = end_process(self.process, sig, timeout)
        self._log.close()
        return code

    def log(self) -> str:
        """Return what the node printed so far."""
        return self.log_path.read_text(errors='replace') if self.log_path.exists() else ''


def wait_for(condition, timeout: float = 10.0, step: float = 0.05, spin=None):
    """Poll ``condition()`` (spinning ``spin(step)`` between tries) until true or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if spin is not None:
            spin(step)
        else:
            time.sleep(step)
    return bool(condition())


# ------------------------------------------------------------------ load and power-loss helpers

def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` in bytes (0 once it has gone)."""
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as handle:
            for line in handle:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return 0


FLOOD_CODE = 'import sys; from support import ros_harness; ros_harness.flood_main(sys.argv[1:])'


def start_flood(rate: float, seconds: float, prefix: str = 'flood', statuses: int = 1,
                sources: int = 50, rotate: int = 0, topic: str = '/diagnostics',
                stderr=None) -> subprocess.Popen:
    """
    Return a separate process publishing DiagnosticArrays (see :func:`flood_main`).

    It prints ``ready`` once a subscriber is matched (see :func:`flood_ready`), then a JSON
    line with what it sent. Its standard error goes to ``stderr`` (by default a temporary
    file that :func:`flood_ready` shows when the flood hangs: an undrained pipe would stop a
    long-lived flood once full). End it with :func:`stop_flood`.
    """
    env = dict(os.environ)
    here = str(pathlib.Path(__file__).resolve().parents[1])  # test/, for the support package
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [here, env.get('PYTHONPATH')]))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env['PYTHONFAULTHANDLER'] = '1'
    import sys  # noqa: I100 - only the flood needs it
    errors = tempfile.TemporaryFile() if stderr is None else None
    process = subprocess.Popen(
        [sys.executable, '-P', '-c', FLOOD_CODE, '--rate', str(rate), '--seconds', str(seconds),
         '--prefix', prefix, '--statuses', str(statuses), '--sources', str(sources),
         '--rotate', str(rotate), '--topic', topic],
        stdout=subprocess.PIPE, stderr=errors if stderr is None else stderr, env=env, text=True)
    process.errors_file = errors
    return process


def flood_ready(flood: subprocess.Popen, timeout: float = 90.0) -> None:
    """
    Wait for the flood's ``ready`` line; fail with where it hangs if it does not come.

    The flood prints it at most 30.5 s after it started, matched or not, so a flood silent
    for ``timeout`` hangs in its start-up: its Python stacks are dumped (faulthandler, on
    SIGABRT) into the failure message.
    """
    if not select.select([flood.stdout], [], [], timeout)[0]:
        flood.send_signal(signal.SIGABRT)
        flood.wait(10.0)
        shown = ''
        if flood.errors_file is not None:
            flood.errors_file.seek(0)
            shown = flood.errors_file.read().decode(errors='replace')[-4000:]
        raise AssertionError(f'the flood did not start within {timeout} s; its stacks:\n{shown}')
    line = flood.stdout.readline().strip()
    assert line == 'ready', f'the flood did not start: {line!r}'


def clean_dead_shm() -> bool:
    """
    Remove the shared-memory ports and segments of Fast DDS processes that were killed.

    Fast DDS's own ``fastdds shm clean`` (its Clean class, called in this process: the
    command's wrapper wants psutil): only files whose owner is gone, so a port mutex a
    SIGKILLed process held cannot stall the next process that opens the same port. False
    where the tool is not installed beside this Python or on PATH.
    """
    import contextlib  # noqa: I100 - only here
    import inspect
    import io
    import sys
    homes = [pathlib.Path(sys.prefix) / 'tools' / 'fastdds']
    if shutil.which('fastdds'):
        homes.append(pathlib.Path(shutil.which('fastdds')).resolve().parent.parent / 'tools'
                     / 'fastdds')
    home = next((path for path in homes if (path / 'shm' / 'clean.py').is_file()), None)
    if home is None:
        return False
    sys.path.insert(0, str(home))
    try:
        from shm.clean import Clean
        cleaner = Clean()
        with contextlib.redirect_stdout(io.StringIO()):
            # Fast DDS 3 (Kilted) asks whether to force data-sharing segments too; 2.x does not.
            cleaner.run(*[False] * len(inspect.signature(cleaner.run).parameters))
    finally:
        sys.path.remove(str(home))
    return True


def stop_flood(flood: subprocess.Popen, timeout: float = 30.0) -> str:
    """End the flood in order (SIGTERM; SIGKILL only if it does not end); its output."""
    if flood.stdout.closed:  # stopped already, or read to its end by communicate()
        return ''
    if flood.poll() is None:
        flood.terminate()
    try:
        out, _ = flood.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        flood.kill()
        out, _ = flood.communicate()
        clean_dead_shm()
    if flood.errors_file is not None:
        flood.errors_file.close()
    return out or ''


def flood_main(argv) -> None:
    """
    Publish WARN DiagnosticArrays at ``--rate`` arrays/s for ``--seconds``.

    Each array holds ``--statuses`` statuses of hardware ``<prefix>-<k>``, ``k`` cycling
    over ``--sources`` ids; with ``--rotate N`` the window of ids moves on by one every N
    arrays (new signatures keep coming, old ones stop). Prints ``ready`` when a subscriber
    is matched and, at the end, ``{"arrays": .., "statuses": .., "refused_by_writer": ..,
    "all_acked": .., "seconds": ..}``, once the writer has delivered what it held (or 20 s
    passed: ``all_acked`` false). Arrays the writer refused (its history full of
    unacknowledged samples) were never sent and are not counted in ``arrays``.
    Publishes in bursts every 5 ms so the rate holds on a busy machine; a rate beyond what
    one process can publish means as fast as it can.
    """
    import argparse
    import json

    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from diagnostic_msgs.msg import DiagnosticStatus
    from diagnostic_msgs.msg import KeyValue
    from rclpy.duration import Duration
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions

    parser = argparse.ArgumentParser()
    parser.add_argument('--rate', type=float, required=True)
    parser.add_argument('--seconds', type=float, required=True)
    parser.add_argument('--prefix', default='flood')
    parser.add_argument('--statuses', type=int, default=1)
    parser.add_argument('--sources', type=int, default=50)
    parser.add_argument('--rotate', type=int, default=0)
    parser.add_argument('--topic', default='/diagnostics')
    args = parser.parse_args(argv)
    # SIGTERM (stop_flood) ends the flood in order: a publisher killed in the middle of
    # a write can leave Fast DDS's shared-memory port of its reader locked, and the next
    # processes of the run may hang in their start-up on it (eProsima/Fast-DDS#1144, #5469).
    stopping = []
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    node = rclpy.create_node(f'flood_{os.getpid()}')
    publisher = node.create_publisher(
        DiagnosticArray, args.topic,
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    deadline = time.monotonic() + 30.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline \
            and not stopping:
        rclpy.spin_once(node, timeout_sec=0.05)
    # Matching is two-sided: our writer has found the reader, the reader may not have
    # found our writer yet, and what we send before it has is not delivered to it (nor
    # counted as lost by it: it never knew the samples were meant for it). Let it settle.
    settle = time.monotonic() + 0.5
    while time.monotonic() < settle:
        rclpy.spin_once(node, timeout_sec=0.05)
    print('ready', flush=True)
    parent = os.getppid()
    arrays = attempts = refused = 0
    started = time.monotonic()
    end = started + args.seconds
    level = bytes([1])
    while True:
        now = time.monotonic()
        if now >= end or stopping or os.getppid() != parent:  # done, stopped, test gone
            break
        due = min(int((now - started) * args.rate) + 1, attempts + 1000)
        while attempts < due:
            window = arrays // args.rotate if args.rotate else 0
            statuses = [
                DiagnosticStatus(level=level, name=f'{args.prefix}: sensor {index}',
                                 hardware_id=f'{args.prefix}-'
                                             f'{window + (arrays + index) % args.sources}',
                                 message=f'dropped {arrays % 97} frames',
                                 values=[KeyValue(key='frames', value=str(arrays))])
                for index in range(args.statuses)]
            try:
                publisher.publish(DiagnosticArray(status=statuses))
            except Exception as error:  # rclpy's RCLError lives in a private module
                # A reliable writer whose history is full of samples no reader has
                # acknowledged (a frozen or overrun reader) refuses after its blocking
                # time. Such an array never left this process: count it apart, not as sent.
                if 'Failed to publish' not in str(error):
                    raise
                refused += 1
            else:
                arrays += 1
            attempts += 1
        time.sleep(0.005)
    elapsed = time.monotonic() - started
    # Let the reliable writer deliver what it still holds before this process goes: a reader
    # that never sees the last sequence numbers cannot count what was lost before them.
    acked = not stopping and publisher.wait_for_all_acked(Duration(seconds=20))
    print(json.dumps({'arrays': arrays, 'statuses': arrays * args.statuses,
                      'refused_by_writer': refused, 'all_acked': acked,
                      'seconds': round(elapsed, 3)}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
