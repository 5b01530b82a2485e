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

"""Substrate.once: a request retried with its request_id has its effect once, same reply."""

import datetime as dt

import pytest

from robot_memory.substrate import Substrate
from robot_memory.substrate import substrate_store
from robot_memory.substrate import SubstrateError

NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def substrate(tmp_path):
    """Return a substrate in a real database file."""
    with Substrate(tmp_path / 'robot-memory.db') as opened:
        yield opened


def _learn(substrate, text, request_id, now=NOW):
    def act():
        result = substrate.learn(text, now=now, actor='test')
        return {'id': result.record_id, 'action': result.action}
    return substrate.once(request_id, 'learn', {'text': text}, now, act)


def test_a_retry_replays_the_first_reply_and_learns_nothing_more(substrate):
    first = _learn(substrate, 'The mop is in the utility closet', 'req-1')
    again = _learn(substrate, 'The mop is in the utility closet', 'req-1')
    assert first == {'id': first['id'], 'action': 'created', 'replayed': False}
    assert again == {**first, 'replayed': True}
    assert substrate.count() == 1
    history = [event.action for event in substrate.history(first['id'])]
    assert history == ['create'], history  # no reinforcement from the retry


def test_the_same_text_without_or_with_a_new_request_id_is_learned_again(substrate):
    first = _learn(substrate, 'The mop is in the utility closet', 'req-1')
    second = _learn(substrate, 'The mop is in the utility closet', 'req-2')
    assert second['action'] == 'reinforced' and second['id'] == first['id']
    assert not second['replayed']


def test_a_request_id_reused_for_another_request_is_refused(substrate):
    _learn(substrate, 'The mop is in the utility closet', 'req-1')
    with pytest.raises(SubstrateError, match=r"request_id 'req-1' was already used"):
        _learn(substrate, 'The bucket is in the garage', 'req-1')
    with pytest.raises(SubstrateError, match='already used for another learn request'):
        substrate.once('req-1', 'forget', {'target': 'mop'}, NOW, lambda: {})
    assert substrate.count() == 1


def test_a_refusal_is_not_kept_and_the_effect_rolls_back_with_it(substrate):
    def half_done():
        substrate.learn('Half-learned fact about the dock', now=NOW, actor='test')
        raise SubstrateError('something after the write failed')

    with pytest.raises(SubstrateError, match='after the write'):
        substrate.once('req-9', 'learn', {'text': 'x'}, NOW, half_done)
    assert substrate.count() == 0  # the learn inside rolled back with the refusal
    ok = substrate.once('req-9', 'learn', {'text': 'x'}, NOW, lambda: {'fine': True})
    assert ok == {'fine': True, 'replayed': False}


@pytest.mark.parametrize('request_id', ['', '   ', 'x' * 129, 'bad\nid', None])
def test_a_bad_request_id_is_refused_saying_what_to_give(substrate, request_id):
    with pytest.raises(SubstrateError, match='request_id'):
        substrate.once(request_id, 'learn', {}, NOW, lambda: {})


def test_the_window_is_bounded_by_count_and_age(substrate, monkeypatch):
    monkeypatch.setattr(substrate_store, 'REQUEST_WINDOW', 3)
    for number in range(5):
        substrate.once(f'req-{number}', 'learn', {'n': number}, NOW, lambda: {'ok': True})
    kept = [row[0] for row in substrate.db.conn.execute(
        'SELECT request_id FROM substrate_requests ORDER BY seq')]
    assert kept == ['req-2', 'req-3', 'req-4']
    later = NOW + dt.timedelta(seconds=substrate_store.REQUEST_WINDOW_S + 1)
    substrate.once('req-late', 'learn', {}, later, lambda: {'ok': True})
    kept = [row[0] for row in substrate.db.conn.execute('SELECT request_id FROM '
                                                        'substrate_requests')]
    assert kept == ['req-late']
    # Out of the window, an old id runs again.
    assert substrate.once('req-0', 'learn', {'n': 0}, later, lambda: {'ok': 2}) == \
        {'ok': 2, 'replayed': False}


def test_replies_survive_reopening_the_database(tmp_path):
    with Substrate(tmp_path / 'robot-memory.db') as first:
        reply = _learn(first, 'The charger is behind the kitchen door', 'req-1')
    with Substrate(tmp_path / 'robot-memory.db') as second:
        assert _learn(second, 'The charger is behind the kitchen door', 'req-1') == \
            {**reply, 'replayed': True}
        assert '0002_substrate_requests' in second.applied_migrations()
