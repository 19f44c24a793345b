"""Following a task's events over Server-Sent Events, resuming after a dropped
connection with ``Last-Event-ID`` (the server numbers events by ``seq``, so nothing is
seen twice or missed). The stream ends after the task's terminal event."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from uuid import UUID

import httpx

from . import errors

#: Event types after which a task's stream ends.
TERMINAL_EVENTS = frozenset({"task.succeeded", "task.failed", "task.cancelled"})


@dataclass(frozen=True)
class Event:
    """One event of a task: ``seq`` (its Last-Event-ID), ``type``, ``data`` (any JSON
    value) and ``at`` (RFC 3339)."""

    seq: int
    type: str
    data: Any
    at: str

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


def follow(
    http: httpx.Client,
    sleep: Callable[[float], None],
    task_id: UUID,
    after: int,
    max_reconnects: int,
) -> Iterator[Event]:
    """The events of ``task_id`` after ``after`` until the terminal one, read with
    ``http`` (the client's connection pool), reconnecting after ``sleep``."""
    reconnects = 0
    while True:
        try:
            for event in _stream(http, task_id, after):
                after = event.seq
                reconnects = 0
                yield event
                if event.terminal:
                    return
        except (httpx.TransportError, httpx.RemoteProtocolError):
            pass
        # The stream ended or broke before the terminal event (a replica shutting down
        # ends its streams): resume after the last event seen.
        reconnects += 1
        if reconnects > max_reconnects:
            raise errors.TasklaneError(
                "stream_interrupted",
                f"the event stream of {task_id} ended {reconnects} times before its end",
            )
        sleep(min(0.2 * 2**reconnects, 5.0))


def _stream(http: httpx.Client, task_id: UUID, after: int) -> Iterator[Event]:
    headers = {"Accept": "text/event-stream", "Last-Event-ID": str(after)}
    with http.stream("GET", f"/v1/tasks/{task_id}/events", headers=headers) as response:
        if response.status_code >= 400:
            response.read()
            raise errors.from_response(response.status_code, response.content, response.headers)
        data: list[str] = []
        for line in response.iter_lines():
            if line == "":
                if data:
                    view = json.loads("\n".join(data))
                    yield Event(view["seq"], view["type"], view.get("data"), view["at"])
                data = []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            # `id:` repeats data's seq, `event:` its type; `:` lines keep the stream alive.
