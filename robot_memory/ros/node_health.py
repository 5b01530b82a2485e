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
What memory_node says about itself: the tasks of its health on ``/diagnostics``.

Each task reads the node's state (its cache, worker, clock, last dream) and returns a
:class:`~robot_memory.ros.health.HealthStatus`; :class:`NodeHealth` registers them, in the
order they are published, in the node's :class:`~robot_memory.ros.health.HealthTasks`.
"""

import os
import pathlib
import time

from robot_memory.common import cdr
from robot_memory.common.fileio import side_file
from robot_memory.common.timeutil import format_iso
from robot_memory.dream.archive import ARCHIVE_SUFFIX
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import lifecycle
from robot_memory.ros import node_files
from robot_memory.ros import web_server
from robot_memory.ros.health import ERROR
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import HealthTasks
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN

LOSS_WARN_S = 600.0  # the evidence status stays WARN this long after evidence was lost
NOT_COUNTED = 'not counted'  # lost_in_middleware where rclpy gives no publisher GID
# The store keeps writing to the database it has open, whose file is gone.
DATABASE_MISSING = ('the node still writes to the copy it has open, which is lost when it '
                    'stops: restart the node soon (it starts a new database, and the next dream '
                    'takes robot-memory.md in again)')


class NodeHealth:
    """The health tasks of one memory_node, and what they remember between reports."""

    def __init__(self, node):
        self.node = node
        self._losses_seen = 0
        self._last_loss = None  # monotonic time the loss counters last grew

    def tasks(self) -> HealthTasks:
        """Return the registry of the node's health tasks, in the order they are published."""
        node = self.node
        health = HealthTasks(node.get_name(), node.rrn)
        for name, task in (('memory file', self.memory_file),
                           ('dream', self.dream), ('evidence', self.evidence),
                           ('entries', self.entries), ('peers', node.federation.health),
                           ('typed memory', node.typed_memory.health),
                           ('services', self.services),
                           ('proposals', node.proposals.health),
                           ('files', self.files), ('clock', self.clock)):
            health.add(name, task)
        if node.settings.node.web_port:  # the page's own status: where it serves, or why not
            node.page_health = web_server.PageHealth(node)
            health.add('operator page', node.page_health)
        return health

    def services(self) -> HealthStatus:
        """Return the HealthStatus of the "services" status."""
        node = self.node
        attempted, by_service = node.replies.counts()
        dropped = sum(by_service.values())
        values = {'replies': attempted - dropped, 'replies_dropped': dropped,
                  **{f'dropped {name}': count for name, count in sorted(by_service.items())}}
        last = getattr(self.node, 'last_reply_drop', None)
        if last is not None and time.monotonic() - last < LOSS_WARN_S:
            return HealthStatus(WARN, (f'{dropped} replies dropped since start (' + ', '.join(
                f'~/{name} {count}' for name, count in sorted(by_service.items()))
                + f'); the last {time.monotonic() - last:.0f} s ago'), values)
        return HealthStatus(OK, f'{attempted - dropped} replies sent', values)

    def memory_file(self) -> HealthStatus:
        """Return the HealthStatus of the "memory file" status."""
        node = self.node
        document = node.cache.document(node.clock_.now())
        path = node.memory.path
        written_to = self._written_to()
        problem = node_files.check(node_files.Place('memory file', written_to))
        if node.cache.deleted:
            level, message = ERROR, f'memory file deleted: {node.cache.error}'
        elif node.cache.error:
            level, message = ERROR, f'memory file unreadable: {node.cache.error}'
        elif problem is not None:
            level, message = ERROR, f'memory file not writable: {problem}'
        elif node.last_dream_error:
            level, message = ERROR, f'last write failed: {node.last_dream_error}'
        else:
            level, message = OK, 'writable'
        return HealthStatus(level, message, {
            'path': path, 'entries': len(document.entries),
            'bytes': node_files.size_of(path),
            'last_updated': format_iso(document.last_updated),
            'written_to': written_to, 'database': node.db_path})

    def _written_to(self) -> pathlib.Path:
        """Return where writes of the memory file go (a link's target)."""
        try:
            return self.node.memory.target()
        except (MemoryFileError, OSError):
            return self.node.memory.path  # a link to nothing, a folder not searchable: said

    def places(self) -> list:
        """Return every file and folder the node reads or writes, as node_files.Place."""
        node = self.node
        target = self._written_to()
        places = [node_files.Place('memory file', target),
                  node_files.Place('database', pathlib.Path(node.db_path), required=True,
                                   if_missing=DATABASE_MISSING),
                  node_files.Place('archive', side_file(target, ARCHIVE_SUFFIX)),
                  node_files.Place('summaries', target.parent, folder=True)]
        federation = node.settings.federation
        if federation.private_key_path is not None:
            places.append(node_files.Place('private key', federation.private_key_path,
                                           write=False, required=True))
        places.extend(node_files.Place(f'public key of {rrn}', key, write=False, required=True)
                      for rrn, key in sorted(federation.peer_public_keys.items()))
        return places

    def files(self) -> HealthStatus:
        """Return the HealthStatus of the "files" status: each file and folder, or its problem."""
        states = node_files.check_all(self.places())
        problems = [f'{what}: {state}' for what, state in states.items() if state != 'ok']
        if problems:
            return HealthStatus(ERROR, '; '.join(problems), states)
        return HealthStatus(OK, f'{len(states)} files and folders readable and writable as '
                            'needed', states)

    def clock(self) -> HealthStatus:
        """Return the HealthStatus of the "clock" status: a jump seen, and dreams held."""
        node = self.node
        monotonic = time.monotonic()
        node.release_held(node.schedule.clock_watch.observe(node.clock_.now(), monotonic))
        report = node.schedule.clock_watch.report(monotonic)
        held = node.held
        values = dict(report.values, evidence_held=len(held.items), evidence_moved=held.moved,
                      evidence_refused=held.refused)
        message = report.message
        if held.items:
            message += (f'; {len(held.items)} observations held until the clock is settled '
                        '(their stamps may be in the future)')
        return HealthStatus(WARN if report.level == 'WARN' else OK, message, values)

    def dream(self) -> HealthStatus:
        """Return the HealthStatus of the "dream" status."""
        node = self.node
        nightly = node.schedule.next_nightly
        if node.last_dream is None:
            level, message, dream_at = OK, 'no dream yet', ''
        else:
            dream_at, message = format_iso(node.last_dream[0]), node.last_dream[1]
            level = ERROR if node.last_dream_error else OK
        return HealthStatus(level, message, {
            'last_dream': dream_at,
            'next_nightly': format_iso(nightly) if nightly else 'off',
            'period_s': node.settings.node.dream_period_s,
            'last_held': node.schedule.last_held or ''})

    def evidence(self) -> HealthStatus:
        """Return the HealthStatus of the "evidence" status."""
        node = self.node
        worker = node.worker
        db_bytes = sum(os.path.getsize(name) for name in
                       (str(node.db_path), f'{node.db_path}-wal') if os.path.exists(name))
        unwritable = getattr(worker.store, 'dropped', 0)  # the oldest runs' evidence, disk full
        losses = {'observations dropped (backlog full)': worker.dropped,
                  'pieces of evidence dropped (disk unwritable for too long)': unwritable,
                  'messages lost in the middleware (reader queue overflow)': node._gaps.lost,
                  'samples reported lost by the middleware': node.loss_events}
        lost_in_middleware = node._gaps.lost if node.gaps_counted is not False else NOT_COUNTED
        total = sum(losses.values())
        if total > self._losses_seen:
            self._losses_seen, self._last_loss = total, time.monotonic()
        store_error = getattr(worker.store, 'write_error', None)
        if store_error is not None or (worker.backlog and worker.flush_errors
                                       and worker.last_flush_error is not None):
            level = ERROR
            message = f'cannot store evidence: {store_error or worker.last_flush_error}'
        elif self._last_loss is not None and time.monotonic() - self._last_loss < LOSS_WARN_S:
            level = WARN
            message = ('evidence lost since start: ' + ', '.join(
                f'{count} {what}' for what, count in losses.items() if count)
                + f'; the last loss {time.monotonic() - self._last_loss:.0f} s ago')
        else:
            level, message = OK, 'ingesting'
        if node.gaps_counted is False:
            message += ('; messages lost in the middleware are not counted: this '
                        'rclpy gives no publisher GID with a message (ROS 2 Jazzy)')
        return HealthStatus(level, message, {
            'backlog': worker.backlog, 'received': worker.submitted, 'stored': worker.stored,
            'dropped_backlog_full': worker.dropped, 'dropped_unwritable': unwritable,
            'lost_in_middleware': lost_in_middleware, 'decode_cache': cdr.cached_entries(),
            'middleware_loss_events': node.loss_events, 'refused': node.refused,
            'database_bytes': db_bytes, **worker.books()})

    def entries(self) -> HealthStatus:
        """Return the HealthStatus of the "entries" status: the bands now."""
        node = self.node
        now = node.clock_.now()
        document = node.cache.document(now)
        bands = lifecycle.band_counts(document.entries, now, node.settings.lifecycle)
        bands['peers'] = len(document.peer_context or [])
        return HealthStatus(OK, f'🔴 {bands["high"]} 🟡 {bands["medium"]} 🟢 {bands["low"]}', bands)
