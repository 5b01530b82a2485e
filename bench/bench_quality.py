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
Memory quality: what a robot learns from its own diagnostics, against planted causes.

Each profile in ``bench/profiles/`` (a robot's statuses, made from public driver code and
users' reports, plus planted causes: intermittent, time-of-day, state-tied, constant,
transient, fixed, returning, flapping, storm, changing ids, incident) is replayed for
``--days`` at one status set every ``--period`` seconds (1 s: diagnostic_updater's rate) on
a compressed clock, through the code the node uses: ``observations.from_dict`` (what
``robot-memory ingest`` and the ROS edge build), ``EvidenceStore.add`` and a nightly
``autodream.dream`` at 03:00 local time, with the default rules. After each dream the
400-token context block is built and every line traced back to a planted cause through
the entry's signature links. One JSON line per profile:

``fault_recall``       planted recurring faults whose entry reached the block, in any of
                       its own sections (goal >= 0.95)
``false_entries``      entries no planted cause explains (goal <= 1 a profile-month)
``entries_per_cause``  entries made per cause that made any (goal 1.0); ``by_cause`` each
``nights_to_inject``   nights from a fault's first night to its first night in the block
``labelled``           routine or constant conditions whose entry says so (goal: all)
``with_what``          planted causes tied to a state (``while`` in the profile) whose entry
                       says ``only while`` that state; ``with_what_false`` entries that name
                       a state their cause is not tied to
``by_how_much``        planted causes with bad values (``values`` in the profile) whose entry
                       states, for one of them, a range holding every planted bad value
                       (``Actual frequency (Hz) 3.1-4.6 against 7.8-8``), of ``with_values``
                       whose entry is in the memory file at the end (``with_values_gone``:
                       those whose entry was pruned, so nothing states it any more)
``block_share``        share of the block's lines that are planted faults or correctly
                       labelled conditions (mean over nights; final night)
``evidence_bytes_per_day`` database growth a robot-day (goal <= 5 MB), ``ratio`` to the
                       same day's input as JSON lines (the baseline)
``condition_recall``, ``false_conditions``, ``advice_stated``, ``advice_safe``: learned
                       conditions against planted ones, in a store of their own on the
                       profile's clock (``quality_conditions.py``)
``dream_s``            a night's dream, median and max (goal <= 2 s), ``ratio`` to one
                       ``GROUP BY signature`` over the same night's rows

The node's CPU share is measured by ``bench_node.py``, not here.
``--from-bag mcap|sqlite3|ros1`` writes each profile's stream into a bag of that format
(``robot_memory.testing.bag_writer``) and takes it through ``robot-memory replay``'s code, on the
profile's local clock: the same figures, from bags (``from_bag`` says which).

Usage: ``python bench/bench_quality.py [--quick] [--days N] [--period S] [--profile NAME]
[--from-bag FORMAT] [--print-block]``.
"""

import argparse
import datetime as dt
import json
import math
import pathlib
import re
import sqlite3
import statistics
import sys
import tempfile
import time

try:
    from robot_memory.dream.autodream import dream
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.dream.autodream import dream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import from_dict
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.context import build_context
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.settings import DreamConfig

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / 'profiles'))
import generate  # noqa: E402, I100 - the profiles' generator lives beside them
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import quality_conditions  # noqa: E402, I100 - beside this file
import quality_controls  # noqa: E402, I100 - issue 38's figures, beside this file

START = dt.date(2026, 6, 1)
DREAM_HOUR = 3
BUDGET = 400
CONFIG = DreamConfig(rrn='RRN-000000000001')
_WORD = re.compile(r'[A-Za-z]{3,}')
_PLACEHOLDER = re.compile(r'\{[a-z_]+\}\s*[A-Za-z]*')  # an id and the unit after it


class Matcher:
    """Which signature links belong to a planted cause (source key and the message's words)."""

    def __init__(self, plants: list):
        self.keys = []
        for plant in plants:
            for name, hardware_id, _, message in plant.statuses:
                self.keys.append((f'diagnostic|{hardware_id}|{name}', _words(message), plant))
            if plant.log:
                text = _PLACEHOLDER.sub(' ', plant.log['message'])
                self.keys.append((f'log|{plant.log["node"]}', _words(text), plant))

    def cause(self, link: dict):
        """Return the planted cause of one signature link, or None."""
        message = link['signature'][len(link['source_key']) + 1:]  # after source and name
        for key, words, plant in self.keys:
            if link['source_key'] == key and all(word in message for word in words):
                return plant
        return None


def _words(text: str) -> list:
    return _WORD.findall(text)


def db_bytes(path: pathlib.Path) -> int:
    """Bytes the evidence database holds (pages in use), WAL checkpointed first."""
    connection = sqlite3.connect(str(path))
    try:
        connection.execute('PRAGMA wal_checkpoint(TRUNCATE)')
        pages = connection.execute('PRAGMA page_count').fetchone()[0]
        free = connection.execute('PRAGMA freelist_count').fetchone()[0]
        size = connection.execute('PRAGMA page_size').fetchone()[0]
    finally:
        connection.close()
    return (pages - free) * size


def group_by_seconds(path: pathlib.Path, after: int) -> float:
    """Seconds for one GROUP BY signature over the rows after ``after`` (the dream's floor)."""
    connection = sqlite3.connect(str(path))
    try:
        started = time.perf_counter()
        connection.execute('SELECT signature, sum(count), min(stamp), max(stamp) FROM observations '
                           'WHERE id > ? GROUP BY signature', (after,)).fetchall()
        return time.perf_counter() - started
    finally:
        connection.close()


def _json_bytes(data: dict) -> int:
    line = dict(data, stamp=data['stamp'].strftime('%Y-%m-%dT%H:%M:%SZ'))
    return len(json.dumps(line, separators=(',', ':')).encode('utf-8')) + 1


class Night:
    """What one night's block shows, traced to causes."""

    def __init__(self, block, links: dict, matcher: Matcher):
        self.lines = []
        by_entry = {}
        for link in links.values():
            if link['entry_id']:
                by_entry.setdefault(link['entry_id'], []).append(link)
        # Every own line the brain gets: the injected entries, the conditions section and
        # the weak-recent section ("Seen in the last 24 h"); peers are not this robot's.
        for line in block.entries + block.recent:
            causes = {matcher.cause(link) for link in by_entry.get(line.entry.id, ())}
            causes.discard(None)
            self.lines.append((line.entry, causes))

    def good_share(self) -> float:
        """Share of lines that are planted faults or correctly labelled conditions."""
        if not self.lines:
            return 0.0
        good = sum(1 for entry, causes in self.lines
                   if any(_good(entry, plant) for plant in causes))
        return good / len(self.lines)


def _labelled(text: str, plant) -> bool:
    """Whether an entry's text calls the condition what it is (routine or constant)."""
    return plant.expect in text.lower()


def _good(entry, plant) -> bool:
    if plant.expect == 'fault':
        return True
    return plant.expect in ('routine', 'constant') and _labelled(entry.text, plant)


class Nights:
    """Each night's dream, timed, and what it left: the block, links, sizes, new entries."""

    def __init__(self, database: pathlib.Path, matcher, config, blocks: list = None):
        self.database, self.matcher, self.config, self.blocks = database, matcher, config, blocks
        self.dream_times, self.baselines, self.sizes, self.shown = [], [], [], []
        self.created, self.document, self.block = {}, None, None

    def dream(self, store, memory_file, now, run):
        """Flush, time ``run()`` (the night's dream) and record what it left; its report."""
        store.flush()
        self.baselines.append(group_by_seconds(self.database, store.dream_cursor().last_id))
        started = time.perf_counter()
        report = run()
        self.dream_times.append(time.perf_counter() - started)
        links = store.signature_rows()
        for entry_id in report.created:
            causes = {self.matcher.cause(link) for link in links.values()
                      if link['entry_id'] == entry_id}
            causes.discard(None)
            self.created[entry_id] = causes
        quality_controls.person_reviews(store, memory_file, now, self.created)
        self.document = memory_file.load(now).document
        block = build_context(self.document, now, self.config.lifecycle, token_budget=BUDGET)
        self.block = block
        if self.blocks is not None:
            self.blocks.append(block.text)
        self.shown.append(Night(block, links, self.matcher))
        self.sizes.append(db_bytes(self.database))
        return report


def _setting(name: str, days: int) -> tuple:
    """Return a profile's run: the profile, its local start, plants, matcher, config, nights."""
    profile = generate.load(name)
    start = generate.local_midnight(profile, START)
    plants = generate.plants(profile, start, days)
    config = CONFIG.model_copy(update={'timezone': profile.get('timezone', 'UTC')})
    nights = [generate.local_midnight(profile, START + dt.timedelta(days=day))
              + dt.timedelta(hours=DREAM_HOUR) for day in range(1, days + 1)]
    return profile, start, plants, Matcher(plants), config, nights


def run_profile(name: str, days: int, period_s: float, scratch: pathlib.Path,
                blocks: list = None) -> dict:
    """Replay one profile and return its figures (one JSON line); nights' blocks to ``blocks``."""
    profile, start, plants, matcher, config, nights = _setting(name, days)
    database = scratch / f'{name}.db'
    memory = MemoryFile(scratch / f'{name}.md')
    store = EvidenceStore(database, rules=Rules.default())
    night_index, count, first_day_json = 0, 0, 0
    nightly = Nights(database, matcher, config, blocks)
    ingest_s = 0.0
    day_one_end = start.timestamp() + 86400.0

    def night(now):
        nightly.dream(store, memory, now, lambda: dream(store, memory, now, config=config))
        return nightly.document

    document = None
    batch_started = time.perf_counter()
    for stamp, _, data in generate.stream(profile, start, days, period_s):
        while night_index < len(nights) and stamp >= nights[night_index].timestamp():
            ingest_s += time.perf_counter() - batch_started
            document = night(nights[night_index])
            night_index += 1
            batch_started = time.perf_counter()
        if stamp < day_one_end:
            first_day_json += _json_bytes(data)
        store.add(from_dict(data).observation)
        count += 1
    ingest_s += time.perf_counter() - batch_started
    while night_index < len(nights):
        document = night(nights[night_index])
        night_index += 1
    store.close()
    return figures(name, days, period_s, plants, nightly, document, count, ingest_s,
                   first_day_json, start)


def run_profile_from_bag(name: str, days: int, period_s: float, scratch: pathlib.Path,
                         fmt: str, blocks: list = None) -> dict:
    """
    As :func:`run_profile`, with the stream written into a ``fmt`` bag and replayed.

    The bag is written by ``testing.bag_writer`` and taken by ``bags.replay`` (``robot-memory
    replay``'s code) on the profile's local clock (TZ), so its nightly dreams are the
    direct run's nights; the nights after the recording's end are dreamed afterwards, as
    the direct run does. Each dream is recorded as the direct run records it.
    """
    import contextlib
    import os

    from robot_memory.bags import replay
    from robot_memory.testing import bag_writer
    from robot_memory.dream.report import DreamReport
    profile, start, plants, matcher, config, nights = _setting(name, days)
    database = scratch / f'{name}-{fmt}.db'
    memory = MemoryFile(scratch / f'{name}-{fmt}.md')
    first_day_json, day_one_end = 0, start.timestamp() + 86400.0
    nightly, dreamed = Nights(database, matcher, config, blocks), []

    def items():
        nonlocal first_day_json
        for stamp, _, data in generate.stream(profile, start, days, period_s):
            if stamp < day_one_end:
                first_day_json += _json_bytes(data)
            observation = from_dict(data).observation
            yield observation.stamp, None, observation

    bag = bag_writer.write_bag(scratch / (f'{name}.bag' if fmt == 'ros1' else f'{name}-{fmt}'),
                               items(), fmt)

    def night(store, memory_file, now, *args, **kwargs):
        if now < nights[0]:  # the start day's 03:00: the direct run's nights begin a day later
            return DreamReport(now, 'replay', noop=True)
        report = nightly.dream(store, memory_file, now,
                               lambda: dream(store, memory_file, now, *args, **kwargs))
        dreamed.append(now)
        return report

    options = replay.ReplayOptions(nightly=(DREAM_HOUR, 0), dream_config=config,
                                   rules=Rules.default(), dream=night)
    zone = os.environ.get('TZ')
    os.environ['TZ'] = profile.get('timezone', 'UTC')  # the robot's local time: its nights
    time.tzset()
    try:
        with EvidenceStore(database, rules=Rules.default(), batch_size=10**9) as store:
            started = time.perf_counter()
            summary = replay.replay([bag], store, memory, options)
            ingest_s = time.perf_counter() - started - sum(nightly.dream_times)
            if summary.refused or summary.skipped:
                raise RuntimeError(f'replay refused or skipped: {summary.to_dict()}')
            for now in nights:
                if not dreamed or now > dreamed[-1]:
                    night(store, memory, now, Rules.default(), config, actor='replay')
    finally:
        with contextlib.suppress(KeyError):
            del os.environ['TZ']
        if zone is not None:
            os.environ['TZ'] = zone
        time.tzset()
    if dreamed != nights:
        raise RuntimeError(f'the replay dreamed at {dreamed}, the nights are {nights}')
    document = memory.load(nights[-1]).document
    line = figures(name, days, period_s, plants, nightly, document, summary.observations,
                   ingest_s, first_day_json,
                   start)
    return dict(line, from_bag=fmt)


def figures(name, days, period_s, plants, nightly, document, count, ingest_s,
            first_day_json, start) -> dict:
    """Compute the profile's line from the nights' blocks and the created entries."""
    shown, created, sizes = nightly.shown, nightly.created, nightly.sizes
    dream_times, baselines = nightly.dream_times, nightly.baselines
    faults = sorted({plant.cause for plant in plants if plant.expect == 'fault'
                     and plant.recurring})
    first_night = {}
    for plant in plants:
        if plant.intervals:
            night = math.floor((plant.intervals[0][0] - start.timestamp()) / 86400.0)
            first_night[plant.cause] = min(first_night.get(plant.cause, night), night)
    injected = {}
    for index, night in enumerate(shown):
        for _, causes in night.lines:
            for plant in causes:
                injected.setdefault(plant.cause, index)
    recalled = [cause for cause in faults if cause in injected]
    delays = [injected[cause] - first_night[cause] for cause in recalled]
    by_cause = {}
    for causes in created.values():
        for plant in causes:
            by_cause[plant.cause] = by_cause.get(plant.cause, 0) + 1
    false_entries = sum(1 for causes in created.values() if not causes)
    conditions = sorted({plant.cause for plant in plants
                         if plant.expect in ('routine', 'constant')})
    entries = {entry.id: entry for entry in (document.entries if document else [])}
    labelled = []
    for cause in conditions:
        plant = next(item for item in plants if item.cause == cause)
        texts = [entries[entry_id].text for entry_id, causes in created.items()
                 if entry_id in entries and plant in causes]
        if texts and all(_labelled(text, plant) for text in texts):
            labelled.append(cause)
    tied, false_states = with_what(plants, created, entries)
    ranged = by_how_much(plants, created, entries)
    valued = {plant.cause for entry_id, causes in created.items() if entry_id in entries
              for plant in causes if plant.values}
    retained = min(days, 14)
    per_day = sizes[retained - 1] / retained if sizes else 0
    json_per_day = first_day_json
    dream_median = statistics.median(dream_times) if dream_times else 0.0
    baseline = statistics.median(baselines) if baselines else 0.0
    shares = [night.good_share() for night in shown]
    line = {
        'bench': 'quality', 'profile': name, 'days': days, 'period_s': period_s, 'n': count,
        'ingest_rate': round(count / ingest_s, 1) if ingest_s else None,
        'fault_recall': round(len(recalled) / len(faults), 3) if faults else None,
        'faults': len(faults), 'missed': [cause for cause in faults if cause not in injected],
        'false_entries': false_entries,
        'false_entries_per_month': round(false_entries * 30.0 / days, 2),
        'entries_per_cause': round(sum(by_cause.values()) / len(by_cause), 2)
        if by_cause else None,
        'by_cause': dict(sorted(by_cause.items())),
        'nights_to_inject_median': statistics.median(delays) if delays else None,
        'nights_to_inject_max': max(delays) if delays else None,
        'labelled': len(labelled), 'conditions': len(conditions),
        'with_what': len(tied), 'tied_to_a_state': len({plant.cause for plant in plants
                                                        if plant.during}),
        'with_what_false': false_states,
        'by_how_much': len(ranged),
        'with_values': len(valued), 'without_range': sorted(valued - set(ranged)),
        'with_values_gone': sorted({plant.cause for plant in plants if plant.values} - valued),
        'unlabelled': [cause for cause in conditions if cause not in labelled],
        'block_share': round(statistics.mean(shares), 3) if shares else None,
        'block_share_final': round(shares[-1], 3) if shares else None,
        'block_lines_final': len(shown[-1].lines) if shown else 0,
        'evidence_bytes_per_day': round(per_day),
        'json_bytes_per_day': json_per_day,
        'ratio': round(per_day / json_per_day, 6) if json_per_day else None,
        'dream_s': round(dream_median, 4), 'dream_s_max': round(max(dream_times), 4)
        if dream_times else None,
        'baseline_s': round(baseline, 4),
        'dream_ratio': round(dream_median / baseline, 2) if baseline else None,
    }
    line.update(quality_controls.figures(nightly, plants, document))
    return line


def with_what(plants: list, created: dict, entries: dict) -> tuple:
    """Return (causes whose entry names their state, entries naming a state of no cause)."""
    names = {}
    for plant in plants:
        names.setdefault(plant.cause, set()).update(name for name, *_ in plant.statuses)
    tied, false_states = set(), []
    for entry_id, causes in created.items():
        entry = entries.get(entry_id)
        if entry is None or ' only while ' not in entry.text:
            continue
        named = entry.text.rsplit(' only while ', 1)[1]
        # The entry may drop the node its state's name shares with its own.
        right = {plant.cause for plant in causes
                 if any(named.startswith((f'{name} reports ',
                                          f'{name.partition(": ")[2]} reports '))
                        for state in plant.during for name in names.get(state, ()))}
        tied.update(right)
        if not right:
            false_states.append(entry_id)
    return sorted(tied), len(false_states)


def by_how_much(plants: list, created: dict, entries: dict) -> list:
    """Return the causes whose entry states a range holding all their planted bad values."""
    found = set()
    for entry_id, causes in created.items():
        entry = entries.get(entry_id)
        for plant in causes:
            for values in plant.values.values() if entry is not None else ():
                for key, planted in values.items():
                    planted = [float(item) for item in
                               (planted if isinstance(planted, list) else [planted])]
                    stated = re.search(re.escape(key) + r' (-?[\d.]+)(?:-(-?[\d.]+))? against',
                                       entry.text)
                    if stated is None:
                        continue
                    low = float(stated.group(1))
                    high = float(stated.group(2) or low)
                    if low <= min(planted) * 1.005 and high >= max(planted) * 0.995:
                        found.add(plant.cause)
    return sorted(found)


def main(argv=None) -> int:
    """Run every profile (or one) and print a JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='3 days, one status set every 10 s (for the smoke test)')
    parser.add_argument('--days', type=int, default=None, help='simulated days (default 30)')
    parser.add_argument('--period', type=float, default=None,
                        help='seconds between status sets (default 1)')
    parser.add_argument('--profile', action='append', choices=generate.profile_names(),
                        help='run only this profile (repeatable)')
    parser.add_argument('--from-bag', choices=('mcap', 'sqlite3', 'ros1'),
                        help="write each profile's stream into a bag of this format and "
                             'take it through robot-memory replay')
    parser.add_argument('--print-block', action='store_true',
                        help="print each profile's last 400-token block to stderr")
    args = parser.parse_args(argv)
    days = args.days or (3 if args.quick else 30)
    period = args.period or (10.0 if args.quick else 1.0)
    if days < 1 or period <= 0:
        parser.error('--days must be at least 1 and --period positive')
    with tempfile.TemporaryDirectory(prefix='bench-quality-') as scratch:
        for name in args.profile or generate.profile_names():
            blocks = []
            if args.from_bag:
                line = run_profile_from_bag(name, days, period, pathlib.Path(scratch),
                                            args.from_bag, blocks)
            else:
                line = run_profile(name, days, period, pathlib.Path(scratch), blocks)
            _, start, *_, config, nights = _setting(name, days)
            line.update(quality_conditions.run(name, start, nights, days, period,
                                               pathlib.Path(scratch), config))
            print(json.dumps(line), flush=True)
            if args.print_block and blocks:
                print(f'{name}, night {len(blocks)}:\n{blocks[-1]}\n', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
