"""One claimed attempt as its handler sees it (:class:`TaskContext`). What the handler
reports goes out in the worker's batches: progress and snapshots with the next batched
heartbeat, live output within a few tens of milliseconds, in order; phases and events
are sent at once, on their own."""

from __future__ import annotations

import threading
from typing import Any

from . import errors
from ._handler import Cancelled

#: A snapshot not yet given.
_NONE: Any = object()


class TaskContext:
    """One claimed attempt, as its handler sees it. ``batcher`` is the worker's
    :class:`~tasklane._batcher.Batcher`, which sends what the context reports."""

    def __init__(self, batcher: Any, claimed: dict[str, Any], lease_seconds: float) -> None:
        self._batcher = batcher
        self.id: str = claimed["id"]
        self.task_type: str = claimed["task_type"]
        self.attempt: int = claimed["attempt"]
        self.lease_token: str = claimed["lease_token"]
        self.input: Any = claimed.get("input")
        #: The last snapshot saved by an earlier attempt (a resumed task), else None.
        self.snapshot: Any = claimed.get("snapshot")
        self.deadline_at: str | None = claimed.get("deadline_at")
        self.lease_seconds = lease_seconds
        #: Set when the owner asked to cancel (or the lease was lost).
        self.cancel_requested = threading.Event()
        #: Set when the lease is gone: nothing more is reported for this task.
        self.lease_lost = threading.Event()
        #: Sent with ``complete`` when set: recorded on the attempt, charged to budgets.
        self.usage: dict[str, Any] | None = None
        self.provenance: dict[str, Any] | None = None
        # What the next batches carry (guarded by the batcher's lock).
        self._output: list[str] = []
        self._progress: int | None = None
        self._snapshot: Any = _NONE
        self._next_beat = 0.0

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested.is_set()

    def raise_if_cancelled(self) -> None:
        """Raises LeaseLost when the lease is gone, Cancelled when cancellation was
        requested; returns otherwise."""
        self._raise_if_lost()
        if self.cancel_requested.is_set():
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleeps up to ``seconds``, returning early (True) when cancellation is
        requested or the lease is lost."""
        return self.cancel_requested.wait(seconds)

    def write_output(self, text: str) -> None:
        """Appends ``text`` to the attempt's live output: observers of the task's
        output stream see it within tens of milliseconds, in order. Raises LeaseLost
        once the lease is gone."""
        self._raise_if_lost()
        if text:
            self._batcher.output(self, text)

    def progress(self, percent: int, phase: str | None = None) -> None:
        """Reports progress (0..100), with the next batched heartbeat; with a
        ``phase`` (``loading``/``running``), at once."""
        if phase is not None:
            self.heartbeat(progress=percent, phase=phase)
            return
        self._raise_if_lost()
        self._batcher.progress(self, percent)

    def save_snapshot(self, snapshot: Any) -> None:
        """Saves a snapshot a later attempt of a ``resume`` task starts from (with the
        next batched heartbeat)."""
        self._raise_if_lost()
        self._batcher.snapshot(self, snapshot)

    def emit(self, type: str, data: Any = None) -> None:
        """Emits a ``task.output`` or ``task.progress`` event to the task's followers."""
        self.heartbeat(events=[{"type": type, "data": data}])

    def heartbeat(self, **fields: Any) -> None:
        """Extends the lease now, on its own, with any of ``progress``, ``phase``,
        ``snapshot``, ``events``, ``output``; raises LeaseLost when the lease is gone."""
        self._raise_if_lost()
        body = {"lease_token": self.lease_token}
        body.update({k: v for k, v in fields.items() if v is not None})
        try:
            beat = self._batcher.wire.post(f"/v1/worker/tasks/{self.id}/heartbeat", body)
        except errors.LeaseLost:
            self.lost()
            raise
        if beat["cancel_requested"]:
            self.cancel_requested.set()

    def lost(self) -> None:
        """The lease is gone: the handler is told at its next report or wait."""
        self.lease_lost.set()
        self.cancel_requested.set()

    def _raise_if_lost(self) -> None:
        if self.lease_lost.is_set():
            raise errors.LeaseLost("lease_lost", f"the lease on {self.id} was lost")
