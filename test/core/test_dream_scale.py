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


"""The dream's shortcuts for thousands of signatures give what comparing every pair gave."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from robot_memory.dream.restate import device
from robot_memory.dream.restate import incident_partner
from robot_memory.dream.restate import Partners
from robot_memory.dream.restate import start_and_stop_together

HARDWARE = ('base', 'dock', '')
# Episodes that start and stop together (or not) with each other's.
EPISODES = st.lists(st.sampled_from([[0.0, 600.0], [30.0, 650.0], [5000.0, 5100.0],
                                     [9000.0, 9500.0], [9040.0, 9600.0], [0.0, 30000.0]]),
                    min_size=1, max_size=4, unique_by=lambda item: item[0])


def all_pairs_partner(signature, source_key, episodes, candidates):
    """incident_partner as it stood: every candidate looked at, in signature order."""
    own = episodes.get(signature)
    hardware = device(source_key)
    if not own or not hardware:
        return None
    for other in sorted(candidates):
        if (candidates[other] != source_key and hardware == device(candidates[other])
                and start_and_stop_together(own, episodes.get(other, ()))):
            return other
    return None


STATUS = st.tuples(st.integers(0, 5), st.sampled_from(HARDWARE), EPISODES)


@settings(max_examples=150, deadline=None)
@given(st.lists(STATUS, max_size=12), st.lists(STATUS, max_size=6), st.integers(0, 5),
       st.sampled_from(HARDWARE), EPISODES)
def test_an_incident_partner_is_the_one_comparing_every_candidate_found(
        existing, later, name, hardware, own):
    episodes = {'ours': own}
    candidates, partners = {}, Partners()
    for number, (other, where, found) in enumerate(existing + later):
        signature = f'sig{number % 9}'  # some signatures come back with another key
        episodes[signature] = found
        candidates[signature] = f'diagnostic|{where}|status {other}'
        partners.add(signature, candidates[signature])
    source_key = f'diagnostic|{hardware}|status {name}'
    assert incident_partner('ours', source_key, episodes, partners) == \
        all_pairs_partner('ours', source_key, episodes, candidates)
