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
memory_node: robot_memory on the robot (ROS 2).

A thin layer over the core. It converts ``/diagnostics``, ``/rosout`` (ERROR and above)
and configured telemetry topics into observations (``robot_memory.ros.convert``) on a
thread of their own (``robot_memory.ros.ingest``), hands them to the store worker (one
thread owns SQLite), dreams nightly and on ``~/dream``, serves ``~/get_context`` from the
cached memory file with decay evaluated at call time, publishes the block latched on
``~/context`` and its own health on ``/diagnostics`` as named tasks, the way
``diagnostic_updater`` does (``robot_memory.ros.health``). The node holds the objects
that serve the rest: peer federation (``~/exchange_peer_context``, ``~/sync_peers``) in
``robot_memory.ros.peers``, the typed memory services (``~/learn``, ``~/recall``,
``~/forget``) in ``robot_memory.ros.typed_memory`` and the proposals queue
(``~/proposals``) in ``robot_memory.ros.proposal_services``; each is built with what it needs.
``~/undo`` restores the memory file and typed records to an earlier state
(``review.undo``) and publishes the restored block. When it dreams: ``ros.scheduler``.

QoS, on purpose:

* ``/diagnostics`` and ``/rosout`` in: reliable, volatile, depth 1000 — evidence should
  not be lost to a short burst. A longer burst than the node can take overflows the
  reader's history, which drops the oldest waiting samples silently; those are counted
  from the gaps in each publisher's sequence numbers (``evidence.sequence_gaps``) as
  ``lost_in_middleware`` (messages, not statuses) on the evidence status. That needs the
  publisher's GID in the message info, which rclpy gives from Kilted (9.x) on; on Jazzy
  it reads ``not counted`` and the status says why, rather than a 0 claiming no loss.
* telemetry in: best effort, depth 10 (sensor data; compatible with any publisher).
* ``~/context`` out: reliable, transient local, depth 1 — a brain node that starts later
  still receives the current block.
* ``/diagnostics`` out: reliable, volatile, depth 10, like ``diagnostic_updater``.
* service replies: rmw_fastrtps waits up to 2 s (config/fastdds_profiles.xml, loaded by
  ``main``) for a new client's reply reader; one dropped all the same is logged and counted
  on the ``services`` status (``robot_memory.ros.replies``). ``memory_node --help``: usage.
"""

import json
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

from robot_memory.dream import summary as dream_summary
from robot_memory.dream.schedule import MemoryClock
from robot_memory.errors import MemoryFileError
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.evidence_store import open_target
from robot_memory.evidence.rules import Rules
from robot_memory.evidence.worker import StoreWorker
from robot_memory.federation.peer_context import FederationError
from robot_memory.locations import default_db_path
from robot_memory.msg import ContextBlock
from robot_memory.rcan.document_cache import DocumentCache
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.ros import actions as actions_edge
from robot_memory.ros import active_now as active_edge
from robot_memory.ros import blackbox as blackbox_edge
from robot_memory.ros import convert
from robot_memory.ros import parameters
from robot_memory.ros import web_server
from robot_memory.ros.health import HealthThread
from robot_memory.ros.heap import HeapTrimmer
from robot_memory.ros.heap import limit_arenas
from robot_memory.ros.node_evidence import EvidenceIntake
from robot_memory.ros.node_health import NodeHealth
from robot_memory.ros.parameters import declare_parameters
from robot_memory.ros.parameters import parameter_values
from robot_memory.ros.parameters import StartupError
from robot_memory.ros.peers import PeerFederation
from robot_memory.ros.proposal_services import ProposalServices
from robot_memory.ros.refusal import refuse
from robot_memory.ros.replies import ReplyWatch
from robot_memory.ros.replies import use_reply_profile
from robot_memory.ros.scheduler import DreamScheduler
from robot_memory.ros.signals import StopSignals
from robot_memory.ros.type_support import skip_code_generator
from robot_memory.ros.typed_memory import TypedMemoryServices
from robot_memory.settings_file import validate_parameters
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from robot_memory.srv import Undo
from robot_memory.substrate import context_relevance
from robot_memory.substrate import SubstrateError

NODE_NAME = 'robot_memory'
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
DIAGNOSTICS_OUT_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                                 reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.VOLATILE)


def shutdown_summary(worker, flushed: int, db_path) -> str:
    """Return the line the node logs when it stops: what it flushed, and anything it could not."""
    line = (f'robot_memory stopped: flushed {flushed} observations to {db_path}; since start '
            f'{worker.stored} stored, {worker.dropped} dropped (backlog full)')
    if worker.backlog:
        line += (f'; {worker.backlog} NOT stored: '
                 f'{worker.last_flush_error or "the store did not finish in time"}')
    return line


class MemoryNode(EvidenceIntake, Node):
    """The robot_memory node; raises StartupError when it cannot run as configured."""

    def __init__(self, **kwargs):
        skip_code_generator()  # before the first message type is used (see type_support.py)
        super().__init__(NODE_NAME, **kwargs)
        self.replies = ReplyWatch(on_drop=self._reply_dropped)
        declare_parameters(self, self._parameter_overrides)
        try:
            self.settings = validate_parameters(parameter_values(self))
        except ValueError as error:
            raise StartupError(f'invalid parameter {error}') from None
        node_settings = self.settings.node
        self.clock_ = MemoryClock(node_settings.time_scale, node_settings.origin(),
                                  node_settings.clock_offset_s)
        self.rrn = node_settings.rrn
        self.memory = MemoryFile(node_settings.memory_file or None)
        try:
            self.db_path = (open_target(node_settings.database_file)
                            if node_settings.database_file else default_db_path(self.memory.path))
        except (EvidenceError, MemoryFileError) as error:
            raise StartupError(str(error)) from None
        try:
            self.rules = (Rules.load(node_settings.rules_file) if node_settings.rules_file
                          else Rules.default())
        except ValueError as error:
            raise StartupError(f'rules_file: {error}') from None
        telemetry_types = self._telemetry_types()
        self.blackbox = blackbox_edge.start(self)  # None without blackbox_topics
        self.fleet = None
        if node_settings.fleet_connect:
            from robot_memory.ros import fleet_link  # lazy: the fleet, 15 ms and 7 MB, and Zenoh
            self.fleet = fleet_link.start(self)
        self.cache = DocumentCache(self.memory, self.rrn)
        self._init_intake()
        self.last_dream = self.last_dream_error = self.last_write_error = None
        self._state_lock = threading.Lock()

        self.worker = StoreWorker(self._open_store, node_settings.flush_period_s,
                                  node_settings.batch_size, node_settings.max_backlog,
                                  on_error=self._store_error)
        try:
            self.worker.start()
        except (EvidenceError, OSError) as error:
            raise StartupError(f'evidence database {self.db_path}: {error}') from None

        self.add_on_set_parameters_callback(self.parameters_callback)
        services_group = ReentrantCallbackGroup()
        timers_group = MutuallyExclusiveCallbackGroup()
        self._subscribe(telemetry_types)
        self._create_publishers()
        self.create_service(GetContext, '~/get_context', self.get_context_callback,
                            callback_group=services_group)
        self.create_service(Dream, '~/dream', self.dream_callback, callback_group=services_group)
        self.create_service(Undo, '~/undo', self.undo_callback, callback_group=services_group)
        self._build_services(services_group)
        self.health = NodeHealth(self).tasks()
        if self.blackbox is not None:
            self.health.add('black box', self.blackbox.health)
        if self.fleet is not None:
            self.health.add('fleet', self.fleet.health)

        self.schedule = DreamScheduler(self, timers_group)  # dreams and peer tasks, when due
        self.active = active_edge.start(self)  # what is failing now: ~/active_now
        self.actions = actions_edge.start(self)  # aborted goals of action_names
        self.publish_context()
        # Loading the document left about as much freed heap as it keeps: give it back.
        self.heap = HeapTrimmer()
        self.heap.maybe_trim(force=True)
        self.publish_diagnostics()
        self.health_thread = HealthThread(self, self.publish_diagnostics,
                                          node_settings.diagnostics_period_s).start()
        self.ingest.start()
        self.web = web_server.start(self)  # only with web_port set: robot_memory[web]
        kept = dream_summary.latest_summary(self.memory)
        if kept is not None:  # after a restart: the last summary written by any dream
            self.dream_summary_publisher.publish(String(data=kept))
        self.get_logger().info(
            f'robot_memory ready: rrn {self.rrn}, memory {self.memory.path}, evidence '
            f'{self.db_path}, telemetry {[t for t, _, _ in telemetry_types] or "none"}, '
            f'nightly dream {node_settings.dream_time or "off"}'
            + (f', every {node_settings.dream_period_s:g} s' if node_settings.dream_period_s
               else ''))

    def _create_publishers(self) -> None:
        """Create the node's publishers: the context block, the dream summary, its health."""
        self.context_publisher = self.create_publisher(
            ContextBlock, '~/context', LATCHED_QOS)
        # The last dream's summary for people, latched so a late operator tool gets it.
        self.dream_summary_publisher = self.create_publisher(
            String, '~/dream_summary', LATCHED_QOS)
        self.diagnostics_publisher = self.create_publisher(
            DiagnosticArray, '/diagnostics', DIAGNOSTICS_OUT_QOS)
        # Our own health and log records come back on the topics we read: not evidence,
        # and not ours to count as lost.
        self._own_gids = {bytes(info.endpoint_gid) for topic in ('/diagnostics', '/rosout')
                          for info in self.get_publishers_info_by_topic(topic)
                          if (info.node_name, info.node_namespace) == (self.get_name(),
                                                                       self.get_namespace())}

    # ------------------------------------------------------------------ services

    def _build_services(self, services_group) -> None:
        """Build the objects serving federation, typed memory and proposals."""
        def settings():
            return self.settings

        try:
            self.federation = PeerFederation(
                self, settings=settings, clock=self.clock_, memory=self.memory,
                cache=self.cache, rrn=self.rrn, worker=self.worker,
                on_change=self.memory_changed, propose=self._propose_payload,
                services_group=services_group)
        except (FederationError, OSError) as error:
            raise StartupError(f'federation keys: {error}') from None
        # Reentrant: a reply waiting for a slow client's match (up to 2 s, see
        # config/fastdds_profiles.xml) holds one executor thread, not every typed service.
        try:
            self.typed_memory = TypedMemoryServices(
                self, settings=settings, clock=self.clock_, db_path=self.db_path,
                group=ReentrantCallbackGroup())
        except (SubstrateError, ValueError) as error:
            raise StartupError(f'typed memory: {error}') from None
        try:
            self.proposals = ProposalServices(
                self, settings=settings, clock=self.clock_, memory=self.memory, rrn=self.rrn,
                db_path=self.db_path, substrate=lambda: self.typed_memory.substrate,
                on_change=self.memory_changed, on_health_change=self.publish_diagnostics,
                group=ReentrantCallbackGroup())
        except ValueError as error:
            raise StartupError(f'proposals queue: {error}') from None

    def _propose_payload(self, payload, now, actor: str):
        return self.proposals.propose_payload(payload, now, actor)

    def create_service(self, srv_type, srv_name, callback, **kwargs):
        """Node.create_service, with the replies watched for drops (see replies.py)."""
        service = super().create_service(srv_type, srv_name, callback, **kwargs)
        replies = getattr(self, 'replies', None)  # None: rclpy's own parameter services
        return replies.watch(service, srv_name.removeprefix('~/')) if replies else service

    def _reply_dropped(self, service: str, why: str, waited_s: float) -> None:
        self.last_reply_drop = time.monotonic()  # the services status shows it
        self.get_logger().warning(
            f'reply of ~/{service} dropped after waiting {waited_s:.2f} s for the client to '
            f'be matched ({why}); the request was handled, the caller sees a timeout. '
            'Learn and Forget callers can retry with the same request_id without double '
            'counting')

    # ------------------------------------------------------------------ parameters

    def parameters_callback(self, parameters) -> SetParametersResult:
        """Validate a parameter change as a whole; refuse it with the reason."""
        try:
            settings = validate_parameters(parameter_values(self, parameters))
        except ValueError as error:
            return SetParametersResult(successful=False, reason=str(error))
        with self._state_lock:
            old = self.settings.node
            self.settings = settings
        schedule = getattr(self, 'schedule', None)  # None: a change during start-up
        if schedule is not None:
            schedule.settings_changed(old, settings.node)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ store

    def _open_store(self) -> EvidenceStore:
        node = self.settings.node
        # A damaged database is set aside and a new one started; the next dream takes
        # robot-memory.md in again, so nothing in the file is lost.
        return EvidenceStore(self.db_path, self.rules, batch_size=node.batch_size,
                             retention_days=node.retention_days,
                             ok_heartbeat_s=node.ok_heartbeat_s, on_corrupt='set_aside')

    def _store_error(self, error) -> None:
        self.last_write_error = str(error)
        self.get_logger().warning(f'evidence store: {error}', throttle_duration_sec=10.0)

    # ------------------------------------------------------------------ context

    def build_block(self, token_budget=None, include_peers=True, min_confidence=None,
                    query=''):
        """
        Return the context block at the memory clock's now, "Active now" first.

        ``query``: the brain's task; the entries relevant to it by the typed memory's recall
        (its embedder) lead the block (``substrate.context_relevance``).
        """
        now, config = self.clock_.now(), self.settings.lifecycle
        relevant = []
        if query:
            threshold = config.inject_min if min_confidence is None else max(
                config.inject_min, min_confidence)
            relevant = context_relevance.relevant_ids(
                self.cache.document(now), query, now, config, threshold,
                self.typed_memory.substrate.embedder)
        return active_edge.block(self, lambda budget: self.cache.build_context(
            now, config, budget, include_peers, min_confidence, relevant), now, token_budget)

    def memory_changed(self) -> None:
        """Read the memory file again and publish its block (after a change made here)."""
        self.cache.invalidate()
        self.publish_context()

    def publish_context(self) -> None:
        """Publish the current block on ~/context (latched) and log what it leaves out."""
        message = convert.context_message(self.build_block())
        self.context_publisher.publish(message)
        self.get_logger().info(f'context block: {message.summary}')

    def get_context_callback(self, request, response):
        """Answer ~/get_context with decay evaluated now."""
        value = request.min_confidence
        if not (value == 0.0 or 0.0 < value <= 1.0):  # NaN fails both
            return refuse(response, f'min_confidence must be in (0, 1], got {value}; use 0 for '
                                    'the default threshold')
        min_confidence = value if value > 0 else None
        try:
            query = context_relevance.check_query(request.query)
            block = self.build_block(request.token_budget or None, request.include_peers,
                                     min_confidence, query)
        except (RobotMemoryError, ValueError) as error:
            return refuse(response, error)
        message = convert.context_message(block)
        response.success = True
        response.message = message.summary
        if self.cache.error:
            response.message += f'; memory file unreadable, last good copy used: {self.cache.error}'
        response.text = message.text
        response.entries = message.entries
        response.peer_entries = message.peer_entries
        response.recent_entries = message.recent_entries
        response.omitted = message.omitted
        response.below_threshold = message.below_threshold
        response.below_threshold_max = message.below_threshold_max
        response.below_threshold_id = message.below_threshold_id
        response.framing = block.framing
        active_edge.reply(self, response)
        response.relevant_ids = message.relevant_ids
        response.left_out_ids = message.left_out_ids
        return response

    # ------------------------------------------------------------------ dreaming

    def run_dream(self, actor: str, confirm_leap: bool = False):
        """
        Dream on the store thread; publish the new block and health afterwards.

        ``confirm_leap``: a person confirmed the clock's jump forward, so a dream far ahead of
        the last one is accepted (``dream.clock``), as ``robot-memory dream --confirm-leap``.
        """
        now = self.clock_.now()
        settings = self.settings

        def task(store):
            from robot_memory.dream import autodream  # lazy: 14 ms until the first dream
            return autodream.dream(store, self.memory, now, self.rules, settings.dream,
                                   actor=actor, proposals=settings.proposals,
                                   confirm_leap=confirm_leap)

        try:
            report = self.worker.call(task)
        except (RobotMemoryError, OSError, ValueError) as error:
            self.last_dream_error = str(error)
            self.last_dream = (now, f'failed: {error}')
            self.publish_diagnostics()
            raise
        self.last_dream_error = None
        self.last_dream = (now, report.summary())
        if self.fleet is not None:  # its thread seals and sends the payload
            self.fleet.dreamt(report.dream_id, now)
        self.cache.invalidate()
        self.publish_context()
        self.publish_diagnostics()
        if dream_summary.worth_telling(report):
            # A dream that changed nothing leaves the last useful summary on the topic.
            self.dream_summary_publisher.publish(String(data=self.summary_of(report)))
        if report.problems:  # two calls: rclpy refuses one call site changing its severity
            self.get_logger().warning(report.summary())
        else:
            self.get_logger().info(report.summary())
        return report

    def summary_of(self, report) -> str:
        """Return the summary of ``report`` for people (Markdown)."""
        return dream_summary.build_summary(report, self.settings.lifecycle)

    def dream_callback(self, request, response):
        """Answer ~/dream: run a dream now and report what it did."""
        jump = self.schedule.clock_watch.confirm()  # a person asked: the clock is taken as right
        self.release_held()
        if jump is not None:
            self.get_logger().info(f'clock jump {jump.text()} confirmed by a dream asked on '
                                   '~/dream')
        try:
            report = self.run_dream('dream_service', confirm_leap=jump is not None)
        except Exception as error:  # noqa: B902 - converted into the reply
            return refuse(response, error, 'dream failed: ')
        response.success = not (report.clock_backwards or report.clock_leap)
        response.message = report.summary()
        for name in ('created', 'reinforced', 'resolved', 'reopened', 'pruned', 'manual'):
            setattr(response, name, list(getattr(report, name)))
        response.consumed = int(report.consumed)
        response.report_json = json.dumps(report.to_dict(), ensure_ascii=False)
        response.summary = self.summary_of(report)
        return response

    def undo_callback(self, request, response):
        """Answer ~/undo: restore an earlier state; publish the restored block."""
        now = self.clock_.now()
        actor = request.actor.strip() or 'undo_service'
        try:
            if len(actor) > 64:
                raise ValueError(f'actor is {len(actor)} characters; the limit is 64')
            from robot_memory.review import undo  # lazy: undo, then the dream, at the first undo
            options = undo.point_options(request.dream_id, request.undo_id, request.to,
                                         request.force)
            report = self.worker.call(lambda store: undo.undo(
                store, self.memory, now, actor, request.reason, dry_run=request.dry_run,
                words=undo.REQUEST_WORDS, **options))
        except (RobotMemoryError, OSError, ValueError) as error:
            return refuse(response, error, 'undo refused: ')
        if report.undo_id is not None:
            self.cache.invalidate()
            self.publish_context()
            self.publish_diagnostics()
            self.get_logger().info(f'{report.summary()} (by {actor}: {report.reason})')
        response.success = True
        response.message = report.summary()
        response.undo_id = report.undo_id or 0
        response.entries_changed = [change['id'] for change in report.entries]
        response.records_changed = [change['id'] for change in report.records]
        response.report_json = json.dumps(report.to_dict(), ensure_ascii=False)
        response.entries_kept = [item['id'] for item in report.kept if item['kind'] == 'entry']
        response.records_kept = [item['id'] for item in report.kept if item['kind'] == 'record']
        return response

    # ------------------------------------------------------------------ health

    def health_statuses(self) -> list:
        """Return the node's health as DiagnosticStatus messages, one per task."""
        return self.health.statuses()

    def publish_diagnostics(self) -> None:
        """Publish the health statuses on /diagnostics."""
        array = DiagnosticArray(status=self.health_statuses())
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_publisher.publish(array)
        heap = getattr(self, 'heap', None)
        if heap is not None:  # freed heap of reloads and floods, returned every 10 s at most
            heap.maybe_trim()

    def destroy_node(self, stop_signals=None):
        """Stop ingesting, flush all evidence and close the stores, then destroy the node."""
        for thread in (getattr(self, 'health_thread', None), getattr(self, 'web', None)):
            if thread is not None:  # the health reports and the page's server
                thread.stop()
        ingest = getattr(self, 'ingest', None)
        if ingest is not None and not ingest.stop():
            self.get_logger().warning('the ingest thread did not stop within 5 s')
        recorder = getattr(self, 'blackbox', None)
        if recorder is not None:
            recorder.stop()  # before the worker: its last recording is linked
        link = getattr(self, 'fleet', None)
        if link is not None:
            link.stop()  # its thread sends nothing more
        worker = getattr(self, 'worker', None)
        if worker is not None:
            peers = getattr(self, 'federation', None)
            if peers is not None:
                try:
                    peers.flush_unchanged_audit()
                except Exception as error:  # noqa: B902 - reported; shutdown goes on
                    self.get_logger().error(f'audit log not written at shutdown: {error}')
            stored = worker.stored
            worker.stop()
            summary = shutdown_summary(worker, worker.stored - stored, self.db_path)
        for served in (getattr(self, 'typed_memory', None), getattr(self, 'proposals', None)):
            if served is not None:
                served.close()
        logger = self.get_logger()
        destroyed = super().destroy_node()
        if worker is not None:
            # Logged once the node is gone: to the console and the log file, not to /rosout,
            # whose publisher is invalid once SIGINT has shut the context down.
            signals = stop_signals.describe() if stop_signals is not None else ''
            logger.info(summary + (f' (stop signals received: {signals})' if signals else ''))
        return destroyed


def main(args=None) -> int:
    """Entry point of memory_node."""
    if parameters.help_asked(sys.argv if args is None else args):
        return print(parameters.usage()) or 0
    limit_arenas()  # before rclpy and the executor start their threads (see ros/heap.py)
    profile = use_reply_profile()
    signals = StopSignals().install()  # before rclpy.init, whose handlers chain to it
    rclpy.init(args=args)
    node = None
    executor = MultiThreadedExecutor(num_threads=6)
    try:
        node = MemoryNode()
        node.get_logger().info(f'Fast DDS profiles: {profile}' if profile else
                               'Fast DDS profiles: none found; a reply to a client that has '
                               'just joined may be dropped after 100 ms')
        executor.add_node(node)
        executor.spin()
    except StartupError as error:
        print(f'[robot_memory] cannot start: {error}', file=sys.stderr, flush=True)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # SIGINT/SIGTERM shut the context down while an executor thread was building its
        # wait set (an rclpy race; rclpy raises its RCLError, a RuntimeError): that is an
        # orderly shutdown, anything else is not.
        if rclpy.ok():
            raise
    finally:
        signals.stopping()  # a repeated Ctrl-C, or launch's SIGTERM, must not cut the flush
        if node is not None:
            node.destroy_node(signals)
        executor.shutdown()
        rclpy.try_shutdown()
        signals.ignore()  # flushed and closed: a signal now must not kill the exiting process
    return 0


if __name__ == '__main__':
    sys.exit(main())
