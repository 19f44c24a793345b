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


class OutputWire:
    """Records every batched output write and answers each item ``ok``, but for the
    tasks in ``lost``: ``lease_lost``."""

    def __init__(self, lost: set[str]) -> None:
        self.lost = lost
        self.writes: list[list[dict[str, Any]]] = []

    def post(self, path: str, body: dict[str, Any]) -> Any:
        assert path == "/v1/worker/output", path
        self.writes.append(body["items"])
        return {"items": [{"id": item["id"], "status": "lease_lost" if item["id"] in self.lost else "ok"}
                          for item in body["items"]]}


def test_one_request_carries_the_output_of_every_attempt_and_each_item_is_answered_on_its_own() -> None:
    wire = OutputWire(lost={"t2"})
    batcher = Batcher(wire, "w", lambda: None)  # type: ignore[arg-type]
    ctxs = [TaskContext(batcher, {"id": f"t{n}", "task_type": "py", "attempt": 1, "lease_token": f"l{n}"}, 30.0)
            for n in (1, 2, 3)]
    # One round's output, as the sending thread hands it over.
    batcher._send_output([(ctxs[0], "héllo"), (ctxs[1], "stale"), (ctxs[2], "world")])
    assert wire.writes == [[{"id": "t1", "lease_token": "l1", "text": "héllo"},
                            {"id": "t2", "lease_token": "l2", "text": "stale"},
                            {"id": "t3", "lease_token": "l3", "text": "world"}]]
    assert [ctx.lease_lost.is_set() for ctx in ctxs] == [False, True, False]
    batcher.stop(30)


def test_output_longer_than_an_item_goes_out_in_pieces_in_order() -> None:
    wire = OutputWire(lost=set())
    batcher = Batcher(wire, "w", lambda: None)  # type: ignore[arg-type]
    a = TaskContext(batcher, {"id": "a", "task_type": "py", "attempt": 1, "lease_token": "la"}, 30.0)
    b = TaskContext(batcher, {"id": "b", "task_type": "py", "attempt": 1, "lease_token": "lb"}, 30.0)
    long = "é" * 40_000  # 80,000 bytes: more than one item holds
    batcher._send_output([(a, long), (b, "short")])
    assert [[item["id"] for item in write] for write in wire.writes] == [["a", "b"], ["a"]]
    pieces = [item["text"] for write in wire.writes for item in write if item["id"] == "a"]
    assert "".join(pieces) == long
    assert all(len(piece.encode()) <= 64 * 1024 for piece in pieces)
    batcher.stop(30)
