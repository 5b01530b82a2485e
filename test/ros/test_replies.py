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
robot_memory.ros.replies without a ROS graph: warning routing and the profile choice.

The end-to-end proof (a real node, a reply the middleware drops) is test_service_replies.
Here the sender issues exactly what rclpy issues when rmw_fastrtps gives up on a reply: a
``RuntimeWarning`` from the same call site every time.
"""

import pathlib
import threading
import warnings

import pytest

from robot_memory.ros import replies

PROFILE = pathlib.Path(replies.__file__).resolve().parents[5] / 'share' / 'robot_memory' \
    / 'config' / 'fastdds_profiles.xml'


class _Sender:
    """Sends replies like rclpy's Service; ``drop`` makes the next sends fail as rclpy reports."""

    def __init__(self):
        self.drop = False
        self.sent = []

    def send_response(self, response, header):
        if self.drop:
            warnings.warn('failed to send response (timeout): client will not receive '
                          'response, at rmw_response.cpp:164', RuntimeWarning)
            return
        self.sent.append((response, header))


def test_every_dropped_reply_is_counted_per_service_and_not_printed(capsys):
    seen = []
    watch = replies.ReplyWatch(on_drop=lambda *args: seen.append(args))
    learn, recall = _Sender(), _Sender()
    watch.watch(learn, 'learn')
    watch.watch(recall, 'recall')
    learn.send_response('ok', 1)
    learn.drop = True
    for header in range(3):  # the same call site each time: none may be deduplicated
        learn.send_response('lost', header)
    recall.send_response('ok', 9)
    assert watch.counts() == (5, {'learn': 3})
    assert [(name, why[:23]) for name, why, _ in seen] == \
        [('learn', 'failed to send response')] * 3
    assert all(waited >= 0.0 for _, _, waited in seen)
    assert 'failed to send response' not in capsys.readouterr().err


def test_other_warnings_and_unwatched_sends_pass_through():
    replies.ReplyWatch()
    with pytest.warns(RuntimeWarning, match='failed to send response'):
        _Sender.send_response(type('Unwatched', (), {'drop': True})(), 'x', 1)
    with pytest.warns(UserWarning, match='something else'):
        warnings.warn('something else', UserWarning)


def test_threads_count_their_own_service():
    watch = replies.ReplyWatch()
    senders = {name: _Sender() for name in ('learn', 'forget', 'recall', 'get_context')}
    for name, sender in senders.items():
        sender.drop = name != 'recall'
        watch.watch(sender, name)

    def send(sender):
        for header in range(50):
            sender.send_response('r', header)

    threads = [threading.Thread(target=send, args=(sender,)) for sender in senders.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert watch.counts() == (200, {'learn': 50, 'forget': 50, 'get_context': 50})


def test_the_package_profile_is_used_unless_the_user_chose_one():
    assert PROFILE.is_file(), 'run the tests against the install tree (scripts/test.sh)'
    environ = {'ROS_DISTRO': 'kilted'}
    assert replies.use_reply_profile(environ) == PROFILE
    assert environ == {'ROS_DISTRO': 'kilted', 'FASTDDS_DEFAULT_PROFILES_FILE': str(PROFILE)}
    jazzy = {'ROS_DISTRO': 'jazzy'}
    replies.use_reply_profile(jazzy)
    assert jazzy == {'ROS_DISTRO': 'jazzy', 'FASTRTPS_DEFAULT_PROFILES_FILE': str(PROFILE)}
    own = {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/fleet/dds.xml'}
    assert replies.use_reply_profile(own) == pathlib.Path('/etc/fleet/dds.xml')
    assert own == {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/fleet/dds.xml'}


def test_the_profile_gives_service_replies_a_2_s_wait():
    import xml.etree.ElementTree as ElementTree  # noqa: I100 - only this test reads XML

    root = ElementTree.parse(PROFILE).getroot()
    namespace = {'dds': 'http://www.eprosima.com'}
    [writer] = root.findall('dds:profiles/dds:data_writer', namespace)
    assert writer.get('profile_name') == 'service'
    blocking = writer.find('dds:qos/dds:reliability/dds:max_blocking_time', namespace)
    assert (blocking.find('dds:sec', namespace).text,
            blocking.find('dds:nanosec', namespace).text) == ('2', '0')
