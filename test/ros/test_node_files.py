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
memory_node's files, seen from outside.

A symlinked memory file and database, one database per memory file, and a link to
nothing refused at start-up.

The installed ``memory_node`` runs in its own process (``ros_harness.NodeProcess``); the
test seeds evidence into the database the node will use, calls ``~/dream`` over DDS and
looks at the files on disk.
"""

import datetime as dt
import os
import sqlite3


from robot_memory.common.timeutil import UTC
from robot_memory.evidence import observations
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.srv import Dream
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import wait_ready
from support.samples import MEMORY


def seed(database, hardware_id) -> None:
    """One WARN diagnostic of ``hardware_id`` in ``database`` (through a link too)."""
    store = EvidenceStore(database, Rules.default())
    try:
        store.add(observations.diagnostic(dt.datetime.now(UTC), 'base: lidar', hardware_id, 1,
                                          'dropped 12 scans in the last second'))
    finally:
        store.close()


def dream(probe, node) -> Dream.Response:
    """Call the node's ~/dream and return the reply (which must succeed)."""
    reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
    assert reply.success, reply.message
    return reply


def test_the_node_writes_through_a_symlinked_memory_file_and_database(tmp_path, probe):
    disk = tmp_path / 'persist'
    disk.mkdir()
    target = disk / 'rover.md'
    target.write_text(MEMORY, encoding='utf-8')
    real_db = disk / 'evidence.db'
    links = tmp_path / 'opencastor'
    links.mkdir()
    link = links / 'robot-memory.md'
    link.symlink_to(target)
    db_link = links / 'robot-memory.db'
    db_link.symlink_to(real_db)
    EvidenceStore(real_db).close()
    seed(db_link, 'lidar_front')
    node = NodeProcess(tmp_path, 'it_links', memory_file=str(link), database_file=str(db_link),
                       rrn='RRN-000000000001').start()
    try:
        wait_ready(probe, node)
        status = health(probe, 'memory file', where='RRN-000000000001')
        assert status['path'] == str(link) and status['written_to'] == str(target), status
        assert status['database'] == str(real_db), status
        reply = dream(probe, node)
        assert len(reply.created) == 1, reply.message
        assert (disk / 'evidence.db-wal').exists(), 'the WAL lies beside the target'
        assert not (links / 'robot-memory.db-wal').exists()
        # The partition goes away under the running node: a clear refusal, nothing written.
        target.rename(disk / 'rover.md.away')
        refused = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert not refused.success and 'is a symbolic link to' in refused.message and \
            'which does not exist' in refused.message, refused.message
        assert link.is_symlink() and not target.exists()
        (disk / 'rover.md.away').rename(target)
    finally:
        assert node.stop() == 0, node.log()
    assert link.is_symlink() and os.path.realpath(link) == str(target), node.log()
    assert db_link.is_symlink() and os.path.realpath(db_link) == str(real_db)
    document = MemoryFile(link).load(dt.datetime.now(UTC)).document
    assert reply.created[0] in {entry.id for entry in document.entries}
    assert document.body.endswith(b'\n# Notes\n')
    # The April entries have decayed by now: the dream pruned some, archived beside the target.
    assert reply.pruned, reply.message
    archived = (disk / 'rover.md.archive.jsonl').read_text(encoding='utf-8')
    assert all(entry_id in archived for entry_id in reply.pruned)
    assert sorted(path.name for path in links.iterdir()) == ['robot-memory.db', 'robot-memory.md']
    assert (disk / 'rover.md.lock').exists()
    with sqlite3.connect(real_db) as db:
        assert db.execute('SELECT count(*) FROM dreams').fetchone()[0] == 1


def test_two_nodes_with_memory_files_in_one_directory_keep_their_own_evidence(tmp_path, probe):
    shared = tmp_path / 'shared'
    shared.mkdir()
    base = NodeProcess(tmp_path, 'it_base', memory_file=str(shared / 'robot-memory.md'),
                       rrn='RRN-000000000051')
    arm = NodeProcess(tmp_path, 'it_arm', memory_file=str(shared / 'arm.md'),
                      rrn='RRN-000000000052')
    seed(shared / 'robot-memory.db', 'lidar_front')
    seed(shared / 'arm.db', 'gripper_servo')
    base.start()
    arm.start()
    try:
        wait_ready(probe, base)
        wait_ready(probe, arm)
        base_reply = dream(probe, base)
        arm_reply = dream(probe, arm)
    finally:
        codes = (base.stop(), arm.stop())
        assert codes == (0, 0), (base.log(), arm.log())
    now = dt.datetime.now(UTC)
    [base_entry] = MemoryFile(shared / 'robot-memory.md').load(now).document.entries
    [arm_entry] = MemoryFile(shared / 'arm.md').load(now).document.entries
    assert list(base_reply.created) == [base_entry.id] and 'lidar_front' in base_entry.text
    assert list(arm_reply.created) == [arm_entry.id] and 'gripper_servo' in arm_entry.text
    assert 'evidence ' + str(shared / 'arm.db') in arm.log()


def test_a_memory_file_linked_to_nothing_stops_the_node_with_a_reason(tmp_path):
    link = tmp_path / 'robot-memory.md'
    link.symlink_to(tmp_path / 'unmounted' / 'robot-memory.md')
    node = NodeProcess(tmp_path, 'it_dangling').start()
    try:
        assert node.wait_exit() == 2, node.log()
    finally:
        node.stop()  # only if it is still running
    log = node.log()
    assert 'is a symbolic link to' in log and 'which does not exist' in log, log
    assert link.is_symlink() and not (tmp_path / 'unmounted').exists()


def test_a_hand_written_file_with_a_typo_is_left_for_its_writer_and_the_node_serves_on(
        tmp_path, probe):
    # What an operator's typo before the first dream does: no snapshot exists to restore
    # the file's entries from, so the dream is refused naming the line; nothing is written
    # over the file, the node keeps serving, and after the fix the dream takes all in.
    memory = tmp_path / 'robot-memory.md'
    typo = MEMORY.replace('     confidence: 0.65', '   confidence: 0.65 ]', 1)
    memory.write_text(typo, encoding='utf-8')
    seed(tmp_path / 'robot-memory.db', 'lidar_typo')
    node = NodeProcess(tmp_path, 'it_typo', memory_file=str(memory),
                       rrn='RRN-000000000001').start()
    try:
        wait_ready(probe, node)
        refused = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert not refused.success, refused.message
        assert f'{memory}:' in refused.message and 'left untouched' in refused.message
        assert memory.read_text(encoding='utf-8') == typo
        assert list(tmp_path.glob('robot-memory.md.corrupt-*')) == []
        memory.write_text(MEMORY, encoding='utf-8')
        reply = dream(probe, node)
        assert len(reply.created) == 1, reply.message
    finally:
        assert node.stop() == 0, node.log()
    entries = {entry.id for entry in MemoryFile(memory).load(dt.datetime.now(UTC)).document.entries}
    assert set(reply.created) <= entries
    # The sample's entries were last reinforced in April: decayed since, some are pruned
    # (archived), none is lost.
    assert {'mem-high', 'mem-mid', 'mem-low', 'mem-weak', 'mem-done'} <= \
        entries | set(reply.pruned), (entries, reply.pruned)


def test_an_entry_quarantined_by_a_peer_expiry_is_still_reported_by_the_next_dream(
        tmp_path, probe):
    # The sample's peer blocks are long silent: the first expiry look (2 s after start)
    # rewrites the file and quarantines the bad entry before any dream reads it.
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(MEMORY.replace('confidence: 0.65', 'confidence: 1.65', 1),
                      encoding='utf-8')
    node = NodeProcess(tmp_path, 'it_expiry', memory_file=str(memory),
                       rrn='RRN-000000000001').start()
    try:
        wait_ready(probe, node)
        assert wait_for(lambda: 'expiring silent peers: entries[1] quarantined' in node.log(),
                        20.0), node.log()[-3000:]
        first = dream(probe, node)
        assert '2 problems: entries[1] quarantined: confidence' in first.message, first.message
    finally:
        assert node.stop() == 0, node.log()


def test_a_dream_with_problems_is_logged_as_a_warning_and_the_next_one_as_info(tmp_path, probe):
    # One log call site per severity: rclpy (Jazzy) refuses a call site whose severity
    # changes between calls, and the dream that had then succeeded answered "failed".
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(MEMORY.replace('confidence: 0.65', 'confidence: 1.65', 1),
                      encoding='utf-8')
    node = NodeProcess(tmp_path, 'it_problems', memory_file=str(memory),
                       rrn='RRN-000000000001').start()
    try:
        wait_ready(probe, node)
        first = dream(probe, node)
        assert '2 problems: entries[1] quarantined: confidence' in first.message, first.message
        assert 'quarantined mem-mid' in first.summary, first.summary
        seed(tmp_path / 'robot-memory.db', 'lidar_problems')
        second = dream(probe, node)
        assert 'problem' not in second.message, second.message
    finally:
        assert node.stop() == 0, node.log()
    log = node.log()
    assert 'WARN' in log and '2 problems: entries[1] quarantined' in log, log[-3000:]
