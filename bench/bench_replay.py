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
How fast ``robot-memory replay`` takes diagnostics from an MCAP, and in how much memory.

The bag is what a robot records: one DiagnosticArray a second of the 30 statuses of a
Clearpath Husky (the ``clearpath_husky`` bench profile's 10, whose faults come and go as
its planted causes say, beside 20 more of its drivers and monitors), headers stamped,
written by rosbags into an MCAP. Values change as real drivers' do: topic frequency
statuses (diagnostic_updater's, with their events since startup) and the battery's
voltage and current every second, temperatures, memory, disk and signal now and then,
a few statuses carry no values. Lines:

``{"bench": "replay_mcap", ...}``  statuses per second replayed into a fresh evidence
    database (``replay.replay``, no dreams: the dream is bench_autodream's), and
    ``baseline_per_s``: the library's own bare read-and-decode of the same bag (rosbags'
    Reader and ``deserialize_cdr`` of every message, each status's fields read), measured
    in the same run; ``ratio`` = figure / baseline; ``changed``: the share of statuses
    whose bytes differ from that status's in the array before; ``cpu_per_s``,
    ``cpu_baseline_per_s`` and ``cpu_ratio``: the same by the process's CPU time, which
    other programs on a busy machine disturb less. Medians of ``repeats``.
``{"bench": "replay_mcap_distinct", ...}``  the same on a bag whose every status carries
    first among its values a sequence number whose length changes every second, so every
    status is read again from its values on, each value decoded: about the floor.
``{"bench": "replay_rss", ...}``  the peak resident memory of ``robot-memory replay`` in
    its own process on the bag and on one ``scale`` times longer (``ratio``: flat is 1).
``{"bench": "goal", ...}``  the issue's goals: 200,000 statuses/s and 0.5 of the baseline.

Usage: ``python bench/bench_replay.py [--quick] [--arrays N] [--repeats R] [--scale S]``.
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    from robot_memory.bags import replay
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.bags import replay
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.bags import read
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / 'profiles'))
import generate  # noqa: E402, I100 - the profiles' generator lives beside them

REPO = pathlib.Path(__file__).resolve().parents[1]
PROFILE = 'clearpath_husky'
START = dt.datetime(2026, 5, 4, 6, 0, tzinfo=dt.timezone.utc)  # a Monday, 08:00 in Berlin
STATUSES = 30
GOAL_PER_S = 200_000
GOAL_RATIO = 0.5
KIND = 'diagnostic_msgs/msg/DiagnosticArray'
# diagnostic_updater's topic frequency statuses: (topic, target Hz)
RATES = [('platform/odom', 50), ('sensors/imu_0/data', 100), ('platform/joint_states', 50),
         ('sensors/lidar3d_0/points', 10), ('sensors/camera_0/color/image', 30),
         ('sensors/gps_0/fix', 5)]


def _frequency(target: int, second: int, rng) -> list:
    window = 5.0 + rng.uniform(-0.004, 0.004)
    events = round(target * window) + rng.randint(-1, 1)
    return [('Events in window', str(events)), ('Events since startup', str(target * second)),
            ('Duration of window (s)', f'{window:.6f}'),
            ('Actual frequency (Hz)', f'{events / window:.6f}'),
            ('Target frequency (Hz)', f'{target:.6f}')]


def _values(second: int, rng) -> dict:
    """Return {status name: values} of the Husky's drivers and monitors at ``second``."""
    now = second // 20
    volts = 26.1 - second * 0.00012 + rng.uniform(-0.02, 0.02)
    return {
        'MCU Status': [('Firmware version', '2.0.1'), ('MCU temperature (C)', str(38 + now % 4))],
        'Battery': [('voltage', f'{volts:.2f}'), ('Current (A)', f'{rng.uniform(2, 9):.1f}'),
                    ('Percentage', str(max(0, 96 - second // 400)))],
        'Motor Drivers': [('Left current (A)', f'{abs(4 * rng.gauss(0, 1)):.1f}'),
                          ('Right current (A)', f'{abs(4 * rng.gauss(0, 1)):.1f}')]
        if second % 2 else [('Left current (A)', '0.0'), ('Right current (A)', '0.0')],
        'velodyne_packets': _frequency(10, second, rng),
        'Temperature': [('Left motor (C)', str(41 + (second // 30) % 6)),
                        ('Right motor (C)', str(40 + (second // 45) % 5)), ('PCB (C)', '37')],
        'Wireless': [('SSID', 'husky-net'), ('Signal (dBm)', str(-60 - (second // 5) % 7))],
        'microstrain': [('Device', '3DM-GX5-25'), ('Sample rate (Hz)', '100')],
    }


def _companions(second: int, rng) -> list:
    """Return the 20 statuses beside the profile's, as (name, hardware_id, message, values)."""
    found = [(f'a200_0000/{topic.split("/")[-2]}: {topic} topic status', 'a200-0000',
              'Desired frequency met', _frequency(target, second, rng))
             for topic, target in RATES]
    found += [
        ('a200_0000/cpu_monitor: CPU Usage', 'a200-0000', 'OK',
         [(f'Core {core}', f'{rng.uniform(5, 60):.1f}%') for core in range(4)]),
        ('a200_0000/ram_monitor: Memory Usage', 'a200-0000', 'OK',
         [('Used (MB)', str(2100 + (second // 10) % 50)), ('Total (MB)', '7872')]),
        ('a200_0000/hd_monitor: Disk Usage', 'a200-0000', 'OK',
         [('/ used', f'{41 + second // 3000 / 10:.1f}%')]),
        ('a200_0000/ntp_monitor: NTP offset', 'a200-0000', 'OK',
         [('Offset (us)', str(120 + (second // 64) % 17 * 9))]),
        ('controller_manager: Controllers Activity', 'a200-0000', 'All controllers are active',
         [('platform_velocity_controller', 'active'), ('joint_state_broadcaster', 'active')]),
        ('controller_manager: Controller Manager Activity', 'a200-0000', 'OK',
         [('periodicity mean (Hz)', f'{50 + rng.uniform(-0.05, 0.05):.2f}'),
          ('update rate (Hz)', '50')]),
        ('lifecycle_manager_navigation: Nav2 Health', '', 'Managed nodes are active', []),
        ('lifecycle_manager_localization: Nav2 Health', '', 'Managed nodes are active', []),
        ('a200_0000/teleop: Joystick Driver Status', 'ps4', 'OK',
         [('topic', '/a200_0000/joy_teleop/joy'), ('recent joystick messages', '0')]),
        ('a200_0000/sensors/gps_0: GPS Status', 'ublox', 'Fix',
         [('Satellites used', str(9 + (second // 37) % 4)), ('Fix type', '3D')]),
        ('a200_0000/sensors/camera_0: Temperature', 'realsense', 'OK',
         [('ASIC (C)', str(44 + (second // 20) % 3)), ('Projector (C)', '39')]),
        ('a200_0000/platform: Power', 'a200-0000', 'OK',
         [('48V rail (V)', '48.1'), ('Current (A)', f'{3 + second % 3 * 0.4:.1f}')]),
        ('a200_0000/sensors/lidar3d_0: velodyne_driver status', 'velodyne', 'OK',
         [('model', 'VLP16'), ('rpm', '600')]),
        ('a200_0000/platform: Fans', 'a200-0000', 'OK', []),
    ]
    return found


def robot_arrays(arrays: int, distinct: bool = False):
    """
    Yield (ns, DiagnosticArray fields) of ``arrays`` seconds of the Husky, from START.

    The profile's statuses have the levels and messages its planted causes give (faults
    that come and go); ``distinct`` puts a sequence number first in every status's values,
    one character longer every other second (no status keeps its layout).
    """
    rng = random.Random(PROFILE)
    profile = generate.load(PROFILE)
    days = arrays // 86400 + 1
    second = -1
    statuses: list = []
    ticks = generate.stream(profile, START, days)
    for stamp, kind, data in ticks:
        if kind != 'diagnostic':
            continue
        index = round(stamp - START.timestamp())
        if index != second:
            if statuses:
                yield _array(second, statuses, rng, distinct)
                if second + 1 >= arrays:
                    return
            second, statuses = index, []
        statuses.append(data)
    yield _array(second, statuses, rng, distinct)


def _array(second: int, profile_statuses: list, rng, distinct: bool) -> tuple:
    values = _values(second, rng)
    statuses = []
    for data in profile_statuses:
        key = next((key for key in values if key in data['name']), None)
        statuses.append((data['level'], data['name'], data['hardware_id'], data['message'],
                         values[key] if key else []))
    statuses += [(0, *item) for item in _companions(second, rng)]
    ns = read.ns_of(START) + second * 10**9
    status = [{'level': level, 'name': name, 'hardware_id': hardware_id, 'message': message,
               'values': ([{'key': 'sequence',
                            'value': '#' * (second % 2) + str(second * STATUSES + index)}]
                          if distinct else []) +
               [{'key': key, 'value': value} for key, value in pairs]}
              for index, (level, name, hardware_id, message, pairs) in enumerate(statuses)]
    return ns, {'header': {'stamp': {'sec': ns // 10**9, 'nanosec': ns % 10**9},
                           'frame_id': ''}, 'status': status}


def make_bag(path: pathlib.Path, arrays: int, distinct: bool = False) -> tuple:
    """
    Write an MCAP of ``arrays`` seconds of the robot's DiagnosticArrays; return its directory.

    Also returns the share of statuses whose bytes differ from the same status's in the
    array before (what a cache of statuses seen before cannot reuse).
    """
    store = get_typestore(Stores.ROS2_KILTED)
    previous: dict = {}
    changed = total = 0
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection('/diagnostics', KIND, typestore=store)
        for ns, fields in robot_arrays(arrays, distinct):
            for status in fields['status']:
                now = repr(status)
                changed += previous.get(status['name']) != now
                previous[status['name']] = now
                total += 1
            raw = store.serialize_cdr(bag_writer.build(store, KIND, fields), KIND)
            writer.write(connection, ns, bytes(raw))
    return path, changed / total


def bare_read(path: pathlib.Path) -> int:
    """Read and decode every status with the library alone; return the statuses read."""
    store = get_typestore(Stores.ROS2_KILTED)
    count = 0
    with Reader(path) as reader:
        for connection, _, raw in reader.messages():
            message = store.deserialize_cdr(raw, connection.msgtype)
            for status in message.status:
                (status.level, status.name, status.message, status.hardware_id,
                 [(item.key, item.value) for item in status.values])
                count += 1
    return count


def replay_once(path: pathlib.Path, scratch: pathlib.Path) -> int:
    """Replay the bag into a fresh memory; returns the observations taken."""
    for stale in scratch.glob('robot-memory*'):
        stale.unlink()
    memory = MemoryFile(scratch / 'robot-memory.md')
    with EvidenceStore(scratch / 'robot-memory.db', batch_size=10**9) as store:
        summary = replay.replay([path], store, memory, replay.ReplayOptions(nightly=None))
    return summary.observations


def timed(function, *args) -> tuple:
    """Return (wall seconds, CPU seconds of this process, result) of ``function(*args)``."""
    started, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return time.perf_counter() - started, time.process_time() - cpu, result


def peak_rss_mb(path: pathlib.Path, scratch: pathlib.Path) -> float:
    """Peak resident memory (MB) of ``robot-memory replay`` of ``path`` in its own process."""
    for stale in scratch.glob('robot-memory*'):
        stale.unlink()
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    process = subprocess.Popen(
        [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'replay', str(path), '--no-dream',
         '--json', '--file', str(scratch / 'robot-memory.md')],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    # Not wait4's ru_maxrss: Linux carries the forking parent's peak into the child's at
    # exec, and this process holds the bags' measurements. VmHWM is the child's own.
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, _vm_hwm_mb(process.pid))
        time.sleep(0.02)
    if process.returncode != 0:
        raise RuntimeError(f'robot-memory replay exited {process.returncode}')
    return peak


def _vm_hwm_mb(pid: int) -> float:
    """Peak resident memory of ``pid`` so far (VmHWM), 0 once it is gone."""
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def measure(name: str, bag: pathlib.Path, changed: float, scratch: pathlib.Path, arrays: int,
            repeats: int) -> tuple:
    """Time the replay of ``bag`` beside the bare read; print its line; return the medians."""
    figures, baselines, cpu_figures, cpu_baselines = [], [], [], []
    for _ in range(repeats):
        seconds, cpu, count = timed(bare_read, bag)
        baselines.append(count / seconds)
        cpu_baselines.append(count / cpu)
        seconds, cpu, taken = timed(replay_once, bag, scratch)
        if taken != count:
            raise RuntimeError(f'replay took {taken} of {count} statuses')
        figures.append(count / seconds)
        cpu_figures.append(count / cpu)
    figure, baseline = statistics.median(figures), statistics.median(baselines)
    cpu_figure, cpu_baseline = statistics.median(cpu_figures), statistics.median(cpu_baselines)
    size = sum(file.stat().st_size for file in bag.iterdir())
    print(json.dumps({'bench': name, 'n': arrays * STATUSES, 'arrays': arrays,
                      'bag_mb': round(size / 1e6, 2), 'changed': round(changed, 3),
                      'statuses_per_s': round(figure),
                      'baseline_per_s': round(baseline), 'ratio': round(figure / baseline, 3),
                      'cpu_per_s': round(cpu_figure), 'cpu_baseline_per_s': round(cpu_baseline),
                      'cpu_ratio': round(cpu_figure / cpu_baseline, 3),
                      'repeats': repeats, 'all_per_s': [round(value) for value in figures],
                      'all_baseline_per_s': [round(value) for value in baselines]}),
          flush=True)
    return figure, baseline


def main(argv=None) -> int:
    """Run the benchmark; print JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='small bags, for the smoke test')
    parser.add_argument('--arrays', type=int, default=None, help='DiagnosticArrays in the bag')
    parser.add_argument('--repeats', type=int, default=None, help='runs of each measurement')
    parser.add_argument('--scale', type=int, default=None, help='size of the larger RSS bag')
    args = parser.parse_args(argv)
    arrays = args.arrays or (400 if args.quick else 34_000)
    repeats = args.repeats or 3
    scale = args.scale or (4 if args.quick else 5)
    with tempfile.TemporaryDirectory(prefix='bench-replay-') as temp:
        temp = pathlib.Path(temp)
        bag, changed = make_bag(temp / 'bag', arrays)
        scratch = temp / 'memory'
        scratch.mkdir()
        figure, baseline = measure('replay_mcap', bag, changed, scratch, arrays, repeats)
        distinct, changed = make_bag(temp / 'distinct', arrays, distinct=True)
        measure('replay_mcap_distinct', distinct, changed, scratch, arrays, repeats)
        shutil.rmtree(distinct)
        small = peak_rss_mb(bag, scratch)
        large_bag, _ = make_bag(temp / 'large', arrays * scale)
        large = peak_rss_mb(large_bag, scratch)
        print(json.dumps({'bench': 'replay_rss', 'n': arrays * STATUSES,
                          'large_n': arrays * STATUSES * scale, 'mb': round(small, 1),
                          'large_mb': round(large, 1), 'ratio': round(large / small, 3),
                          'large_bag_mb': round(sum(
                              file.stat().st_size for file in large_bag.iterdir()) / 1e6, 2)}))
        met = None if args.quick else (figure >= GOAL_PER_S and figure / baseline >= GOAL_RATIO)
        print(json.dumps({'bench': 'goal', 'n': arrays * STATUSES, 'goal_per_s': GOAL_PER_S,
                          'goal_ratio': GOAL_RATIO, 'met': met}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
