"""A remote worker: runs a handler function over the worker protocol (docs/api.md,
"Worker protocol").

The worker claims tasks of its types with a long poll, runs each in a thread of its
own, and keeps its lease alive with a heartbeat in the background every third of the
lease. The handler gets a :class:`TaskContext`: the input (and the last snapshot of a
resumed task), progress, snapshot and event reporting, and the cancellation signal. What
the handler does decides the settlement, always fenced by the claim's lease token:

- returns a value: ``complete`` with it as the result (and ``ctx.usage`` /
  ``ctx.provenance`` when set);
- raises :class:`Fail`: ``fail`` with its code, message and retryability;
- raises :class:`Fallback`: ``fallback`` (the next attempt takes the external route);
- raises :class:`Cancelled` (``ctx.raise_if_cancelled()`` does, once the owner asked):
  the cancellation is acknowledged;
- raises anything else: ``fail``, retryable, code ``handler_error``.

For a task type with an output schema, return ``{"output": value, ...}``: a result
whose ``output`` does not match the schema is refused (``invalid_output``, nothing
written), and the worker then fails the attempt, retryable, with that code and the
usage and provenance it set (the last attempt fails the task ``invalid_output``).

When the lease is lost (it expired and another worker took the task, or the task was
deleted), reporting raises :class:`~tasklane.errors.LeaseLost` in the handler, the
context's ``lease_lost`` is set, and nothing more is sent for that task. ``stop()`` is
graceful: no new claims, running handlers finish (up to a timeout).
"""

from __future__ import annotations

import datetime
import email.utils
import logging
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import httpx

from . import errors
from ._http.api.worker import (
    acknowledge_cancel,
    claim_tasks,
    complete_task,
    fail_task,
    fallback_task,
    heartbeat_task,
)
from ._http.models import (
    CancelledBody,
    ClaimBody,
    ClaimedView,
    CompleteBody,
    FailBody,
    FallbackBody,
    HeartbeatBody,
)
from ._http.types import UNSET, Unset
from .client import Tasklane

log = logging.getLogger("tasklane.worker")


class Cancelled(Exception):
    """Raised by a handler (``ctx.raise_if_cancelled()``) to acknowledge a requested
    cancellation."""


class Fail(Exception):
    """Raised by a handler: the attempt failed with ``code`` (1..64 bytes, kept in the
    task's message), retried when ``retryable`` (not before ``retry_after_seconds``)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after_seconds: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after_seconds = retry_after_seconds


class Fallback(Exception):
    """Raised by a handler: the local route cannot serve the task; its next attempt
    goes to an external route if the task allows it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Handler = Callable[["TaskContext"], Any]


class TaskContext:
    """One claimed attempt, as its handler sees it."""

    def __init__(self, worker: "Worker", claimed: ClaimedView, lease_seconds: float) -> None:
        self._worker = worker
        self._lock = threading.Lock()
        self.id = claimed.id
        self.task_type = claimed.task_type
        self.attempt = claimed.attempt
        self.lease_token = claimed.lease_token
        self.input = claimed.input_
        #: The last snapshot saved by an earlier attempt (a resumed task), else None.
        self.snapshot = None if isinstance(claimed.snapshot, Unset) else claimed.snapshot
        self.deadline_at = claimed.deadline_at
        self.lease_seconds = lease_seconds
        #: Set when the owner asked to cancel (or the lease was lost).
        self.cancel_requested = threading.Event()
        #: Set when the lease is gone: nothing more is reported for this task.
        self.lease_lost = threading.Event()
        #: Sent with ``complete`` when set: recorded on the attempt, charged to budgets.
        self.usage: dict[str, Any] | None = None
        self.provenance: dict[str, Any] | None = None
        self._done = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested.is_set()

    def raise_if_cancelled(self) -> None:
        """Raises LeaseLost when the lease is gone, Cancelled when cancellation was
        requested; returns otherwise."""
        if self.lease_lost.is_set():
            raise errors.LeaseLost("lease_lost", f"the lease on {self.id} was lost")
        if self.cancel_requested.is_set():
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleeps up to ``seconds``, returning early (True) when cancellation is
        requested or the lease is lost."""
        return self.cancel_requested.wait(seconds)

    def progress(self, percent: int, phase: str | None = None) -> None:
        """Reports progress (0..100) and optionally the phase (``loading``/``running``)."""
        self.heartbeat(progress=percent, phase=phase)

    def save_snapshot(self, snapshot: Any) -> None:
        """Saves a snapshot a later attempt of a ``resume`` task starts from."""
        self.heartbeat(snapshot=snapshot)

    def emit(self, type: str, data: Any = None) -> None:
        """Emits a ``task.output`` or ``task.progress`` event to the task's followers."""
        self.heartbeat(events=[{"type": type, "data": data}])

    def heartbeat(self, **fields: Any) -> None:
        """Extends the lease now, with any of ``progress``, ``phase``, ``snapshot``,
        ``events``; raises LeaseLost when the lease is gone."""
        if self.lease_lost.is_set():
            raise errors.LeaseLost("lease_lost", f"the lease on {self.id} was lost")
        body = {"lease_token": str(self.lease_token)}
        body.update({k: v for k, v in fields.items() if v is not None})
        with self._lock:
            try:
                beat = self._worker.client._call(
                    heartbeat_task, id=self.id, body=HeartbeatBody.from_dict(body)
                )
            except errors.LeaseLost:
                self.lease_lost.set()
                self.cancel_requested.set()
                raise
        if beat.cancel_requested:
            self.cancel_requested.set()


class Worker:
    """Runs ``handler`` for tasks of ``task_types`` claimed through ``client``.

    ``concurrency`` tasks run at once, each in its own thread. ``route`` is the route
    this worker serves (``local`` or ``external``: a ``local_only`` task never goes to
    an external worker). A claim long-polls up to ``wait_seconds`` (0..30) when nothing
    is queued; ``stop()`` waits for the claim in flight, so it also bounds how long a
    stop takes to begin.
    """

    def __init__(
        self,
        client: Tasklane,
        task_types: Sequence[str],
        handler: Handler,
        *,
        worker_id: str | None = None,
        route: str = "local",
        concurrency: int = 1,
        wait_seconds: int = 10,
    ) -> None:
        self.client = client
        self.task_types = list(task_types)
        self.handler = handler
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.route = route
        self.concurrency = concurrency
        self.wait_seconds = wait_seconds
        self._stopping = threading.Event()
        self._slots = threading.Semaphore(concurrency)
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="tasklane-task")
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> "Worker":
        """Runs the worker in a background thread."""
        self._thread = threading.Thread(target=self.run, name="tasklane-claim", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stops claiming, then waits up to ``timeout`` for running handlers to finish
        and settle. A handler still running after that keeps its thread; its lease
        runs out and the task is retried elsewhere as its restart policy says."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        done = threading.Event()
        threading.Thread(target=lambda: (self._pool.shutdown(wait=True), done.set()), daemon=True).start()
        done.wait(timeout)

    def run(self) -> None:
        """Claims and runs tasks until ``stop()``; a permanent error of a claim (a bad
        token, an unknown type) is raised."""
        failures = 0
        while not self._stopping.is_set():
            free = self._acquire_slots()
            if free == 0:
                continue
            try:
                claimed = self._claim(free)
                failures = 0
            except (errors.Refused, httpx.TransportError) as error:
                self._release(free)
                failures += 1
                delay = min(0.5 * 2 ** min(failures, 4), 8.0)
                log.warning("claim failed (%s); again in %.1fs", error, delay)
                self._stopping.wait(delay)
                continue
            except Exception:
                self._release(free)
                raise
            self._release(free - len(claimed.tasks))
            for task in claimed.tasks:
                self._pool.submit(self._run_one, task, claimed.lease_seconds)

    # -- claiming -------------------------------------------------------------------

    def _acquire_slots(self) -> int:
        """Waits (briefly, to notice a stop) for a free slot, then takes every free one."""
        if not self._slots.acquire(timeout=0.5):
            return 0
        free = 1
        while free < self.concurrency and self._slots.acquire(blocking=False):
            free += 1
        return free

    def _release(self, n: int) -> None:
        for _ in range(n):
            self._slots.release()

    def _claim(self, free: int) -> "_Claimed":
        body = ClaimBody(
            worker_id=self.worker_id,
            task_types=self.task_types,
            route=self.route,
            max_=free,
            wait_seconds=self.wait_seconds,
        )
        response = claim_tasks.sync_detailed(client=self.client.http, body=body)
        status = int(response.status_code)
        if status >= 400:
            error = errors.from_response(status, response.content, response.headers)
            raise error
        return _Claimed(response.parsed.tasks, response.headers)

    # -- one task ---------------------------------------------------------------------

    def _run_one(self, task: ClaimedView, lease_of: Callable[[ClaimedView], float]) -> None:
        try:
            ctx = TaskContext(self, task, lease_of(task))
            beats = threading.Thread(target=self._beat, args=(ctx,), daemon=True)
            beats.start()
            try:
                self._settle(ctx, self._outcome(ctx))
            finally:
                ctx._done.set()
                beats.join()
        except Exception:  # never lose the slot; the lease runs out and it is retried
            log.exception("running task %s", task.id)
        finally:
            self._slots.release()

    def _outcome(self, ctx: TaskContext) -> tuple[str, Any]:
        try:
            return ("complete", self.handler(ctx))
        except Cancelled:
            return ("cancelled", None)
        except Fail as fail:
            return ("fail", fail)
        except Fallback as fallback:
            return ("fallback", fallback)
        except errors.LeaseLost:
            return ("lost", None)
        except Exception as error:  # the handler's own failure: retryable
            log.exception("handler failed on task %s", ctx.id)
            return ("fail", Fail("handler_error", repr(error)[:1000], retryable=True))

    def _settle(self, ctx: TaskContext, outcome: tuple[str, Any]) -> None:
        kind, value = outcome
        if kind == "lost" or ctx.lease_lost.is_set():
            log.warning("lease on task %s lost: its outcome is not reported", ctx.id)
            return
        token = str(ctx.lease_token)
        extras = {k: v for k, v in (("usage", ctx.usage), ("provenance", ctx.provenance)) if v}
        with ctx._lock:
            try:
                if kind == "complete":
                    self._complete(ctx, token, value, extras)
                elif kind == "fail":
                    self._fail(ctx, token, value, {})
                elif kind == "fallback":
                    body = FallbackBody(lease_token=ctx.lease_token, reason=value.reason)
                    self.client._call(fallback_task, id=ctx.id, body=body)
                else:
                    body = CancelledBody(lease_token=ctx.lease_token)
                    self.client._call(acknowledge_cancel, id=ctx.id, body=body)
            except errors.LeaseLost:
                ctx.lease_lost.set()
                log.warning("lease on task %s lost before its %s was reported", ctx.id, kind)

    def _complete(self, ctx: TaskContext, token: str, result: Any, extras: dict) -> None:
        body = CompleteBody.from_dict({"lease_token": token, "result": result, **extras})
        try:
            self.client._call(complete_task, id=ctx.id, body=body)
        except errors.TasklaneError as refused:
            if refused.code != "invalid_output":
                raise
            # The result does not match the type's output schema and nothing was written:
            # end the attempt now (retried; the last fails the task with this code) rather
            # than leave the lease to run out. The usage was spent all the same.
            log.warning("task %s: result refused: %s", ctx.id, refused.detail)
            fail = Fail("invalid_output", refused.detail[:1000], retryable=True)
            self._fail(ctx, token, fail, extras)

    def _fail(self, ctx: TaskContext, token: str, fail: Fail, extras: dict) -> None:
        fields = {
            "lease_token": token,
            "code": fail.code,
            "message": fail.message,
            "retryable": fail.retryable,
            **extras,
        }
        if fail.retry_after_seconds is not None:
            fields["retry_after_seconds"] = fail.retry_after_seconds
        self.client._call(fail_task, id=ctx.id, body=FailBody.from_dict(fields))

    def _beat(self, ctx: TaskContext) -> None:
        """Heartbeats every third of the lease until the handler is done."""
        interval = max(ctx.lease_seconds / 3.0, 0.1)
        while not ctx._done.wait(interval):
            try:
                ctx.heartbeat()
            except errors.LeaseLost:
                log.warning("lease on task %s lost", ctx.id)
                return
            except (errors.TasklaneError, httpx.TransportError) as error:
                # Transient: the next beat may still come in time.
                log.warning("heartbeat of task %s failed: %s", ctx.id, error)


class _Claimed:
    """A claim's tasks, and how long their leases are (from the server's clock: the
    answer's Date header, so this machine's clock does not matter)."""

    def __init__(self, tasks: list[ClaimedView], headers: httpx.Headers) -> None:
        self.tasks = tasks
        date = headers.get("date")
        self._now = email.utils.parsedate_to_datetime(date) if date else None

    def lease_seconds(self, task: ClaimedView) -> float:
        if self._now is None:
            now = datetime.datetime.now(datetime.timezone.utc)
            return max((task.lease_expires_at - now).total_seconds(), 1.0)
        # Date is truncated to whole seconds: up to one second more had passed.
        return max((task.lease_expires_at - self._now).total_seconds() - 1.0, 1.0)


__all__ = ["Worker", "TaskContext", "Cancelled", "Fail", "Fallback", "UNSET"]
