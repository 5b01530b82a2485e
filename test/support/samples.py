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

"""Sample memory files and fixed moments that several test files share."""

import datetime as dt
import pathlib
import re

from robot_memory.common.timeutil import UTC

# A memory file of every band, a resolved entry and a peer block, as a person would write it.
MEMORY = """---
schema_version: "1.0"
rrn: RRN-000000000001
last_updated: 2026-04-01T02:00:00Z
entries:
  - {id: mem-high, type: hardware_observation, text: "Left wheel encoder intermittent",
     confidence: 0.92, first_seen: 2026-03-28T14:00:00Z, last_reinforced: 2026-04-01T02:00:00Z,
     observation_count: 14, tags: [wheel]}
  - {id: mem-mid, type: environment_note, text: "Kitchen doorway has 3cm lip",
     confidence: 0.65, first_seen: 2026-03-20T09:12:00Z, last_reinforced: 2026-04-01T02:00:00Z,
     observation_count: 5}
  - {id: mem-low, type: behavior_pattern, text: "Prefer the east corridor after dark",
     confidence: 0.35, first_seen: 2026-03-30T22:40:00Z, last_reinforced: 2026-04-01T02:00:00Z,
     observation_count: 2}
  - {id: mem-weak, type: environment_note, text: "Hallway lamp flickers",
     confidence: 0.05, first_seen: 2026-03-30T22:40:00Z, last_reinforced: 2026-04-01T02:00:00Z,
     observation_count: 1}
  - {id: mem-done, type: resolved, text: "Battery contacts corroded (cleaned)",
     confidence: 0.8, first_seen: 2026-03-10T08:00:00Z, last_reinforced: 2026-04-01T02:00:00Z,
     observation_count: 6}
peer_context:
  - rrn: RRN-000000000005
    last_synced: 2026-04-01T02:00:00Z
    entries:
      - {id: mem-peer-b1c2, type: environment_note, confidence: 0.75,
         text: "Alex reports east corridor blocked by construction barrier"}
---

# Notes
"""
AT = '2026-04-01T02:00:00Z'

# The typed memory tests' clock.
NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)


_HEX_WORD = re.compile('[0-9a-f]+')
_UUID = re.compile(rb'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')


def leaks(data: bytes, words) -> list:
    """
    Return the words found in ``data``, in UTF-8 or any case.

    A word made only of hex digits ('4412') counts where no hex digit touches it and not
    inside a UUID: the keyed hashes, key ids and record UUIDs the store writes as hex text
    hold such a run by chance (a four-digit code in about one database in 20; a UUID's group
    of four, 'c811-4711-a0dc', failed a full run), and plaintext would not be inside one.
    """
    lowered = data.lower()
    without_uuids = _UUID.sub(b' ', lowered)
    found = []
    for word in words:
        encoded = re.escape(word.lower().encode('utf-8'))
        searched = lowered
        if _HEX_WORD.fullmatch(word.lower()):
            encoded = rb'(?<![0-9a-f])' + encoded + rb'(?![0-9a-f])'
            searched = without_uuids
        if re.search(encoded, searched):
            found.append(word)
    return found


# The example of RCAN Robot Memory Schema 1.0 §3.2, verbatim (unquoted timestamps).
SPEC_EXAMPLE = """---
schema_version: "1.0"
rrn: RRN-000000000001
last_updated: 2026-04-01T02:00:00Z
entries:
  - id: mem-a3f9c1d2
    type: hardware_observation
    text: "Left wheel encoder intermittent under sustained load — prefer speeds ≤0.3m/s"
    confidence: 0.92
    first_seen: 2026-03-28T14:00:00Z
    last_reinforced: 2026-04-01T02:00:00Z
    observation_count: 14
    tags: [wheel, encoder, navigation]
---
"""

# The prompt-injection corpus: strings aimed at a model, one a line, escapes as \\uXXXX.
CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'data' / 'prompt_injections.txt'


def _decode(line: str) -> str:
    line = re.sub(r'\\u([0-9a-fA-F]{4})', lambda match: chr(int(match.group(1), 16)), line)
    return line.replace('\\n', '\n')


def corpus() -> list:
    """Return the injection strings of the corpus, escapes decoded."""
    lines = CORPUS.read_text(encoding='utf-8').split('\n')
    return [_decode(line) for line in lines if line.strip() and not line.startswith('#')]


# A file with everything RCAN allows around the entries: peer_context, unknown keys, a body.
RICH = """---
schema_version: "1.0"
rrn: RRN-000000000001
last_updated: 2026-04-01T02:00:00Z
fleet: warehouse-7
entries:
  - id: mem-a3f9c1d2
    type: hardware_observation
    text: "Left wheel encoder intermittent"
    confidence: 0.92
    first_seen: 2026-03-28T14:00:00Z
    last_reinforced: 2026-04-01T02:00:00Z
    observation_count: 14
    tags: [wheel]
    severity: high
    source: {topic: /diagnostics, count: 3}
peer_context:
  - rrn: RRN-000000000005
    last_synced: 2026-04-01T01:00:00Z
    site: north
    entries:
      - id: mem-peer-b1c2
        type: environment_note
        text: "Alex reports east corridor blocked by construction barrier"
        confidence: 0.75
        tags: [navigation, peer]
        reporter: alex
operator_notes:
  - check wheels monthly
  - {owner: ops, ticket: 42}
---
"""


# The front matter of a hand-written file, and a block-style entry as a person writes it.
HEADER = ['---', 'schema_version: "1.0"', 'rrn: RRN-000000000001',
          'last_updated: 2026-04-01T02:00:00Z', 'entries:']


def yaml_entry(index, confidence='0.5', text=None, entry_id=None):
    """Seven lines of a block-style YAML entry, as a person would write it."""
    return [f'  - id: {entry_id or f"mem-{index:04d}"}',
            '    type: environment_note',
            f'    text: "{text or f"note {index}"}"',
            f'    confidence: {confidence}',
            '    first_seen: 2026-03-28T14:00:00Z',
            '    last_reinforced: 2026-04-01T02:00:00Z',
            '    observation_count: 1']


def file_bytes(lines, body='\nbody\n'):
    """Return the bytes of a memory file of ``lines`` of front matter and ``body``."""
    return ('\n'.join(lines) + '\n---\n' + body).encode('utf-8')
