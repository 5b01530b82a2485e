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

"""The robot's outbox: payloads wait on disk, bounded, and a delivery sends only the newest."""

import datetime as dt

from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.outbox import outbox_path
from support.fleet import A
from support.fleet import NOW

DAY = dt.timedelta(days=1)


def test_the_outbox_lives_beside_the_memory_file(tmp_path):
    assert outbox_path(tmp_path / 'robot-memory.md') == tmp_path / 'robot-memory.md.fleet-outbox.db'


def test_payloads_wait_until_acknowledged_and_survive_a_restart(tmp_path):
    path = tmp_path / 'outbox.db'
    with Outbox(path) as outbox:
        for dream_id in (1, 2, 3):
            assert outbox.add(dream_id, NOW + dream_id * DAY, A, 'site',
                              b'payload %d' % dream_id, NOW + dream_id * DAY) == \
                f'dream {dream_id} queued'
    with Outbox(path) as outbox:  # another process, after a reboot
        waiting = outbox.next()
        assert (waiting.dream_id, waiting.envelope) == (3, b'payload 3')
        assert [dream_id for dream_id, _ in waiting.older] == [2, 1]
        outbox.note(waiting, 'no fleet store answered')
        assert outbox.counts() == {'pending': 3, 'acked': 0, 'superseded': 0}
        outbox.acknowledge(waiting, 'stored', NOW + 7 * DAY)
        assert outbox.counts() == {'pending': 0, 'acked': 1, 'superseded': 2}
        assert outbox.next() is None


def test_an_acknowledged_dream_is_not_queued_again_and_a_pending_one_is_replaced(tmp_path):
    with Outbox(tmp_path / 'outbox.db') as outbox:
        outbox.add(4, NOW, A, 'site', b'first', NOW)
        outbox.add(4, NOW, A, 'site', b'second', NOW + DAY)
        assert outbox.next().envelope == b'second'
        outbox.acknowledge(outbox.next(), 'stored', NOW + DAY)
        assert outbox.add(4, NOW, A, 'site', b'third', NOW + 2 * DAY) == \
            'dream 4 was delivered before; nothing new to send'
        assert outbox.next() is None


def test_the_outbox_is_bounded_and_forgets_finished_rows_after_keep_days(tmp_path):
    with Outbox(tmp_path / 'outbox.db', max_pending=3, keep_days=10) as outbox:
        for dream_id in range(1, 8):
            outbox.add(dream_id, NOW + dream_id * DAY, A, 'site', b'x' * 1000, NOW + dream_id * DAY)
        assert outbox.counts() == {'pending': 3, 'acked': 0, 'superseded': 4}
        assert [dream_id for dream_id, _ in outbox.next().older] == [6, 5]
        outbox.acknowledge(outbox.next(), 'stored', NOW + 8 * DAY)
        outbox.add(8, NOW + 8 * DAY, A, 'site', b'y', NOW + 30 * DAY)
        assert outbox.counts() == {'pending': 1, 'acked': 0, 'superseded': 0}


def test_a_new_dream_with_an_old_id_is_queued_after_the_evidence_database_was_set_aside(tmp_path):
    with Outbox(tmp_path / 'outbox.db') as outbox:
        outbox.add(1, NOW, A, 'site', b'before', NOW)
        outbox.acknowledge(outbox.next(), 'stored', NOW)
        # the damaged database set aside, the new one's first dream is id 1 again, a day later
        assert outbox.add(1, NOW + DAY, A, 'site', b'after', NOW + DAY) == 'dream 1 queued'
        waiting = outbox.next()
        assert (waiting.dream_id, waiting.dream_at, waiting.envelope) == \
            (1, (NOW + DAY).timestamp(), b'after')
        outbox.add(2, NOW + 2 * DAY, A, 'site', b'newest', NOW + 2 * DAY)
        assert outbox.next().envelope == b'newest'  # by time, the newest dream goes first
