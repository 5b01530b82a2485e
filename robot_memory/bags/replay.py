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
Replaying recordings into the memory, on the recording's own clock.

Messages of ``/diagnostics``, ``/rosout`` (ROS 1: or ``/rosout_agg``) and the configured
telemetry topics become observations by memory_node's own rules
(``observations.from_statuses`` / ``log_record`` / ``telemetry``), stamped with their
recorded time, oldest first across recordings. Every nightly dream the recording crosses
runs at its own time (``schedule.next_nightly``), so a month of bags builds the memory
that month would have built. What was taken is recorded in the evidence database in the
transaction of the observations: by recording and topic (``replay_taken``) and by message
(``replay_seen``: its own stamp and a tag of its topic and bytes, see ``content_key``).
So overlap is decided by content: replaying again adds nothing twice, an interrupted
replay resumes with what it had not written, a message that another recording gave
already is not taken again, and another device's messages of the same hours are taken.
"""

import contextlib
import dataclasses
import datetime as dt
import fcntl
import heapq
import os
import pathlib
import time
from typing import Callable
from typing import Optional
from typing import TYPE_CHECKING
import zlib

from robot_memory.bags import read
from robot_memory.bags.taken import content_key
from robot_memory.bags.taken import LEGACY  # noqa: F401 - the reasons a replay names
from robot_memory.bags.taken import OTHER  # noqa: F401
from robot_memory.bags.taken import OWN  # noqa: F401
from robot_memory.bags.taken import Progress
from robot_memory.common import cdr
from robot_memory.common.fileio import FILE_MODE
from robot_memory.common.fileio import side_file
from robot_memory.common.timeutil import format_iso
from robot_memory.dream import autodream
from robot_memory.dream.schedule import next_nightly
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence import clock as evidence_clock
from robot_memory.evidence import observations
from robot_memory.evidence import runs

if TYPE_CHECKING:
    from robot_memory.evidence.rules import Rules

FLUSH_MESSAGES = 20_000  # messages between two writes of observations and progress
PROGRESS_S = 0.25  # wall seconds between two progress reports
# Messages between two looks at the wall clock, and so at Ctrl-C: at 4096 a recording of
# fewer messages could not be stopped at all (a look costs 0.1 us a message at 256).
PROGRESS_EVERY = 256
OWN_NODE = 'memory_node'  # memory_node's own health reports and log are not evidence
FUTURE_WHY = ("recorded after this machine's clock (evidence from the future): the recording "
              "robot's clock ran ahead, or this one is behind; fix the clock and replay again")
SIM_TIME_WHY = ('recorded before 2000: simulation time (use_sim_time) or a clock not yet set, '
                "which cannot place evidence in the robot's life")
UNSTAMPED = read.datetime_of(0)  # kept observations' stamp: each report is added at its own


@dataclasses.dataclass
class ReplayOptions:
    """What to take and how: topics, remapping, nightly dream time, what to accept."""

    telemetry: list = dataclasses.field(default_factory=list)  # (topic, type name)
    remap: dict = dataclasses.field(default_factory=dict)  # node topic -> recorded topic
    nightly: Optional[tuple] = (3, 0)  # local (hour, minute); None: no dreams
    dream_config: object = None
    proposals: object = None
    rules: Optional['Rules'] = None
    rrn: Optional[str] = None  # the memory's robot
    accept_robot: bool = False
    msg_dirs: tuple = ()
    dream: Optional[Callable] = None  # autodream.dream, or a caller's wrapper of it (bench)
    # The wall clock of the machine replaying: messages recorded after it (evidence.clock)
    # are skipped, not taken, with a count (None: no check).
    now: Optional[dt.datetime] = None


@dataclasses.dataclass
class ReplaySummary:
    """What a replay read, took, skipped (and why) and dreamed."""

    recordings: list = dataclasses.field(default_factory=list)  # {path, kind, messages, ...}
    refused: list = dataclasses.field(default_factory=list)  # (path, why)
    taken: dict = dataclasses.field(default_factory=dict)  # topic -> messages taken
    observations: int = 0
    rows: int = 0
    skipped: dict = dataclasses.field(default_factory=dict)  # why -> messages
    notes: list = dataclasses.field(default_factory=list)
    dreams: list = dataclasses.field(default_factory=list)  # DreamReport
    dreams_skipped: int = 0  # nights up to the memory's last dream: not dreamed (again)
    early: int = 0  # messages taken that were recorded before the memory's last dream
    last_dream: Optional[dt.datetime] = None  # the memory's, before this replay
    first: Optional[dt.datetime] = None
    last: Optional[dt.datetime] = None
    waiting: int = 0  # observations after the last dream, for the next one
    statuses: int = 0  # diagnostic statuses read from the messages taken
    elapsed_s: float = 0.0  # wall seconds reading and taking messages (dreams included)
    interrupted: bool = False  # stopped by Interrupted: what was taken before it is kept

    def skip(self, why: str, count: int = 1) -> None:
        """Count messages not taken, by reason."""
        self.skipped[why] = self.skipped.get(why, 0) + count

    @property
    def created(self) -> int:
        """Entries the dreams created."""
        return sum(len(report.created) for report in self.dreams)

    @property
    def reinforced(self) -> int:
        """Entries the dreams reinforced."""
        return sum(len(report.reinforced) for report in self.dreams)

    @property
    def resolved(self) -> int:
        """Entries the dreams resolved."""
        return sum(len(report.resolved) for report in self.dreams)

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return {'recordings': self.recordings,
                'refused': [{'path': path, 'why': why} for path, why in self.refused],
                'taken': self.taken, 'observations': self.observations, 'rows': self.rows,
                'evidence_kept': self.rows,
                'skipped': self.skipped, 'notes': self.notes,
                'first': format_iso(self.first) if self.first else None,
                'last': format_iso(self.last) if self.last else None,
                'dreams': [report.to_dict() for report in self.dreams],
                'dreams_skipped': self.dreams_skipped,
                'taken_before_last_dream': self.early, 'created': self.created,
                'reinforced': self.reinforced, 'resolved': self.resolved,
                'waiting_for_next_dream': self.waiting, 'statuses': self.statuses,
                'elapsed_s': round(self.elapsed_s, 3), 'statuses_per_s': self.per_second(),
                'interrupted': self.interrupted}

    def per_second(self) -> Optional[int]:
        """Diagnostic statuses taken a wall second (None before any time passed)."""
        return round(self.statuses / self.elapsed_s) if self.elapsed_s > 0 else None

    def lines(self) -> list:
        """Return the closing summary for people, one line each."""
        out = []
        for item in self.recordings:
            out.append(f'read {item["path"]} ({item["kind"]}, {item["messages"]} messages, '
                       f'{item["start"]} to {item["end"]})')
        for path, why in self.refused:
            out.append(f'refused {path}: {why}')
        if self.first is not None and self.last is not None:  # set together
            out.append(f'recorded time {format_iso(self.first)} to {format_iso(self.last)}')
        for topic, count in sorted(self.taken.items()):
            out.append(f'  {topic}: {count} messages taken')
        out.append(f'{self.observations} observations, {self.rows} '
                   f'piece{"" if self.rows == 1 else "s"} of evidence kept')
        if self.elapsed_s > 0:
            out.append(f'{self.statuses:,} diagnostic statuses in {self.elapsed_s:.1f} s: '
                       f'{self.per_second():,} statuses/s')
        for why, count in sorted(self.skipped.items()):
            out.append(f'  skipped {count}: {why}')
        for note in self.notes:
            out.append(f'note: {note}')
        out.append(f'dreams run: {len(self.dreams)} (created {self.created}, reinforced '
                   f'{self.reinforced}, resolved {self.resolved})' +
                   (f"; {self.dreams_skipped} nights up to the memory's last dream "
                    f'({format_iso(self.last_dream)}) were not dreamed (again)'
                    if self.dreams_skipped and self.last_dream else ''))
        if self.early and self.last_dream:
            out.append(f"{self.early} messages taken were recorded before this memory's last "
                       f'dream ({format_iso(self.last_dream)}): they go to its next dream, not '
                       'to the nights they were recorded in; replay into a new memory (--file) '
                       'to dream each night at its time')
        if self.waiting:
            out.append(f'{self.waiting} observations after the last nightly dream wait for the '
                       'next dream (robot-memory dream, or memory_node)')
        return out


TWICE = 'the same recording given twice in one replay (a copy): taken once'


class Interrupted(Exception):
    """Raised by a replay's ``progress`` to stop it between two messages (Ctrl-C)."""


def _plan(bag: read.Bag, options: ReplayOptions, summary: ReplaySummary) -> dict:
    """
    Return {recorded topic: (role, node topic, type, stamp offset, topic CRC)} to take.

    The last two make a message's ``content_key``.
    """
    topics = bag.topics()
    counts = bag.counts()
    plan: dict = {}

    def recorded(topic):
        return options.remap.get(topic, topic)

    typed = bag.topic_types()
    handled = set()  # topics whose every message is taken or counted here

    def evidence(topic, role, node_topic, allowed):
        # A topic may carry another type beside the evidence's (a stray publisher): the
        # evidence is taken and the others counted; the type registered last used to decide.
        kinds = typed.get(topic, {})
        chosen = next((kind for kind in sorted(kinds) if kind in allowed), None)
        if chosen is not None:
            plan[topic] = (role, node_topic, chosen)
        for kind, count in sorted(kinds.items()):
            if kind != chosen and count:
                summary.skip(f'{topic}: messages of type {kind}, not '
                             f'{chosen or " or ".join(sorted(allowed))}', count)
        handled.add(topic)

    diagnostics = recorded('/diagnostics')
    evidence(diagnostics, 'diagnostic', '/diagnostics', read.DIAGNOSTICS_TYPES)
    rosout = recorded('/rosout')
    if bag.ros1 and rosout not in topics:
        rosout = recorded('/rosout_agg')
    evidence(rosout, 'log', '/rosout', read.LOG_TYPES)
    for topic, type_name in options.telemetry:
        name = recorded(topic)
        kinds = typed.get(name, {})
        if not kinds or name in plan:
            continue
        handled.add(name)
        for kind, count in sorted(kinds.items()):
            if kind != type_name and count:
                summary.skip(f'{name}: recorded as {kind}, configured as {type_name}', count)
        if type_name not in kinds:
            continue
        if not bag.knows(type_name):
            summary.skip(f'{name}: {read.missing_type_message(type_name)}', kinds[type_name])
            continue
        plan[name] = ('telemetry', topic, type_name)
    for topic, (role, node_topic, type_name) in plan.items():  # how its messages are known
        plan[topic] = (role, node_topic, type_name, bag.stamp_offset(type_name),
                       zlib.crc32(node_topic.encode()))
    for topic, count in counts.items():
        if topic not in handled and count:
            summary.skip('topics that are not evidence (not /diagnostics, /rosout or configured '
                         'telemetry)', count)
    for node_topic, recorded_topic in sorted(options.remap.items()):
        if recorded_topic not in topics:  # a remap naming what is not there explains a skip
            held = sorted(topics)
            summary.notes.append(
                f'{bag.path}: --remap {node_topic}:={recorded_topic}: the recording has no '
                f'{recorded_topic}, so nothing was taken as {node_topic} (its topics: '
                f'{", ".join(held[:8])}{", ..." if len(held) > 8 else ""})')
    return plan


def _check(bag: read.Bag, options: ReplayOptions, robots: dict) -> Optional[str]:
    """Why ``bag`` is refused (None when it is taken)."""
    if not bag.message_count:
        if bag.unread_bytes > 0:
            return (f'the recording was cut short (a power cut?) inside its first chunk or '
                    f'message: the {bag.unread_bytes:,} bytes after its header hold no whole '
                    'message, so nothing in it can be read')
        return 'the recording holds no messages'
    if bag.end_ns <= read.EARLIEST_NS:  # every message: one early message is skipped alone
        stamped = format_iso(read.datetime_of(bag.start_ns))
        return (f'its messages are stamped {stamped}, before 2000: it was recorded on '
                'simulation time (use_sim_time), which cannot place evidence in the '
                "robot's life; record with the wall clock")
    if options.accept_robot:
        return None
    rrn = bag.robot.get('rrn')
    if rrn and options.rrn and options.rrn != 'RRN-UNSET' and rrn != options.rrn:
        return (f'it was recorded on robot {rrn}, and this memory is {options.rrn}; pass '
                '--accept-other-robot to take it anyway')
    host = bag.robot.get('hostname')
    hosts = {robot for robot in robots.values() if robot.startswith('host:')}
    if host and hosts and f'host:{host}' not in hosts:
        return (f'it was recorded on host {host}, and this memory was replayed from '
                f'{", ".join(sorted(item[5:] for item in hosts))}; pass --accept-other-robot '
                'to take it anyway')
    return None


def replay(paths, store, memory, options: ReplayOptions,
           progress: Optional[Callable[[dict], None]] = None,
           clock: Callable[[], float] = time.monotonic) -> ReplaySummary:
    """
    Replay the recordings at ``paths`` into ``store`` and ``memory``; return the summary.

    ``progress(state)`` is called now and then with messages, bytes and total figures;
    ``clock`` is the wall clock of those reports (the memory's clock is the recording's).
    One replay into a memory at a time (ReplayBusy): two at once each found a message not
    yet taken and took it, so what both recordings hold was counted twice.
    """
    with _only_replay(store):
        return _replay(paths, store, memory, options, progress, clock)


class ReplayBusy(RobotMemoryError, ValueError):
    """Another replay into the same memory is running."""


@contextlib.contextmanager
def _only_replay(store):
    """Hold ``<database>.replay.lock`` (no lock for a database in memory: a dry run)."""
    path = getattr(store, 'path', None)
    if path is None:
        yield
        return
    lock = side_file(pathlib.Path(path), '.replay.lock')
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReplayBusy(f'another replay into {pathlib.Path(path).name} is running: wait '
                             'for it to end (or stop it), then run this one; nothing was taken '
                             'by this one') from None
        yield
    finally:
        os.close(fd)


def _replay(paths, store, memory, options: ReplayOptions, progress, clock) -> ReplaySummary:
    summary = ReplaySummary()
    found, problems = read.find(paths)
    summary.refused.extend((problem.split(': ', 1)[0], problem.split(': ', 1)[-1])
                           for problem in problems)
    state = Progress(store.db.conn)
    bags: list = []
    plans: list = []
    try:
        for path in found:
            try:
                bag = read.open_bag(path, options.msg_dirs)
            except read.RecordingError as error:
                summary.refused.append((str(path), str(error).removeprefix(f'{path}: ')))
                continue
            twin = next((other for other in bags if other.identity == bag.identity), None)
            if twin is not None:  # a copy given too: its messages would count twice
                summary.skip(TWICE, bag.message_count)
                summary.notes.append(f'{path}: the same recording as {twin.path} (the same '
                                     'bytes): taken once')
                bag.close()
                continue
            why = _check(bag, options, state.robots)
            if why is not None:
                summary.refused.append((str(path), why))
                bag.close()
                continue
            robot = f'rrn:{bag.robot["rrn"]}' if 'rrn' in bag.robot else (
                f'host:{bag.robot["hostname"]}' if 'hostname' in bag.robot else '')
            state.robots.setdefault(bag.identity, robot)
            state.new_bags[bag.identity] = (str(path), bag.kind, robot,
                                            format_iso(read.datetime_of(bag.start_ns)))
            cut = bag.cut_note()
            if cut is not None:
                summary.notes.append(f'{path}: {cut}')
            bags.append(bag)
            plans.append(_plan(bag, options, summary))
            summary.recordings.append({
                'path': str(path), 'kind': bag.kind, 'messages': bag.message_count,
                'bytes': bag.size_bytes, 'unread_bytes': max(bag.unread_bytes, 0),
                'start': format_iso(read.datetime_of(bag.start_ns)),
                'end': format_iso(read.datetime_of(bag.end_ns - 1))})
        _run(bags, plans, store, memory, options, state, summary, progress, clock)
    finally:
        for bag in bags:
            summary.notes.extend(f'{bag.path}: {note}' for note in bag.notes)
            bag.close()
    return summary


def status_reader(store, skip_prefix: str) -> cdr.StatusCache:
    """
    Return what reads DiagnosticArrays into (observation, evidence) for ``store.add_prepared``.

    Each distinct status is read, checked and classified once, into an observation and its
    evidence that each message adds at its own stamp: robots repeat their statuses every
    second (cdr.StatusCache). Statuses named ``skip_prefix...`` are left out; one that
    cannot be stored gives its ObservationError.
    """
    prepare = store.prepare
    reads_values = store.rules.reads_values

    def derive(status):
        item = observations.from_status(UNSTAMPED, status, skip_prefix)
        if item is None or isinstance(item, observations.ObservationError):
            return item
        return item, prepare(item)

    def rederive(previous, status, changed):
        # A status whose numbers changed (a voltage): the evidence kept with new numbers,
        # and the observation kept, which add_prepared reads only for what did not change.
        if type(previous) is tuple and changed is not None and not reads_values:
            evidence = runs.renumbered(previous[1], status[4], changed)
            if evidence is not None:
                return previous[0], evidence
        return derive(status)

    return cdr.StatusCache(derive, rederive=rederive)


def _stream(index: int, bag: read.Bag, plan: dict):
    for ns, topic, type_name, raw in bag.messages(plan, {topic: step[2]
                                                         for topic, step in plan.items()}):
        yield ns, index, topic, type_name, raw


def _run(bags, plans, store, memory, options, state, summary, progress, clock) -> None:
    rules = options.rules or store.rules
    last_dream = summary.last_dream = store.dream_cursor().last_dream_at
    early_ns = read.ns_of(last_dream) if last_dream is not None else -1
    total = sum(sum(bag.counts().get(topic, 0) for topic in plan)
                for bag, plan in zip(bags, plans))
    total_bytes = sum(bag.size_bytes for bag in bags)
    done = done_bytes = since_flush = 0
    next_report = clock()
    started = next_report
    next_dream = None
    # The nights after the newest message an earlier replay took are due too: replaying
    # each day's recording as it comes dreams the nights between, as one replay of all would.
    taken_until = max((taken[1] for taken in state.taken.values()), default=None)
    ties: dict = {}
    taken = summary.taken
    statuses = status_reader(store, f'{OWN_NODE}: ')
    future_ns = (read.ns_of(evidence_clock.latest_allowed(options.now))
                 if options.now is not None else None)

    def flush():
        summary.rows += store.flush(then=state.write)

    merged = heapq.merge(*(_stream(index, bag, plan)
                           for index, (bag, plan) in enumerate(zip(bags, plans))))
    for ns, index, topic, type_name, raw in merged:
        bag = bags[index]
        why = _out_of_time(ns, future_ns)
        if why is not None:
            summary.skip(why)
            continue
        if next_dream is None and options.nightly is not None:
            since = ns if taken_until is None else min(ns, taken_until)
            next_dream = next_nightly(read.datetime_of(since), *options.nightly)
            summary.first = read.datetime_of(ns)
        elif summary.first is None:
            summary.first = read.datetime_of(ns)
        if next_dream is not None and ns >= read.ns_of(next_dream):
            next_dream, last_dream = _dreams_due(ns, next_dream, last_dream, flush, store,
                                                 memory, rules, options, summary)
        if progress is not None and not done % PROGRESS_EVERY and clock() >= next_report:
            next_report = clock() + PROGRESS_S
            try:  # between two messages: an Interrupted stops here, all before it written
                progress({'messages': done, 'total': total, 'bytes': done_bytes,
                          'total_bytes': total_bytes, 'elapsed': clock() - started,
                          'at': read.datetime_of(ns)})
            except Interrupted:
                summary.interrupted = True
                break
        done += 1
        done_bytes += len(raw)
        summary.last = stamp = read.datetime_of(ns)
        at_ns = 0
        if state.legacy:  # the place among messages at one time, as replays before kept it
            at_ns = _tie(ties, bag.identity, topic, ns)
        role, node_topic, _, offset, topic_crc = plans[index][topic]
        key = content_key(bag, raw, ns, offset, topic_crc)
        why = state.seen(bag.identity, topic, ns, at_ns, key)
        if why is not None:
            summary.skip(why)
            if len(state.pending) >= FLUSH_MESSAGES:  # a resumed replay's repeats met
                flush()
                since_flush = 0
            continue
        if not _take(role, bag, raw, topic, type_name, node_topic, stamp, store, statuses,
                     summary):
            continue  # skipped, saying why; not recorded taken, so a later replay may take it
        state.take(bag.identity, topic, ns, key)
        summary.early += ns < early_ns  # taken from before the last dream
        taken[topic] = taken.get(topic, 0) + 1
        since_flush += 1
        if since_flush >= FLUSH_MESSAGES:
            flush()
            since_flush = 0
    flush()
    summary.elapsed_s = clock() - started
    if progress is not None:
        progress({'messages': done, 'total': total, 'bytes': done_bytes,
                  'total_bytes': total_bytes, 'elapsed': summary.elapsed_s, 'at': summary.last,
                  'final': True})


def _out_of_time(ns: int, future_ns: Optional[int]) -> Optional[str]:
    """Why a message's time keeps it out, or None: after this machine's clock, before 2000."""
    if future_ns is not None and ns > future_ns:  # not taken: a replay later takes it
        return FUTURE_WHY
    if ns < read.EARLIEST_NS:  # a message before the robot's clock was set, say
        return SIM_TIME_WHY
    return None


def _dreams_due(ns, next_dream, last_dream, flush, store, memory, rules, options, summary):
    """Run (or count as done before) every nightly dream at or before ``ns``; the next two."""
    while next_dream is not None and ns >= read.ns_of(next_dream):
        if last_dream is not None and next_dream <= last_dream:
            summary.dreams_skipped += 1
        else:
            flush()
            report = (options.dream or autodream.dream)(
                store, memory, next_dream, rules, options.dream_config, actor='replay',
                proposals=options.proposals)
            summary.dreams.append(report)
            summary.notes.extend(report.problems)
            summary.waiting = 0
            if not report.clock_backwards:
                last_dream = next_dream
        next_dream = next_nightly(next_dream, *options.nightly)
    return next_dream, last_dream


def _tie(ties: dict, identity, topic: str, ns: int) -> int:
    """Return a message's place among the topic's messages at one time (legacy replay state)."""
    tie = ties.get((identity, topic))
    at_ns = tie[1] + 1 if tie is not None and tie[0] == ns else 0
    ties[(identity, topic)] = (ns, at_ns)
    return at_ns


def _log(bag, raw, type_name: str):
    """Return a recorded log message; text that is not UTF-8 read as memory_node reads it."""
    try:
        return bag.decode(raw, type_name)
    except Exception:  # noqa: B902 - the library refuses a string that is not UTF-8
        if bag.ros1 or type_name != 'rcl_interfaces/msg/Log':
            raise
        try:
            return cdr.log_record(raw)
        except cdr.CdrError:
            pass
        raise


def _take(role, bag, raw, topic, type_name, node_topic, stamp, store, statuses,
          summary) -> bool:
    """Add one message's evidence to the store; False (``summary`` says why) if refused."""
    try:
        if role == 'diagnostic':
            reports = bag.statuses(raw, type_name, statuses)
            taken_now = [report for report in reports if type(report) is tuple]
            if len(taken_now) < len(reports):
                for report in reports:
                    if type(report) is not tuple:
                        summary.skip(f'refused: {report}')
            store.add_prepared(stamp.timestamp(), taken_now)
            summary.statuses += len(reports)
            summary.observations += len(taken_now)
            summary.waiting += len(taken_now)
        elif role == 'log':
            item = observations.log_record(_log(bag, raw, type_name), stamp, OWN_NODE,
                                           ros1=bag.ros1)
            if item is not None:
                store.add(item)
                summary.observations += 1
                summary.waiting += 1
        else:
            parsed = observations.telemetry(node_topic, type_name,
                                            bag.decode(raw, type_name), stamp)
            store.add(parsed.observation)
            summary.observations += 1
            summary.waiting += 1
    except (observations.ObservationError, read.RecordingError) as error:
        summary.skip(f'refused: {error}')
        return False
    except Exception as error:  # noqa: B902 - a message the library cannot deserialize
        summary.skip(f'{topic}: a message that cannot be deserialized ({type(error).__name__})')
        return False
    return True
