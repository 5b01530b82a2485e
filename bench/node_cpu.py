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
The ``cpu`` figures of bench/bench_node.py: memory_node's share of a core at real rates.

A robot process publishes ``/diagnostics`` at 1 Hz with 30 statuses made from the profiles
in ``bench/profiles/`` (three constantly ERROR, the rest OK, values that move as a
robot's do) and a trickle of ``/rosout`` (one record every 2 s, one in five an ERROR);
then each profile's own status set at 1 Hz (its constant conditions in error), one
window each (``cpu_profile``, one line a profile).
memory_node and a bare rclpy subscriber (``rclpy.spin`` over the same two topics with the
node's QoS; it only counts) take it at the same time. Each process's CPU time is
utime + stime of ``/proc/PID/stat`` over a window after a warm-up; ``wakeups_per_s`` (and
``baseline_wakeups_per_s``, the bare subscriber's) counts its threads' voluntary context
switches a second over the same window: on a quiet machine a thread that wakes for a
millisecond's work costs several times what the same work costs hot, so the share of an
idle node is mostly how often its threads wake.
"""

import os
import pathlib
import statistics
import time

from node_children import generate
from node_children import RATE_HZ
from node_children import robot_statuses
from node_children import STATUSES

GOAL_SHARE = 1.0  # % of a core at 1 Hz x 30 statuses (issue 28)
ENTRIES = 300  # a memory file after months on a robot (the latency figures use 10,000)
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid: int) -> float:
    """Return utime + stime of ``pid`` in seconds (/proc/PID/stat)."""
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wakeups(pid: int) -> int:
    """
    Return how often the threads of ``pid`` have gone to sleep and woken (voluntary switches).

    Each wake-up of a thread that sleeps most of the time costs far more CPU on a quiet
    machine than the same code run hot, so this count explains much of an idle share.
    """
    total = 0
    for task in pathlib.Path(f'/proc/{pid}/task').iterdir():
        try:
            status = (task / 'status').read_text()
        except OSError:  # the thread ended
            continue
        for line in status.splitlines():
            if line.startswith('voluntary_ctxt_switches:'):
                total += int(line.split()[1])
    return total


def shares(pids: dict, seconds: float) -> dict:
    """
    Return each process's CPU time over the next ``seconds`` as % of one core.

    Under ``'wakeups'``: each process's thread wake-ups a second over the same window.
    """
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    woken = {name: wakeups(pid) for name, pid in pids.items()}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    figures = {name: 100.0 * (cpu_seconds(pid) - before[name]) / elapsed
               for name, pid in pids.items()}
    figures['wakeups'] = {name: (wakeups(pid) - woken[name]) / elapsed
                          for name, pid in pids.items()}
    return figures


def measure(bench, node_pid: int, robot, listener) -> list:
    """Return the JSON lines of the idle and the 1 Hz figures (medians over the windows)."""
    args = bench.args
    pids = {'node': node_pid, 'bare': listener.pid, 'robot': robot.pid}
    time.sleep(args.cpu_warmup_s)
    idle = [shares(pids, args.cpu_window_s) for _ in range(args.cpu_idle_windows)]
    listener_before = listener.ask('count')
    node_before = bench.node_evidence()
    robot.ask('start')
    time.sleep(args.cpu_warmup_s)
    loaded = [shares(pids, args.cpu_window_s) for _ in range(args.cpu_windows)]
    sent = robot.ask('stop')
    node_after = bench.node_evidence()
    listener_after = listener.ask('count')
    lines = []
    for bench_name, windows in (('cpu_idle', idle), ('cpu_1hz', loaded)):
        node = statistics.median(window['node'] for window in windows)
        bare = statistics.median(window['bare'] for window in windows)
        line = {'bench': bench_name, 'n': len(windows), 'window_s': args.cpu_window_s,
                'statuses': STATUSES if bench_name == 'cpu_1hz' else 0,
                'rate_hz': RATE_HZ if bench_name == 'cpu_1hz' else 0.0,
                'entries': ENTRIES, 'share': round(node, 3), 'baseline_share': round(bare, 3),
                'ratio': round(node / bare, 2) if bare else None,
                'windows': [round(window['node'], 3) for window in windows],
                **woke(windows)}
        if bench_name == 'cpu_1hz':
            line.update({
                'publisher_share': round(statistics.median(w['robot'] for w in windows), 3),
                'sent': sent['sent'],
                'node_received': node_after['received'] - node_before['received'],
                'baseline_messages': sum(listener_after[key] - listener_before[key]
                                         for key in ('diagnostics', 'logs')),
                'goal_share': GOAL_SHARE, 'met': node <= GOAL_SHARE})
        lines.append(line)
    lines.extend(per_profile(args, pids, robot))
    return lines


def per_profile(args, pids: dict, robot) -> list:
    """Return a ``cpu_profile`` line a profile: the node at that robot's own 1 Hz status set."""
    lines = []
    for name in generate.robot_profile_names():
        robot.ask(f'start {name}')
        time.sleep(args.cpu_warmup_s)
        window = shares(pids, args.cpu_profile_window_s)
        robot.ask('stop')
        node, bare = window['node'], window['bare']
        lines.append({'bench': 'cpu_profile', 'profile': name, 'n': 1,
                      'window_s': args.cpu_profile_window_s,
                      'statuses': len(robot_statuses(name)), 'rate_hz': RATE_HZ,
                      'share': round(node, 3), 'baseline_share': round(bare, 3),
                      'ratio': round(node / bare, 2) if bare else None, **woke([window]),
                      'goal_share': GOAL_SHARE, 'met': node <= GOAL_SHARE})
    return lines


def woke(windows: list) -> dict:
    """Return the node's and the bare subscriber's thread wake-ups a second (window medians)."""
    return {'wakeups_per_s': round(statistics.median(w['wakeups']['node'] for w in windows), 1),
            'baseline_wakeups_per_s': round(statistics.median(w['wakeups']['bare']
                                                              for w in windows), 1)}
