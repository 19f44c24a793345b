"""A remote worker: runs a handler function over the worker protocol (docs/api.md,
"Worker protocol").

The worker claims up to ``concurrency`` tasks of its types at once with a long poll,
runs each handler in a thread of its own, and sends what they report in batches from
one thread (:mod:`tasklane._batcher`): one batched heartbeat for all its leases every
third of the lease, one batched completion for the successes that finished together,
and live output within tens of milliseconds. The handler gets a :class:`TaskContext`:
the input (and the last snapshot of a resumed task), progress, snapshot, event and
live output reporting, and the cancellation signal. What the handler does decides the
settlement, always fenced by the claim's lease token:

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
context's ``lease_lost`` is set, and nothing more is sent for that task. ``stop()``
returns at once when the worker is idle (it cuts the claim's long poll), and otherwise
lets running handlers finish and settle within its grace period.
"""

from __future__ import annotations

import datetime
import email.utils
import logging
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import httpx

from . import errors
from ._batcher import Batcher
from ._context import TaskContext
from ._handler import Cancelled, Fail, Fallback, Handler
from ._wire import Wire
from .client import Tasklane

log = logging.getLogger("tasklane.worker")

#: Most tasks one claim takes (the server's bound).
MAX_CLAIM = 100


class Worker:
    """Runs ``handler`` for tasks of ``task_types`` claimed through ``client``.

    Up to ``concurrency`` tasks run at once, each in its own thread. ``route`` is the
    route this worker serves (``local`` or ``external``: a ``local_only`` task never goes
    to an external worker). A claim long-polls up to ``wait_seconds`` (0..30) when
    nothing is queued.
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
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
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
        timeout = client.timeout
        self._claims = Wire(client.url, client.token, timeout=timeout, abortable=True)
        self._batcher = Batcher(
            Wire(client.url, client.token, timeout=timeout), self.worker_id, self._slots.release
        )
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> "Worker":
        """Runs the worker in a background thread."""
        self._thread = threading.Thread(target=self.run, name="tasklane-claim", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stops claiming at once (a claim waiting for tasks is cut short), then waits
        up to ``timeout`` for running handlers to finish and settle. A handler still
        running after that keeps its thread; its lease runs out and the task is retried
        elsewhere as its restart policy says."""
        self._stopping.set()
        self._claims.abort()
        if self._thread is not None:
            self._thread.join(timeout)
        self._batcher.wait_idle(timeout)
        self._batcher.stop(timeout)
        self._pool.shutdown(wait=False)
        self._claims.close()
        self._batcher.wire.close()

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
                if self._stopping.is_set():
                    return
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
                ctx = TaskContext(self._batcher, task, claimed.lease_seconds(task))
                self._batcher.add(ctx)
                self._pool.submit(self._run_one, ctx)

    # -- claiming -------------------------------------------------------------------

    def _acquire_slots(self) -> int:
        """Waits (briefly, to notice a stop) for a free slot, then takes every free one
        a claim may ask for."""
        if not self._slots.acquire(timeout=0.5):
            return 0
        free = 1
        while free < min(self.concurrency, MAX_CLAIM) and self._slots.acquire(blocking=False):
            free += 1
        return free

    def _release(self, n: int) -> None:
        for _ in range(n):
            self._slots.release()

    def _claim(self, free: int) -> "_Claimed":
        body = {
            "worker_id": self.worker_id,
            "task_types": self.task_types,
            "route": self.route,
            "max": free,
            "wait_seconds": self.wait_seconds,
        }
        response = self._claims.call("/v1/worker/claim", body)
        return _Claimed(response.json()["tasks"], response.headers)

    # -- one task ---------------------------------------------------------------------

    def _run_one(self, ctx: TaskContext) -> None:
        kind, value = self._outcome(ctx)
        self._batcher.settle(ctx, kind, value)

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


class _Claimed:
    """A claim's tasks, and how long their leases are (from the server's clock: the
    answer's Date header, so this machine's clock does not matter)."""

    def __init__(self, tasks: list[dict[str, Any]], headers: httpx.Headers) -> None:
        self.tasks = tasks
        date = headers.get("date")
        self._now = email.utils.parsedate_to_datetime(date) if date else None

    def lease_seconds(self, task: dict[str, Any]) -> float:
        expires = datetime.datetime.fromisoformat(task["lease_expires_at"].replace("Z", "+00:00"))
        if self._now is None:
            now = datetime.datetime.now(datetime.timezone.utc)
            return max((expires - now).total_seconds(), 1.0)
        # Date is truncated to whole seconds: up to one second more had passed.
        return max((expires - self._now).total_seconds() - 1.0, 1.0)


__all__ = ["Worker", "TaskContext", "Cancelled", "Fail", "Fallback"]
