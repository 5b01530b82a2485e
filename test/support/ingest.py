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

"""Evidence for ``ingest`` tests: report lines of a robot's days, and what a database holds."""

import datetime as dt
import json

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceStore

START = dt.datetime(2026, 6, 1, tzinfo=UTC)


def report_lines(days: float, every_s: float = 20.0) -> list:
    """Three statuses (one faulty for an hour every three, one flapping) and a logger."""
    lines = []
    for tick in range(int(days * 86400 / every_s)):
        at = (START + dt.timedelta(seconds=tick * every_s)).isoformat()
        hour = tick * every_s // 3600
        for slot, (name, faulty) in enumerate((('motor: left', hour % 3 == 0),
                                               ('lidar', tick % 40 < 3),
                                               ('battery', False))):
            lines.append({'stamp': at, 'source': 'diagnostic', 'name': name,
                          'hardware_id': f'hw{slot}', 'level': 2 if faulty else 0,
                          'message': 'overcurrent' if faulty else 'ok',
                          'values': {'temperature': str(40 + tick % 7), 'mode': 'auto'}})
        if tick % 90 == 0:
            lines.append({'stamp': at, 'source': 'log', 'name': 'planner', 'level': 40,
                          'msg': f'no path to goal {tick % 4}'})
    return [json.dumps(line) + '\n' for line in lines]


def evidence(directory) -> tuple:
    """(pieces of evidence, their sum per source key and severity) of a robot's database."""
    with EvidenceStore(directory / 'robot-memory.db') as store:
        per_key = store.db.execute('SELECT source_key, severity, sum(count), min(stamp), '
                                   'max(coalesce(end_stamp, stamp)) FROM observations '
                                   'GROUP BY 1, 2 ORDER BY 1, 2').fetchall()
        return store.observation_count(), [tuple(row) for row in per_key]
