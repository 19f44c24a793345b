"""The worker's one sending thread: what its running attempts report, and their
settlements, in as few requests as it can. Each round it sends, in this order:

1. the live output every attempt wrote since the last round, in one batched request
   (``POST /v1/worker/output``: one read of the leases on the server, no write);
2. the settlements handlers finished with: every success in one batched completion
   (``POST /v1/worker/complete``), failures, fallbacks and cancel acknowledgements on
   their own, so an attempt's last output always goes out before its settlement;
3. one batched heartbeat (``POST /v1/worker/heartbeats``) for every attempt whose lease
   is a third through, or that has progress or a snapshot to report.

Everything goes over one connection, so one replica behind a load balancer sees an
attempt's output and its settlement in order. A round runs as soon as there is output
or a settlement (after at most :data:`OUTPUT_EVERY`), else when the first lease is due.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable

import httpx

from . import errors
from ._context import _NONE, TaskContext
from ._handler import Fail
from ._wire import Wire

log = logging.getLogger("tasklane.worker")

#: How long new output waits to be sent with more (the stream's coalescing).
OUTPUT_EVERY = 0.02
#: Most items in one batched request (the server's bound).
BATCH = 500
#: Most text in one item of a batched output write (UTF-8 bytes; the server's bound),
#: and in one such request (JSON-encoded; well under the server's body limit). Longer
#: output goes out in pieces, in order, in the same round.
OUTPUT_ITEM_BYTES = 64 * 1024
OUTPUT_REQUEST_BYTES = 512 * 1024


class Batcher:
    """Sends for the attempts of one worker; ``release`` is called once per attempt
    when its handler has finished (its settlement is queued): the worker's slot goes to
    the next claim while the settlement is on its way, so a worker's claims and
    completions overlap instead of taking turns. A worker holds at most its
    concurrency in running handlers, plus the leases of settlements not yet answered."""

    def __init__(self, wire: Wire, worker_id: str, release: Callable[[], None]) -> None:
        self.wire = wire
        self.worker_id = worker_id
        self._release = release
        self._cond = threading.Condition()
        self._running: dict[str, TaskContext] = {}
        self._settle: list[tuple[TaskContext, str, Any]] = []
        self._has_output: set[str] = set()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="tasklane-batcher", daemon=True)
        self._thread.start()

    # -- what contexts and the worker hand in -------------------------------------------

    def add(self, ctx: TaskContext) -> None:
        with self._cond:
            ctx._next_beat = time.monotonic() + ctx.lease_seconds / 3.0
            self._running[ctx.id] = ctx
            self._cond.notify()

    def output(self, ctx: TaskContext, text: str) -> None:
        with self._cond:
            ctx._output.append(text)
            self._has_output.add(ctx.id)
            self._cond.notify()

    def progress(self, ctx: TaskContext, percent: int) -> None:
        with self._cond:
            ctx._progress = percent
            ctx._next_beat = 0.0
            self._cond.notify()

    def snapshot(self, ctx: TaskContext, snapshot: Any) -> None:
        with self._cond:
            ctx._snapshot = snapshot
            ctx._next_beat = 0.0
            self._cond.notify()

    def settle(self, ctx: TaskContext, kind: str, value: Any) -> None:
        """Queues the attempt's settlement (``complete``, ``fail``, ``fallback``,
        ``cancelled``; ``lost`` sends nothing)."""
        with self._cond:
            self._settle.append((ctx, kind, value))
            self._cond.notify()
        self._release()

    def running(self) -> int:
        with self._cond:
            return len(self._running)

    def wait_idle(self, timeout: float | None) -> bool:
        """Waits until no attempt is running or waiting to be settled."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def stop(self, timeout: float | None) -> None:
        """Sends what is left, then ends the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout)

    # -- the sending thread ------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._due():
                    if self._stopping:
                        return
                    self._cond.wait(self._sleep())
                if self._has_output and not self._settle and not self._stopping:
                    # Let more text gather: one request carries what a burst wrote.
                    self._cond.wait(OUTPUT_EVERY)
                output = self._take_output()
                settle, self._settle = self._settle, []
            try:
                self._send_output(output)
                self._send_settlements(settle)
                self._send_heartbeats()
            except Exception:  # a bug must not end the thread every attempt relies on
                log.exception("worker batcher round failed")
                time.sleep(0.5)

    def _due(self) -> bool:
        if self._has_output or self._settle:
            return True
        now = time.monotonic()
        return any(ctx._next_beat <= now for ctx in self._running.values())

    def _sleep(self) -> float:
        if not self._running:
            return 1.0
        first = min(ctx._next_beat for ctx in self._running.values())
        return max(first - time.monotonic(), 0.0)

    def _take_output(self) -> list[tuple[TaskContext, str]]:
        taken = []
        for id in self._has_output:
            ctx = self._running.get(id)
            if ctx is not None and ctx._output:
                taken.append((ctx, "".join(ctx._output)))
                ctx._output.clear()
        self._has_output.clear()
        return taken

    def _send_output(self, output: list[tuple[TaskContext, str]]) -> None:
        """Sends the round's output of every attempt in one batched write (more when it
        is too long for one), each item answered on its own."""
        pending = output
        while pending:
            ctxs, items, rest, size = [], [], [], 0
            for ctx, text in pending:
                if ctx.lease_lost.is_set():
                    continue
                piece, left = _split(text, OUTPUT_ITEM_BYTES)
                cost = len(json.dumps(piece))
                if items and (len(items) == BATCH or size + cost > OUTPUT_REQUEST_BYTES):
                    rest.append((ctx, text))
                    continue
                ctxs.append(ctx)
                items.append({"id": ctx.id, "lease_token": ctx.lease_token, "text": piece})
                size += cost
                if left:
                    rest.append((ctx, left))
            pending = rest
            if not items:
                continue
            try:
                answers = self.wire.post("/v1/worker/output", {"items": items})["items"]
            except (errors.TasklaneError, httpx.TransportError) as error:
                log.warning("live output of %d tasks dropped: %s", len(items), error)
                continue
            for ctx, answer in zip(ctxs, answers):
                if answer["status"] != "ok":
                    log.warning("lease on task %s lost: its output was refused", ctx.id)
                    ctx.lost()

    # -- settlements -----------------------------------------------------------------

    def _send_settlements(self, settle: list[tuple[TaskContext, str, Any]]) -> None:
        successes = [(ctx, value) for ctx, kind, value in settle if kind == "complete"]
        for start in range(0, len(successes), BATCH):
            self._complete(successes[start : start + BATCH])
        for ctx, kind, value in settle:
            if kind != "complete":
                self._settle_one(ctx, kind, value)

    def _complete(self, batch: list[tuple[TaskContext, Any]]) -> None:
        live = [(ctx, result) for ctx, result in batch if not ctx.lease_lost.is_set()]
        items = [dict(self._extras(ctx), id=ctx.id, lease_token=ctx.lease_token, result=result)
                 for ctx, result in live]
        try:
            answers = self.wire.post("/v1/worker/complete", {"worker_id": self.worker_id, "items": items})["items"] if items else []
        except (errors.TasklaneError, httpx.TransportError) as error:
            log.warning("completing %d tasks failed: %s", len(items), error)
            answers = [{"status": "unsent"} for _ in items]
        for (ctx, _), answer in zip(live, answers):
            if answer["status"] == "invalid_output":
                # The result does not match the type's output schema and nothing was
                # written: end the attempt now (retried; the last fails the task with
                # this code) rather than leave the lease to run out.
                message = (answer.get("error") or {}).get("message", "")
                log.warning("task %s: result refused: %s", ctx.id, message)
                fail = Fail("invalid_output", message[:1000], retryable=True)
                self._settle_one(ctx, "fail", fail, extras=self._extras(ctx))
                continue
            if answer["status"] in ("lease_lost", "task_gone"):
                ctx.lost()
                log.warning("lease on task %s lost before its result was reported", ctx.id)
            self._done(ctx)
        for ctx, _ in batch:
            if ctx.lease_lost.is_set():
                self._done(ctx)

    def _settle_one(self, ctx: TaskContext, kind: str, value: Any, extras: dict | None = None) -> None:
        try:
            if kind == "lost" or ctx.lease_lost.is_set():
                log.warning("lease on task %s lost: its outcome is not reported", ctx.id)
            elif kind == "fail":
                fields = {"lease_token": ctx.lease_token, "code": value.code,
                          "message": value.message, "retryable": value.retryable, **(extras or {})}
                if value.retry_after_seconds is not None:
                    fields["retry_after_seconds"] = value.retry_after_seconds
                self.wire.post(f"/v1/worker/tasks/{ctx.id}/fail", fields)
            elif kind == "fallback":
                body = {"lease_token": ctx.lease_token, "reason": value.reason}
                self.wire.post(f"/v1/worker/tasks/{ctx.id}/fallback", body)
            elif kind == "cancelled":
                self.wire.post(f"/v1/worker/tasks/{ctx.id}/cancelled", {"lease_token": ctx.lease_token})
        except errors.LeaseLost:
            ctx.lost()
            log.warning("lease on task %s lost before its %s was reported", ctx.id, kind)
        except (errors.TasklaneError, httpx.TransportError) as error:
            log.warning("settling task %s (%s) failed: %s", ctx.id, kind, error)
        self._done(ctx)

    @staticmethod
    def _extras(ctx: TaskContext) -> dict[str, Any]:
        return {k: v for k, v in (("usage", ctx.usage), ("provenance", ctx.provenance)) if v}

    def _done(self, ctx: TaskContext) -> None:
        with self._cond:
            if self._running.pop(ctx.id, None) is not None:
                self._cond.notify_all()

    # -- heartbeats ------------------------------------------------------------------

    def _send_heartbeats(self) -> None:
        now = time.monotonic()
        with self._cond:
            due = [ctx for ctx in self._running.values()
                   if ctx._next_beat <= now and not ctx.lease_lost.is_set()]
            items = []
            for ctx in due:
                item: dict[str, Any] = {"id": ctx.id, "lease_token": ctx.lease_token}
                if ctx._progress is not None:
                    item["progress"] = ctx._progress
                if ctx._snapshot is not _NONE:
                    item["snapshot"] = ctx._snapshot
                ctx._progress, ctx._snapshot = None, _NONE
                ctx._next_beat = now + ctx.lease_seconds / 3.0
                items.append(item)
        for start in range(0, len(items), BATCH):
            chunk, ctxs = items[start : start + BATCH], due[start : start + BATCH]
            body = {"worker_id": self.worker_id, "items": chunk}
            try:
                answers = self.wire.post("/v1/worker/heartbeats", body)["items"]
            except (errors.TasklaneError, httpx.TransportError) as error:
                # Transient: the next beat may still come in time.
                log.warning("heartbeat of %d tasks failed: %s", len(chunk), error)
                continue
            for ctx, answer in zip(ctxs, answers):
                if answer["status"] != "ok":
                    log.warning("lease on task %s lost", ctx.id)
                    ctx.lost()
                elif answer["cancel_requested"]:
                    ctx.cancel_requested.set()


def _split(text: str, limit: int) -> tuple[str, str]:
    """``text`` cut to at most ``limit`` UTF-8 bytes at a character's boundary, and the
    rest."""
    data = text.encode()
    if len(data) <= limit:
        return text, ""
    cut = limit
    while data[cut] & 0xC0 == 0x80:  # a continuation byte: back to the character's start
        cut -= 1
    head = data[:cut].decode()
    return head, text[len(head):]
