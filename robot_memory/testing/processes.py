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

"""Ending a child process that a test, a benchmark or a demo started: a signal, then SIGKILL."""

import signal
import subprocess

# After SIGKILL a process ends unless the kernel holds it (a disk that hangs): not for ever.
KILLED_WAIT_S = 10.0


def end_process(process: subprocess.Popen, sig: int = signal.SIGTERM,
                timeout_s: float = 20.0) -> int:
    """
    Send ``sig`` to ``process`` unless it has ended, wait ``timeout_s``, else SIGKILL it.

    Return its exit code (negative: the signal that ended it). A child that ignores ``sig``
    or hangs in its shutdown is never waited for without end.
    """
    if process.poll() is None:
        process.send_signal(sig)
        try:
            return process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(KILLED_WAIT_S)
