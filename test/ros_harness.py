"""Helpers for integration tests: memory_node as a real subprocess, an rclpy probe node.

The node under test is the installed ``memory_node`` executable (on PATH after
``source scripts/env.sh``, which scripts/test.sh does), started in its own process with a
parameters file, on the run's ROS_DOMAIN_ID with discovery kept on this host.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import time

import yaml

NODE_EXECUTABLE = shutil.which('memory_node')


class NodeProcess:
    """memory_node running in a subprocess under ``namespace``; stop() ends it by PID."""

    def __init__(self, tmp_path: pathlib.Path, namespace: str, remaps=(), **parameters):
        self.tmp_path = pathlib.Path(tmp_path)
        self.namespace = namespace
        self.remaps = [arg for remap in remaps for arg in ('-r', remap)]  # e.g. '/a:=/b'
        self.memory_file = self.tmp_path / 'robot-memory.md'
        values = {'memory_file': str(self.memory_file), 'rrn': 'RRN-000000000042',
                  'dream_time': ''}
        values.update(parameters)
        self.params_file = self.tmp_path / f'{namespace}-params.yaml'
        self.params_file.write_text(yaml.safe_dump({'/**': {'ros__parameters': values}}))
        self.log_path = self.tmp_path / f'{namespace}-node.log'
        self.process = None

    @property
    def prefix(self) -> str:
        """The node's fully qualified name, e.g. /t1/robot_memory."""
        return f'/{self.namespace}/robot_memory'

    def start(self) -> 'NodeProcess':
        """Start the node (does not wait for its services)."""
        assert NODE_EXECUTABLE, 'memory_node is not on PATH: run the tests with scripts/test.sh'
        self._log = open(self.log_path, 'wb')
        env = dict(os.environ)
        env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        self.process = subprocess.Popen(
            [NODE_EXECUTABLE, '--ros-args', '-r', f'__ns:=/{self.namespace}', *self.remaps,
             '--params-file', str(self.params_file)],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp_path)
        return self

    def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait for the process to end by itself; its exit code."""
        code = self.process.wait(timeout)
        self._log.close()
        return code

    def stop(self, sig=signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` and wait for the exit code (SIGKILL if it does not end)."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(5)
        self._log.close()
        return code

    def log(self) -> str:
        """What the node printed so far."""
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
