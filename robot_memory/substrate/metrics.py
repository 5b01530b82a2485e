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
Metrics of the typed memory (§15.10): growth, salience, usefulness, contradiction, revision.

:func:`measure` reads them from the database into a :class:`Metrics` dataclass;
``Metrics.to_dict()`` is the JSON shape ``Substrate.metrics`` returns (``robot-memory stats
--json``, the node's diagnostics).
"""

import dataclasses
import datetime as dt
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.record_tables import LIVE
from robot_memory.substrate.salience import DAY
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.vocabulary import MEMORY_TYPES


@dataclasses.dataclass(frozen=True)
class Growth:
    """Records created in the window: in all, per day and type, and per day on average."""

    created_in_window: int
    per_day: dict
    rate_per_day: float


@dataclasses.dataclass(frozen=True)
class Salience:
    """Effective salience of the live records: count, mean, percentiles, pinned, histogram."""

    count: int
    mean: Optional[float]
    p10: Optional[float]
    median: Optional[float]
    p90: Optional[float]
    pinned: int
    histogram: dict


@dataclasses.dataclass(frozen=True)
class Retrieval:
    """Recalled hits, recalls, hits rated by feedback and how many were useful."""

    hits: int
    recalls: int
    rated: int
    useful: int
    distinct_records: int
    usefulness: Optional[float]
    useful_share_of_rated: Optional[float]


@dataclasses.dataclass(frozen=True)
class Contradiction:
    """Contested records, ``contradicts`` relations, and contested per live semantic record."""

    contested: int
    contradicts_relations: int
    rate: float


@dataclasses.dataclass(frozen=True)
class Revision:
    """Revisions in the window by action, in all, per day and per record created."""

    in_window: dict
    total_in_window: int
    rate_per_day: float
    per_created: Optional[float]


@dataclasses.dataclass(frozen=True)
class Competence:
    """Live competence records, their success rate and the outcomes counted."""

    records: int
    success_rate: Optional[float]
    outcomes: int


@dataclasses.dataclass(frozen=True)
class PlanReuse:
    """Live plans, their uses (recalls and outcomes) and success rate."""

    plans: int
    uses: int
    success_rate: Optional[float]


@dataclasses.dataclass(frozen=True)
class Metrics:
    """The metrics of one database at one time (``at``) over ``window_days``."""

    at: str
    window_days: float
    records: int
    by_type: dict
    by_status: dict
    growth: Growth
    salience: Salience
    retrieval: Retrieval
    contradiction: Contradiction
    revision: Revision
    competence: Competence
    plan_reuse: PlanReuse

    def to_dict(self) -> dict:
        """Return the metrics as nested dicts (JSON), the shape ``Substrate.metrics`` returns."""
        return dataclasses.asdict(self)


def measure(store, now: dt.datetime, window_days: float = 30.0) -> Metrics:
    """Return the metrics of ``store`` (a Substrate) at ``now`` over the last ``window_days``."""
    now_s = epoch(now)
    if not window_days > 0:
        raise SubstrateError('window_days must be positive')
    since = now_s - window_days * DAY
    conn = store.db.conn
    with store.lock:
        by_type = dict.fromkeys(MEMORY_TYPES, 0)
        by_status: dict[str, int] = {}
        for kind, status, count in conn.execute(
                'SELECT type, status, count(*) FROM substrate_records GROUP BY 1, 2'):
            by_status[status] = by_status.get(status, 0) + count
            if status != 'archived':
                by_type[kind] += count
        per_day: dict = {}
        for day, kind, count in conn.execute(
                "SELECT strftime('%Y-%m-%d', created_at, 'unixepoch'), type, count(*) "
                'FROM substrate_records WHERE created_at >= ? GROUP BY 1, 2 ORDER BY 1',
                (since,)):
            per_day.setdefault(day, {})[kind] = count
        rows = [dict(zip(('salience', 'decay_curve', 'half_life_s', 'decay_floor',
                          'last_reinforced_at', 'pinned', 'created_at', 'max_age_s'), row))
                for row in conn.execute(
                    'SELECT salience, decay_curve, half_life_s, decay_floor, '
                    'last_reinforced_at, pinned, created_at, max_age_s FROM substrate_records '
                    f'WHERE status IN {LIVE}')]
        recalls = conn.execute('SELECT count(*), count(useful), coalesce(sum(useful), 0), '
                               'count(DISTINCT record_id), count(DISTINCT recall_id) '
                               'FROM substrate_recalls').fetchone()
        contested = by_status.get('contested', 0)
        contradicts = conn.execute('SELECT count(*) FROM substrate_relations '
                                   "WHERE predicate = 'contradicts'").fetchone()[0]
        revisions = dict(conn.execute(
            'SELECT action, count(*) FROM substrate_audit WHERE at >= ? AND action IN '
            "('supersede', 'fork', 'contest', 'retract', 'merge', 'affirm') GROUP BY 1",
            (since,)).fetchall())
        created = conn.execute('SELECT count(*) FROM substrate_audit WHERE at >= ? AND '
                               "action = 'create'", (since,)).fetchone()[0]
        outcomes = conn.execute('SELECT type, sum(successes), sum(failures), '
                                'sum(access_count), count(*) FROM substrate_records '
                                "WHERE type IN ('competence', 'plan_graph') AND status IN "
                                f'{LIVE} GROUP BY type').fetchall()
    semantic_live = conn.execute('SELECT count(*) FROM substrate_records WHERE '
                                 f"type = 'semantic' AND status IN {LIVE}").fetchone()[0]
    revised = sum(revisions.values())
    competence, plan_reuse = _outcomes(outcomes)
    return Metrics(
        at=format_iso(now),
        window_days=window_days,
        records=sum(by_status.values()),
        by_type=by_type,
        by_status=by_status,
        growth=Growth(created_in_window=created, per_day=per_day,
                      rate_per_day=round(created / window_days, 6)),
        salience=_salience(rows, now_s),
        retrieval=Retrieval(hits=recalls[0], recalls=recalls[4], rated=recalls[1],
                            useful=recalls[2], distinct_records=recalls[3],
                            usefulness=round(recalls[2] / recalls[0], 6) if recalls[0] else None,
                            useful_share_of_rated=(round(recalls[2] / recalls[1], 6)
                                                   if recalls[1] else None)),
        contradiction=Contradiction(contested=contested, contradicts_relations=contradicts,
                                    rate=round(contested / (semantic_live or 1), 6)
                                    if semantic_live else 0.0),
        revision=Revision(in_window=revisions, total_in_window=revised,
                          rate_per_day=round(revised / window_days, 6),
                          per_created=round(revised / created, 6) if created else None),
        competence=competence,
        plan_reuse=plan_reuse)


def _salience(rows: list, now_s: float) -> Salience:
    """Return the distribution of the rows' effective salience at ``now_s``."""
    import numpy  # lazy: numpy, 100-130 ms and 11 MB of robot-memory recall
    values = numpy.array([row_salience(row, now_s) for row in rows], dtype=float)
    edges = [round(step / 10, 1) for step in range(11)]
    histogram = {f'{low:.1f}-{high:.1f}': 0 for low, high in zip(edges, edges[1:])}
    for value in values:
        index = min(int(value * 10), 9)
        histogram[f'{edges[index]:.1f}-{edges[index + 1]:.1f}'] += 1
    return Salience(count=int(values.size),
                    mean=round(float(values.mean()), 6) if values.size else None,
                    p10=round(float(numpy.percentile(values, 10)), 6) if values.size else None,
                    median=round(float(numpy.median(values)), 6) if values.size else None,
                    p90=round(float(numpy.percentile(values, 90)), 6) if values.size else None,
                    pinned=int(sum(1 for row in rows if row['pinned'])),
                    histogram=histogram)


def _rate(good: int, bad: int) -> Optional[float]:
    return round(good / (good + bad), 6) if good + bad else None


def _outcomes(outcomes: list) -> tuple:
    """Return (Competence, PlanReuse) from (type, successes, failures, accesses, count) rows."""
    stats = {name: {'records': 0, 'successes': 0, 'failures': 0, 'accesses': 0}
             for name in ('competence', 'plan_graph')}
    for kind, successes, failures, accesses, count in outcomes:
        stats[kind] = {'records': count, 'successes': successes or 0,
                       'failures': failures or 0, 'accesses': accesses or 0}
    competence, plans = stats['competence'], stats['plan_graph']
    return (Competence(records=competence['records'],
                       success_rate=_rate(competence['successes'], competence['failures']),
                       outcomes=competence['successes'] + competence['failures']),
            PlanReuse(plans=plans['records'],
                      uses=plans['accesses'] + plans['successes'] + plans['failures'],
                      success_rate=_rate(plans['successes'], plans['failures'])))
