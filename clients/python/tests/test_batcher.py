"""The worker's batcher without a server: a wire that holds each request until the test
lets it go shows what the batcher does while a request is on its way."""

from __future__ import annotations

import threading
from typing import Any

from tasklane._batcher import Batcher
from tasklane._context import TaskContext


class HeldWire:
    """Answers every batched completion with ``succeeded``, once ``go`` is set; says
    when a request has arrived."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.go = threading.Event()
        self.paths: list[str] = []

    def post(self, path: str, body: dict[str, Any]) -> Any:
        self.paths.append(path)
        self.arrived.set()
        assert self.go.wait(30), "the test never let the request go"
        return {"items": [{"id": item["id"], "status": "succeeded"} for item in body["items"]]}


def test_a_slot_is_freed_when_the_handler_returns_not_when_its_completion_is_answered() -> None:
    wire = HeldWire()
    freed = threading.Semaphore(0)
    batcher = Batcher(wire, "w", freed.release)  # type: ignore[arg-type]
    ctx = TaskContext(batcher, {"id": "t1", "task_type": "py", "attempt": 1, "lease_token": "l1"}, 30.0)
    batcher.add(ctx)
    batcher.settle(ctx, "complete", {"ok": True})
    assert wire.arrived.wait(30)
    # The completion is on its way and not answered: the slot is free for the next
    # claim already, while the attempt still counts as running until it is answered.
    assert freed.acquire(blocking=False), "the slot waited for the completion's answer"
    assert batcher.running() == 1
    wire.go.set()
    assert batcher.wait_idle(30)
    batcher.stop(30)
    assert wire.paths == ["/v1/worker/complete"]
    assert not freed.acquire(blocking=False), "the slot was freed twice"
