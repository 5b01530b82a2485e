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
The interfaces in msg/ and srv/: every field documented, the issue's fields present, all built.

A field is documented when the paragraph it stands in (lines up to the previous blank
line) has a comment above it, so a group such as Dream's created / reinforced / resolved
ids shares one comment. The generated classes (robot_memory.msg / .srv from the colcon
build) are checked for the fields users call them with.
"""

import re

import pytest

from robot_memory import msg
from robot_memory import srv
from support.paths import REPO

FILES = sorted((REPO / 'msg').glob('*.msg')) + sorted((REPO / 'srv').glob('*.srv'))


def undocumented(text: str) -> list:
    """Field lines of an interface file with no comment above them in their paragraph."""
    missing, commented = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped == '---':
            commented = False
        elif stripped.startswith('#'):
            commented = True
        elif not commented and '#' not in stripped:
            missing.append(f'{number}: {stripped}')
    return missing


def test_the_rule_itself_finds_an_undocumented_field():
    assert undocumented('# an id\nstring id\n\nstring text\n---\n# ok\nbool ok') == \
        ['4: string text']


@pytest.mark.parametrize('path', FILES, ids=lambda path: path.name)
def test_every_field_has_a_comment(path):
    text = path.read_text(encoding='utf-8')
    assert text.lstrip().startswith('#'), f'{path.name} does not open with what it is for'
    assert undocumented(text) == [], f'{path.name}: fields without a comment'


def test_cmake_builds_every_interface_file():
    cmake = (REPO / 'CMakeLists.txt').read_text(encoding='utf-8')
    built = set(re.findall(r'"((?:msg|srv)/\w+\.(?:msg|srv))"', cmake))
    assert built == {f'{path.parent.name}/{path.name}' for path in FILES}


FIELDS = {
    msg.MemoryEntry: {'id', 'type', 'text', 'confidence', 'effective_confidence',
                      'first_seen', 'last_reinforced', 'observation_count', 'tags'},
    msg.ContextBlock: {'rrn', 'stamp', 'text', 'entries', 'peer_entries', 'framing',
                       'relevant_ids', 'left_out_ids'},
    msg.PeerContext: {'rrn', 'sent_at', 'entries', 'signature'},
    srv.GetContext.Request: {'token_budget', 'include_peers', 'min_confidence', 'query'},
    srv.GetContext.Response: {'success', 'message', 'text', 'entries', 'peer_entries',
                              'framing', 'relevant_ids', 'left_out_ids'},
    srv.Dream.Response: {'success', 'message', 'created', 'reinforced', 'resolved', 'pruned',
                         'consumed', 'report_json', 'summary'},
    srv.ExchangePeerContext.Request: {'request'},
    srv.ExchangePeerContext.Response: {'success', 'message', 'response'},
    srv.Learn.Request: {'text', 'type'},
    srv.Recall.Request: {'query', 'k'},
    srv.Forget.Request: {'query', 'reason'},
    srv.Undo.Request: {'dream_id', 'undo_id', 'to', 'reason', 'actor', 'dry_run', 'force'},
    srv.Undo.Response: {'success', 'message', 'undo_id', 'entries_changed', 'records_changed',
                        'report_json', 'entries_kept', 'records_kept'},
}


def test_get_context_framing_comes_after_the_old_fields():
    """Issue 38, points 6, 4 and 5, issue 39, point 5: fields added for the brain come last."""
    response = list(srv.GetContext.Response.get_fields_and_field_types())
    assert response[-5:] == ['framing', 'active_now', 'active_now_text', 'relevant_ids',
                             'left_out_ids']
    assert list(srv.GetContext.Request.get_fields_and_field_types())[-1] == 'query'
    assert list(msg.ContextBlock.get_fields_and_field_types())[-3:] == [
        'framing', 'relevant_ids', 'left_out_ids']


def test_undo_fields_added_later_come_after_the_old_ones():
    """Callers of the first ~/undo (positional or recorded requests) keep working."""
    assert list(srv.Undo.Request.get_fields_and_field_types()) == [
        'dream_id', 'undo_id', 'to', 'reason', 'actor', 'dry_run', 'force']
    assert list(srv.Undo.Response.get_fields_and_field_types()) == [
        'success', 'message', 'undo_id', 'entries_changed', 'records_changed', 'report_json',
        'entries_kept', 'records_kept']


@pytest.mark.parametrize('message_type', list(FIELDS), ids=lambda cls: cls.__qualname__)
def test_the_generated_types_have_the_fields_users_call_them_with(message_type):
    fields = set(message_type.get_fields_and_field_types())
    assert FIELDS[message_type] <= fields, FIELDS[message_type] - fields


def _ros2_topic_pub_fields(message, values: dict):
    """
    Fill ``message`` from YAML ``values`` by the rule of ``ros2 topic pub``.

    rosidl_runtime_py.set_message_fields (what ros2cli calls; not installed here) keeps a
    value of the field's own type and otherwise passes it to that type: ``bytes(value)`` for
    a byte field. Nested messages and lists of them are filled the same way.
    """
    from diagnostic_msgs.msg import DiagnosticStatus
    for name, value in values.items():
        current = getattr(message, name)
        if name == 'status':
            value = [_ros2_topic_pub_fields(DiagnosticStatus(), item) for item in value]
        elif type(value) is not type(current):
            value = type(current)(value)
        setattr(message, name, value)
    return message


def _readme_diagnostics_example() -> str:
    readme = (REPO / 'README.md').read_text(encoding='utf-8').replace('\\\n', ' ')
    [line] = [line for line in readme.splitlines()
              if line.startswith('ros2 topic pub') and '/diagnostics' in line]
    return line


def test_the_readmes_diagnostics_example_reaches_the_node_as_an_error():
    """Issue 26.15: ``level: 2`` would be published as OK; the README's example is ERROR."""
    import shlex
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.serialization import serialize_message
    import yaml
    from robot_memory.ros.convert import diagnostic_statuses
    words = shlex.split(_readme_diagnostics_example())
    assert words[4:6] == ['/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray'], words
    fields = yaml.safe_load(words[-1])
    array = _ros2_topic_pub_fields(DiagnosticArray(), fields)
    [status] = diagnostic_statuses(serialize_message(array))  # the node's own reader
    assert status[0] == 2 and status[1] == 'base: left encoder', status
    # The trap the README warns of: the bare number is not the byte 2.
    fields['status'][0]['level'] = 2
    with pytest.raises((AssertionError, TypeError, ValueError)):
        array = _ros2_topic_pub_fields(DiagnosticArray(), fields)
        assert diagnostic_statuses(serialize_message(array))[0][0] == 2
