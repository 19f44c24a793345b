"""Following a task's live output (the text of its running model call) over
Server-Sent Events. Live output is not durable: a dropped connection starts again from
the current attempt's text so far, and what was already seen is cut here, so the
deltas yielded join into the attempt's text without repeats. The stream ends with the
task's terminal event."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from uuid import UUID

import httpx

from . import errors
from .events import TERMINAL_EVENTS


@dataclass(frozen=True)
class Output:
    """One event of a task's live output: ``type`` is ``output.delta`` (``attempt``,
    ``offset``: characters of the attempt's text before ``text``), ``output.reset``
    (another ``attempt`` started: discard the text so far) or the terminal event
    (``task.succeeded``, ``task.failed``, ``task.cancelled``; ``task`` is the task
    view)."""

    type: str
    attempt: int | None = None
    offset: int | None = None
    text: str | None = None
    task: Any = None

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


def follow_output(
    http: httpx.Client, sleep: Callable[[float], None], task_id: UUID, max_reconnects: int
) -> Iterator[Output]:
    """The live output of ``task_id`` until its terminal event, read with ``http``,
    reconnecting after ``sleep``."""
    attempt: int | None = None
    seen = 0
    reconnects = 0
    while True:
        try:
            for event in _stream(http, task_id):
                reconnects = 0
                if event.type == "output.reset" or (
                    event.attempt is not None and event.attempt != attempt
                ):
                    if attempt is not None and event.attempt != attempt:
                        yield Output("output.reset", attempt=event.attempt)
                    attempt, seen = event.attempt, 0
                    if event.type == "output.reset":
                        continue
                if event.type == "output.delta":
                    assert event.offset is not None and event.text is not None
                    skip = seen - event.offset
                    if skip >= len(event.text):
                        continue
                    text = event.text[max(skip, 0):]
                    yield Output("output.delta", attempt, seen, text)
                    seen += len(text)
                    continue
                yield event
                if event.terminal:
                    return
        except (httpx.TransportError, httpx.RemoteProtocolError):
            pass
        reconnects += 1
        if reconnects > max_reconnects:
            raise errors.TasklaneError(
                "stream_interrupted",
                f"the output stream of {task_id} ended {reconnects} times before its end",
            )
        sleep(min(0.2 * 2**reconnects, 5.0))


def _stream(http: httpx.Client, task_id: UUID) -> Iterator[Output]:
    headers = {"Accept": "text/event-stream"}
    with http.stream("GET", f"/v1/tasks/{task_id}/output", headers=headers) as response:
        if response.status_code >= 400:
            response.read()
            raise errors.from_response(response.status_code, response.content, response.headers)
        kind = ""
        data: list[str] = []
        for line in response.iter_lines():
            if line == "":
                if kind and data:
                    yield _parse(kind, json.loads("\n".join(data)))
                kind, data = "", []
            elif line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))


def _parse(kind: str, data: Any) -> Output:
    if kind == "output.delta":
        return Output(kind, data["attempt"], data["offset"], data["text"])
    if kind == "output.reset":
        return Output(kind, attempt=data["attempt"])
    return Output(kind, task=data)
