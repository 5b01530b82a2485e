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

"""A health task returns a typed HealthStatus; HealthTasks makes DiagnosticStatus messages."""

from diagnostic_msgs.msg import DiagnosticStatus
import pytest

from robot_memory.ros.health import ERROR
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import HealthTasks
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN


def test_tasks_become_named_diagnostic_statuses_in_order():
    """Each task's level, message and values reach its DiagnosticStatus, named by prefix."""
    tasks = HealthTasks('memory_node', 'robot-1')
    tasks.add('disk', lambda: HealthStatus(WARN, 'almost full', {'free_bytes': 12}))
    tasks.add('dream', lambda: HealthStatus(OK, 'no dream yet'))
    disk, dream = tasks.statuses()
    assert tasks.names() == ['disk', 'dream']
    assert (disk.name, disk.level, disk.message, disk.hardware_id) == \
        ('memory_node: disk', WARN, 'almost full', 'robot-1')
    assert [(pair.key, pair.value) for pair in disk.values] == [('free_bytes', '12')]
    assert (dream.level, dream.values) == (OK, [])


def test_a_report_that_did_not_change_is_not_made_anew_and_one_that_did_is():
    """The message of an unchanged report is reused; any change of what it says is seen."""
    said = {'report': HealthStatus(OK, 'ingesting', {'received': 1, 'path': 'a'})}
    tasks = HealthTasks('memory_node', 'robot-1')
    tasks.add('evidence', lambda: said['report'])
    [first] = tasks.statuses()
    said['report'] = HealthStatus(OK, 'ingesting', {'received': 1, 'path': 'a'})
    assert tasks.statuses()[0] is first
    for report in (HealthStatus(OK, 'ingesting', {'received': 2, 'path': 'a'}),
                   HealthStatus(OK, 'ingesting', {'received': True, 'path': 'a'}),  # == 1
                   HealthStatus(OK, 'ingesting', {'path': 'a', 'received': True}),
                   HealthStatus(WARN, 'ingesting', {'path': 'a', 'received': True}),
                   HealthStatus(WARN, 'lost some', {'path': 'a', 'received': True})):
        said['report'] = report
        [status] = tasks.statuses()
        assert status is not first
        assert (status.level, status.message) == (report.level, report.message)
        assert [(pair.key, pair.value) for pair in status.values] == \
            [(key, str(value)) for key, value in report.values.items()]
        first = status
    values = {'received': 3}  # a dict the task changes after handing it out
    said['report'] = HealthStatus(OK, 'ingesting', values)
    assert [(pair.key, pair.value) for pair in tasks.statuses()[0].values] == [('received', '3')]
    values['received'] = 4
    assert [(pair.key, pair.value) for pair in tasks.statuses()[0].values] == [('received', '4')]


@pytest.mark.parametrize('level, message, refused', [
    (b'\x07', 'fine', 'not one of OK, WARN, ERROR, STALE'),
    (2, 'fine', 'not one of OK, WARN, ERROR, STALE'),
    (ERROR, None, 'a health message is text'),
])
def test_a_status_refuses_what_no_diagnostic_status_can_say(level, message, refused):
    """A level outside diagnostic_msgs' four, or a message that is not text, is refused."""
    with pytest.raises(ValueError, match=refused):
        HealthStatus(level, message)


def test_stale_is_a_level_too():
    """STALE, the fourth level, is accepted."""
    assert HealthStatus(DiagnosticStatus.STALE, 'no data').level == DiagnosticStatus.STALE


def test_a_task_that_raises_reports_error_and_the_others_still_report():
    """A folder made unreadable once made one task raise and silenced every status."""
    def unreadable():
        raise PermissionError(13, 'Permission denied')

    tasks = HealthTasks('memory_node', 'robot-1')
    tasks.add('memory file', unreadable)
    tasks.add('dream', lambda: HealthStatus(OK, 'no dream yet'))
    failed, dream = tasks.statuses()
    assert failed.level == ERROR and 'PermissionError' in failed.message
    assert 'Permission denied' in failed.message
    assert (dream.level, dream.message) == (OK, 'no dream yet')
