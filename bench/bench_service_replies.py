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
Benchmark: what the 2 s reply wait of config/fastdds_profiles.xml costs a service call.

The profile raises the time rmw_fastrtps may wait for a client's reply reader to be
matched (Fast DDS's default: 100 ms). It should cost nothing when the reader is matched,
which is every call but a brand-new client's first. Two memory_node processes run side by
side on a private ROS_DOMAIN_ID (discovery on this host): one with the package's profile,
the baseline with Fast DDS's defaults (a profile file without the "service" profile).
Calls alternate between them. Prints one JSON object a line; medians throughout:

``learn_round_trip``    ~/learn called by one long-lived client (a new text each call).
``first_call``          a new client's first ~/learn call (create, wait_for_service, call).

Each line has ``ms`` (with the profile), ``baseline_ms`` (Fast DDS defaults), ``ratio`` and
``unanswered`` / ``baseline_unanswered`` (calls with no reply within 5 s).

Needs the ROS environment (``source scripts/env.sh``; ``memory_node`` on PATH).
Usage: ``python bench/bench_service_replies.py [--quick] [--domain N]``.
"""

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULTS_PROFILE = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<dds xmlns="http://www.eprosima.com"><profiles/></dds>\n')


def _start(tmp: pathlib.Path, namespace: str, profile) -> subprocess.Popen:
    tmp = tmp / namespace  # a directory (and so an evidence database) per node
    tmp.mkdir()
    params = tmp / f'{namespace}.yaml'
    params.write_text('/**:\n  ros__parameters:\n'
                      f'    memory_file: "{tmp / "robot-memory.md"}"\n'
                      '    rrn: RRN-000000000042\n    dream_time: ""\n', encoding='utf-8')
    env = dict(os.environ)
    if profile is not None:
        env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(profile)
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(profile)
    env['ROS_LOG_DIR'] = str(tmp / f'{namespace}-ros-log')
    log = open(tmp / f'{namespace}.log', 'wb')
    return subprocess.Popen([shutil.which('memory_node'), '--ros-args', '-r',
                             f'__ns:=/{namespace}', '--params-file', str(params)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)


def _call(node, client, request, timeout: float = 5.0):
    """Seconds one call took, or None when no reply came within ``timeout``."""
    import rclpy

    started = time.perf_counter()
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return time.perf_counter() - started if future.done() else None


def main(argv=None) -> int:
    """Run the benchmark and print its JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='fewer calls (a smoke run)')
    parser.add_argument('--domain', type=int, default=None,
                        help='ROS_DOMAIN_ID (default: from the environment, else 77)')
    args = parser.parse_args(argv)
    os.environ['ROS_DOMAIN_ID'] = str(args.domain or os.environ.get('ROS_DOMAIN_ID') or 77)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    calls, fresh = (40, 6) if args.quick else (400, 40)

    import rclpy
    from rclpy.node import Node

    from robot_memory.srv import Learn

    tmp = pathlib.Path(tempfile.mkdtemp(prefix='bench-replies-'))
    defaults = tmp / 'fastdds-defaults.xml'
    defaults.write_text(DEFAULTS_PROFILE, encoding='utf-8')
    nodes = {'profile': _start(tmp, 'bench_profile', None),
             'baseline': _start(tmp, 'bench_baseline', defaults)}
    rclpy.init()
    probe = Node(f'bench_replies_{os.getpid()}')
    try:
        services = {name: f'/bench_{name}/robot_memory/learn' for name in nodes}
        clients = {name: probe.create_client(Learn, service)
                   for name, service in services.items()}
        for name, client in clients.items():
            if not client.wait_for_service(timeout_sec=60.0):
                print(f'{name}: memory_node never served ~/learn; see {tmp}', file=sys.stderr)
                return 1
        times = {name: [] for name in nodes}
        for number in range(calls):
            for name, client in clients.items():
                times[name].append(_call(probe, client, Learn.Request(
                    text=f'round trip fact {number} of the {name} node')))
        first = {name: [] for name in nodes}
        for number in range(fresh):
            for name, service in services.items():
                client = probe.create_client(Learn, service)
                started = time.perf_counter()
                client.wait_for_service(timeout_sec=10.0)
                took = _call(probe, client, Learn.Request(text=f'first call {number} {name}'))
                first[name].append(None if took is None else time.perf_counter() - started)
                probe.destroy_client(client)
        for bench, measured in (('learn_round_trip', times), ('first_call', first)):
            answered = {name: [value for value in values if value is not None]
                        for name, values in measured.items()}
            ms = statistics.median(answered['profile']) * 1000
            baseline_ms = statistics.median(answered['baseline']) * 1000
            print(json.dumps({'bench': bench, 'n': len(measured['profile']),
                              'ms': round(ms, 3), 'baseline_ms': round(baseline_ms, 3),
                              'ratio': round(ms / baseline_ms, 3),
                              'unanswered': len(measured['profile']) - len(answered['profile']),
                              'baseline_unanswered': (len(measured['baseline'])
                                                      - len(answered['baseline'])),
                              'quick': args.quick}), flush=True)
    finally:
        probe.destroy_node()
        rclpy.try_shutdown()
        for process in nodes.values():
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == '__main__':
    sys.exit(main())
