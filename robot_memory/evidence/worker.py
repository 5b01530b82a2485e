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
One thread that owns the evidence store: ingestion backlog, flushes, and store tasks.

SQLite connections belong to one thread, and ingestion must never wait for a dream. So
callers on any thread hand observations to :meth:`StoreWorker.submit` (an O(1) append to
a bounded backlog) and store work to :meth:`StoreWorker.call`; the worker thread drains
the backlog into the store every ``flush_period_s`` or once ``batch_size`` observations
wait, runs tasks in order, and flushes everything on :meth:`stop`. After a flush period
that brought nothing (and no failed flush to retry) it sleeps until the next observation
or task, so a quiet robot costs no wake-ups.

Drop policy (documented, counted): when ``max_backlog`` observations are already
waiting — the store cannot keep up, e.g. the disk stalls — a new observation is dropped
and counted in :attr:`dropped`. Nothing else ever discards evidence. If a flush fails
(disk full), the rows stay buffered in the store and are retried at the next flush.
"""

import collections
import concurrent.futures
import queue
import threading
import time
from typing import Callable
from typing import Optional
from typing import Protocol


class _Store(Protocol):
    """What the worker calls on the store ``open_store()`` returns."""

    def add(self, observation) -> object: ...

    def flush(self) -> object: ...

    def close(self) -> None: ...


class WorkerStopped(RuntimeError):
    """The worker was stopped; no more tasks are accepted."""


class StoreWorker:
    """Owns a store created by ``open_store()`` on its own thread."""

    def __init__(self, open_store: Callable, flush_period_s: float = 0.5, batch_size: int = 500,
                 max_backlog: int = 200_000, on_error: Optional[Callable] = None):
        self._open_store = open_store
        self.flush_period_s = flush_period_s
        self.batch_size = batch_size
        self.max_backlog = max_backlog
        self._on_error = on_error or (lambda error: None)
        self._backlog: collections.deque = collections.deque()
        # (function, future) to run, or None to wake the thread
        self._tasks: queue.Queue[Optional[tuple]] = queue.Queue()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._open_error: Optional[Exception] = None
        self.store: Optional[_Store] = None
        self.dropped = 0
        self.peak_backlog = 0  # the most observations that waited at once
        self.submitted = 0
        self.stored = 0
        self.flush_errors = 0
        self.last_flush_error: Optional[Exception] = None
        # Set by the worker while it sleeps until woken (nothing came for a whole flush
        # period and nothing failed); the next submit wakes it. See _run.
        self._asleep = False
        self._thread = threading.Thread(target=self._run, name='robot_memory-store', daemon=True)

    def start(self) -> None:
        """Start the thread and open the store; re-raise the store's opening error."""
        self._thread.start()
        self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    @property
    def backlog(self) -> int:
        """Observations waiting for the worker."""
        return len(self._backlog)

    def books(self) -> dict:
        """Return the most observations that waited at once, and the store's books if any."""
        books = getattr(self.store, 'books', None)
        return {'peak_backlog': self.peak_backlog, **(books() if books else {})}

    def submit(self, observation) -> bool:
        """Queue one observation; False (and counted) when the backlog is full."""
        waiting = len(self._backlog)
        if waiting >= self.max_backlog:
            self.dropped += 1
            return False
        self._backlog.append(observation)
        self.submitted += 1
        if waiting >= self.peak_backlog:
            self.peak_backlog = waiting + 1
        if self._asleep:  # read after the append: see _run
            self._asleep = False
            self._tasks.put(None)
        elif waiting + 1 == self.batch_size:
            self._tasks.put(None)  # wake the worker early
        return True

    def call(self, function: Callable, timeout: Optional[float] = None):
        """Run ``function(store)`` on the worker thread after the backlog; return its result."""
        future = self.call_async(function)
        return future.result(timeout)

    def call_async(self, function: Callable) -> concurrent.futures.Future:
        """Schedule ``function(store)`` on the worker thread; a Future of its result."""
        if self._stopping.is_set():
            raise WorkerStopped('the memory store is shutting down')
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._tasks.put((function, future))
        return future

    def stop(self, timeout: float = 30.0) -> None:
        """Drain the backlog into the store, flush, close it and end the thread."""
        self._stopping.set()
        self._tasks.put(None)
        self._thread.join(timeout)

    # ------------------------------------------------------------------ thread

    def _drain(self) -> bool:
        """Store the backlog and flush; True when there was nothing to store and no failure."""
        store = self.store
        assert store is not None  # _run opened it before draining
        backlog = self._backlog
        count = 0
        failed = False
        try:
            while backlog:
                store.add(backlog.popleft())
                count += 1
            store.flush()
        except Exception as error:  # noqa: B902 - reported, retried at the next flush
            self.flush_errors += 1
            self.last_flush_error = error
            self._on_error(error)
            failed = True
        self.stored += count
        return count == 0 and not failed

    def _run(self) -> None:
        try:
            self.store = self._open_store()
        except Exception as error:  # noqa: B902 - handed to start()
            self._open_error = error
            self._ready.set()
            return
        self._ready.set()
        next_flush = time.monotonic() + self.flush_period_s
        quiet = False  # the last flush period brought nothing and nothing failed
        try:
            while not self._stopping.is_set():
                # Quiet: sleep until an observation or a task comes, not a wake-up every
                # flush period (each costs a robot's idle CPU). The flag is set before the
                # backlog is looked at and submit reads it after appending, so one of the
                # two always sees the other.
                sleeping = False
                if quiet:
                    self._asleep = True
                    sleeping = not self._backlog
                    self._asleep = sleeping
                timeout = None if sleeping else max(0.0, next_flush - time.monotonic())
                try:
                    task = self._tasks.get(timeout=timeout)
                except queue.Empty:
                    task = None
                if sleeping:
                    self._asleep = quiet = False
                    next_flush = time.monotonic() + self.flush_period_s  # gather a period
                    if task is None:
                        continue
                if task is not None or len(self._backlog) >= self.batch_size \
                        or time.monotonic() >= next_flush:
                    quiet = self._drain() and task is None
                    next_flush = time.monotonic() + self.flush_period_s
                if task is not None:
                    self._run_task(task)
        finally:
            self._drain()
            while True:
                try:
                    task = self._tasks.get_nowait()
                except queue.Empty:
                    break
                if task is not None:
                    task[1].set_exception(WorkerStopped('the memory store is shutting down'))
            try:
                self.store.close()
            except Exception as error:  # noqa: B902 - reported at shutdown
                self._on_error(error)

    def _run_task(self, task) -> None:
        function, future = task
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(function(self.store))
        except BaseException as error:  # noqa: B902 - handed to the caller
            future.set_exception(error)
