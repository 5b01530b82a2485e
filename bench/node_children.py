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
The child processes of bench/bench_node.py, each driven by one-line commands on stdin.

``publisher`` floods a topic, ``bare`` is the bare subscriber and GetContext server of the
ingest, round-trip and rss figures; ``robot`` publishes what a robot reports at 1 Hz and
``listener`` is the bare subscriber of the cpu figures (bench/node_cpu.py).
"""

import json
import pathlib
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / 'profiles'))
import generate  # noqa: E402, I100 - the profiles' generator lives beside them

STATUSES_PER_MESSAGE = 5
BARE_TOPIC = '/bench_bare/diagnostics'
BARE_SERVICE = '/bench_bare/get_context'
STATUSES = 30
RATE_HZ = 1.0
LOG_PERIOD_S = 2.0
CONSTANT_ERRORS = ('joy_linux_node: Joystick Driver Status', 'gps: NMEA driver',
                   'a200_0000/platform: Wireless')


def _qos():
    from rclpy.qos import DurabilityPolicy
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    # What memory_node subscribes /diagnostics with (EVIDENCE_QOS).
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def _commands(handle):
    """Lines from stdin, one command each (the children are driven by the main process)."""
    for line in sys.stdin:
        line = line.strip()
        if line:
            reply = handle(line.split())
            print(json.dumps(reply), flush=True)
            if line == 'quit':
                return


def _serve(handle, node) -> int:
    """Answer commands with ``handle`` until ``quit``, then destroy ``node`` and shut down."""
    import rclpy
    try:
        _commands(handle)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# ------------------------------------------------------------------------ child: publisher

def flood_messages(count: int = 64):
    """Return DiagnosticArrays of 5 statuses (OK / WARN / ERROR) from a simulated robot."""
    from diagnostic_msgs.msg import DiagnosticArray
    from diagnostic_msgs.msg import DiagnosticStatus
    from diagnostic_msgs.msg import KeyValue
    devices = ('left_wheel', 'right_wheel', 'lidar', 'battery', 'imu', 'camera', 'arm')
    messages = []
    for number in range(count):
        statuses = []
        for slot in range(STATUSES_PER_MESSAGE):
            device = devices[(number + slot) % len(devices)]
            level = (0, 0, 1, 0, 2)[(number + slot) % 5]
            statuses.append(DiagnosticStatus(
                level=bytes([level]), name=f'bench_robot: {device}',
                message=('ok', 'ok', f'{device} intermittent dropouts', 'ok',
                         f'{device} stopped responding')[(number + slot) % 5],
                hardware_id=f'{device}-{slot}',
                values=[KeyValue(key='temperature', value=f'{40 + number % 30}'),
                        KeyValue(key='count', value=str(number))]))
        messages.append(DiagnosticArray(status=statuses))
    return messages


def run_publisher() -> int:
    """Child: floods a topic on command ``flood TOPIC RATE SECONDS``; replies with counts."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    rclpy.init()
    node = rclpy.create_node('bench_flood')
    publishers = {}
    messages = flood_messages()

    def handle(words):
        if words[0] == 'quit':
            return {'ok': True}
        topics, rate, seconds = words[1].split(','), float(words[2]), float(words[3])
        chosen = []
        for topic in topics:
            if topic not in publishers:
                publishers[topic] = node.create_publisher(DiagnosticArray, topic, _qos())
            chosen.append(publishers[topic])
        deadline = time.monotonic() + 20.0
        while min(p.get_subscription_count() for p in chosen) < 1 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # let the reliable match settle on both sides

        def publish(message):  # the same message on every chosen topic
            for publisher in chosen:
                publisher.publish(message)

        published = refused = 0
        started = time.monotonic()
        end = started + seconds
        while True:
            now = time.monotonic()
            if now >= end:
                break
            due = int((now - started) * rate) + 1
            if published + refused >= due:
                time.sleep(min(0.002, end - now))
                continue
            for _ in range(min(due - published - refused, 100)):
                try:
                    publish(messages[published % len(messages)])
                    published += 1
                except RuntimeError as error:  # rclpy's RCLError, a RuntimeError
                    # Fast DDS gives up on a reliable write that stayed blocked (its
                    # max_blocking_time) behind a reader that does not keep up: counted.
                    if 'Failed to publish' not in str(error):
                        raise
                    refused += 1
        return {'published': published, 'refused': refused,
                'seconds': time.monotonic() - started,
                'subscribers': min(p.get_subscription_count() for p in chosen)}

    return _serve(handle, node)


# ------------------------------------------------------------------------ child: bare node

def run_bare(canned_path: str) -> int:
    """
    Child: a bare subscriber that counts, and a GetContext server with a canned reply.

    Nothing of robot_memory is imported but its generated service type: this process is
    also the resident-memory baseline of a minimal rclpy node.
    """
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.serialization import deserialize_message
    from robot_memory.srv import GetContext

    canned = deserialize_message(pathlib.Path(canned_path).read_bytes(), GetContext.Response)
    rclpy.init()
    node = rclpy.create_node('bench_bare')
    state = {'count': 0}

    def counted(_message):
        state['count'] += 1

    def serve(_request, response):
        return canned

    node.create_subscription(DiagnosticArray, BARE_TOPIC, counted, _qos())
    node.create_service(GetContext, BARE_SERVICE, serve)
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def handle(words):
        return {'count': state['count']}

    reader = threading.Thread(target=_commands, args=(handle,), daemon=True)
    reader.start()
    try:
        while reader.is_alive():
            executor.spin_once(timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# ------------------------------------------------------------------------ child: robot

def robot_statuses(only: str = '') -> list:
    """
    Return (name, hardware_id, level, message, values) of the statuses of the robot.

    The 30 statuses the goal names, from all profiles; or ``only`` one profile's, as that
    robot reports them (each of its constant conditions in error).
    """
    found = []
    for name in [only] if only else generate.robot_profile_names():
        profile = generate.load(name)
        constant = {status['name']: status for plant in profile['plants']
                    for status in plant.get('statuses', ()) if plant['expect'] == 'constant'}
        for item in profile['statuses']:
            bad = (constant.get(item['name'])
                   if only or item['name'] in CONSTANT_ERRORS else None)
            found.append((item['name'], item['hardware_id'], 2 if bad else 0,
                          bad['message'] if bad else item.get('message', 'OK'),
                          dict(item.get('values', {}))))
    if only:
        return found
    chosen = found[:STATUSES]
    errors = sum(1 for status in chosen if status[2])
    if len(chosen) != STATUSES or errors != len(CONSTANT_ERRORS):
        raise RuntimeError(f'the profiles give {len(chosen)} statuses, {errors} in error')
    return chosen


def _moved(value: str, tick: int, slot: int) -> str:
    """Return a numeric value as a sensor reports it: a little different each second."""
    try:
        number = float(value)
    except ValueError:
        return value
    return f'{number * (1.0 + 0.002 * ((tick * 7 + slot * 3) % 11 - 5)):.3g}'


def run_robot(qos) -> int:
    """Child: publishes the robot's reports on ``start`` until ``stop``; replies with counts."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from diagnostic_msgs.msg import DiagnosticStatus
    from diagnostic_msgs.msg import KeyValue
    from rcl_interfaces.msg import Log
    rclpy.init()
    node = rclpy.create_node('bench_robot')
    diagnostics = node.create_publisher(DiagnosticArray, '/diagnostics', qos)
    rosout = node.create_publisher(Log, '/rosout', qos)
    statuses = robot_statuses()
    state = {'sent': 0, 'logs': 0}
    stop = threading.Event()

    def publish(tick: int) -> None:
        array = DiagnosticArray(status=[
            DiagnosticStatus(level=bytes([level]), name=name, message=message,
                             hardware_id=hardware_id,
                             values=[KeyValue(key=key, value=_moved(str(value), tick, slot))
                                     for key, value in values.items()])
            for slot, (name, hardware_id, level, message, values) in enumerate(statuses)])
        array.header.stamp = node.get_clock().now().to_msg()
        diagnostics.publish(array)
        state['sent'] += 1
        if tick % int(LOG_PERIOD_S * RATE_HZ) == 0:
            error = (tick // 2) % 5 == 4
            rosout.publish(Log(
                stamp=array.header.stamp, level=Log.ERROR if error else Log.INFO,
                name='behavior_server', file='behavior_server.cpp', function='onGoal', line=88,
                msg=(f'Goal {tick:08x}-5c1e aborted: Collision Ahead' if error
                     else f'Running backup for goal {tick:08x}-5c1e')))
            state['logs'] += 1

    def loop() -> None:
        started = time.monotonic()
        tick = 0
        while not stop.is_set():
            publish(tick)
            tick += 1
            stop.wait(max(0.0, started + tick / RATE_HZ - time.monotonic()))

    worker = None

    def handle(words):
        nonlocal worker
        if words[0] == 'start' and worker is None:
            statuses[:] = robot_statuses(words[1] if len(words) > 1 else '')
            stop.clear()
            worker = threading.Thread(target=loop, daemon=True)
            worker.start()
        elif words[0] in ('stop', 'quit') and worker is not None:
            stop.set()
            worker.join()
            worker = None
        return dict(state)

    return _serve(handle, node)


def run_listener(qos) -> int:
    """Child: the bare subscriber, ``rclpy.spin`` over /diagnostics and /rosout; it counts."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.msg import Log
    from rclpy.executors import ExternalShutdownException
    rclpy.init()
    node = rclpy.create_node('bench_listener')
    state = {'diagnostics': 0, 'statuses': 0, 'logs': 0}

    def diagnostic(message):
        state['diagnostics'] += 1
        state['statuses'] += len(message.status)

    def log(_message):
        state['logs'] += 1

    node.create_subscription(DiagnosticArray, '/diagnostics', diagnostic, qos)
    node.create_subscription(Log, '/rosout', log, qos)

    def commands():
        _commands(lambda words: dict(state))
        rclpy.try_shutdown()

    threading.Thread(target=commands, daemon=True).start()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()
    return 0
