"""The application's client: run (submit or join) tasks and wait for them, read them,
follow their events, cancel, release, delete a scope.

A thin layer over the client generated from the OpenAPI document (``tasklane._http``,
regenerated in CI): the generated functions build and parse the requests; this layer
turns error answers into typed errors and decides about retries. Only admission
refusals (429, 503) are retried, and only as ``Retry-After`` says (at most
``max_retries`` times, each wait at most ``max_retry_wait`` seconds); every other error
is raised at once. A submit is idempotent (its identity is scope, effect key and usage
subject), so asking again after a refusal can never create a second task.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator
from uuid import UUID

import httpx

from . import errors
from ._http.api.lifecycle import delete_scope_tasks, release_task
from ._http.api.tasks import cancel_task, get_task, submit_task
from ._http.client import AuthenticatedClient
from ._http.models import ReleaseBody, SubmitBody, TaskView
from ._http.types import UNSET, Response
from .events import Event, follow
from .output import Output, follow_output

#: States after which a task never changes again.
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})

#: The longest ``?wait=`` the server takes; longer waits are several joins in a row.
MAX_SERVER_WAIT = 60


def is_terminal(task: TaskView) -> bool:
    """Whether ``task`` finished (succeeded, failed or cancelled)."""
    return task.state in TERMINAL_STATES


class Tasklane:
    """A client of one tasklane API with one token.

    ``url`` is the API's origin (``http://127.0.0.1:8080``), ``token`` a ``tl_...``
    bearer token. ``timeout`` bounds each request (it must exceed the longest wait
    asked for: 60 s for ``run(wait=...)``, 30 s for a worker's claim).
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 90.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        httpx_args: dict[str, Any] | None = None,
    ) -> None:
        #: The API's origin and the token, for the worker's own connections.
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.http = AuthenticatedClient(
            base_url=url.rstrip("/"),
            token=token,
            timeout=httpx.Timeout(timeout),
            httpx_args=httpx_args or {},
        )
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        #: How the client waits before a retry (replaceable in tests).
        self.sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        self.http.get_httpx_client().close()

    def __enter__(self) -> "Tasklane":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the application's operations ----------------------------------------------

    def run(
        self,
        task_type: str,
        *,
        scope_id: str,
        effect_key: str,
        input: Any,
        source_id: str | None = None,
        usage_subject: str | None = None,
        priority: int | None = None,
        deadline_seconds: int | None = None,
        max_attempts: int | None = None,
        on_restart: str | None = None,
        privacy: str | None = None,
        wait: float | None = None,
    ) -> TaskView:
        """Submits a task, or joins (in flight) or replays (finished) the one with the
        same identity and request. With ``wait``, waits up to that many seconds for a
        terminal state and returns the task as it is then (longer than the server's 60
        s: the same request is joined again until the time is up).

        Raises IdempotencyConflict for the same identity with another request,
        ScopeDeleted, InvalidRequest, and Refused once retries are exhausted.
        """
        fields: dict[str, Any] = {
            "task_type": task_type,
            "scope_id": scope_id,
            "effect_key": effect_key,
            "input": input,
        }
        for name, value in [
            ("source_id", source_id),
            ("usage_subject", usage_subject),
            ("priority", priority),
            ("deadline_seconds", deadline_seconds),
            ("max_attempts", max_attempts),
            ("on_restart", on_restart),
            ("privacy", privacy),
        ]:
            if value is not None:
                fields[name] = value
        body = SubmitBody.from_dict(fields)
        deadline = time.monotonic() + (wait or 0)
        while True:
            left = max(0.0, deadline - time.monotonic())
            step = min(MAX_SERVER_WAIT, int(left + 0.999)) if left > 0 else UNSET
            task = self._call(submit_task, body=body, wait=step)
            if is_terminal(task) or time.monotonic() >= deadline:
                return task

    def get(self, task_id: UUID | str) -> TaskView:
        """The task (NotFound if this caller has no such task)."""
        return self._call(get_task, id=_uuid(task_id))

    def cancel(self, task_id: UUID | str) -> TaskView:
        """Cancels: a queued task now, a running one cooperatively (its worker is told);
        a finished task is returned unchanged."""
        return self._call(cancel_task, id=_uuid(task_id))

    def release(
        self, scope_id: str, effect_key: str, usage_subject: str | None = None
    ) -> bool:
        """Tells tasklane the application has settled the task's result (starts its
        retention clock; never cancels). Whether a task has this identity."""
        fields: dict[str, Any] = {"scope_id": scope_id, "effect_key": effect_key}
        if usage_subject is not None:
            fields["usage_subject"] = usage_subject
        released = self._call(release_task, body=ReleaseBody.from_dict(fields))
        return bool(released.released)

    def delete_scope(
        self, scope_id: str, *, source_id: str | None = None, fence: bool = False
    ) -> int:
        """Deletes the scope's tasks in every state (only ``source_id``'s when given);
        ``fence`` refuses later submits for the scope. How many were deleted."""
        deleted = self._call(
            delete_scope_tasks,
            scope_id=scope_id,
            source_id=source_id if source_id is not None else UNSET,
            fence=fence,
        )
        return int(deleted.deleted)

    def events(
        self,
        task_id: UUID | str,
        *,
        last_event_id: int | None = None,
        max_reconnects: int = 5,
    ) -> Iterator[Event]:
        """The task's events as they happen (Server-Sent Events), from after
        ``last_event_id`` (its ``seq``), until the terminal event. A dropped connection
        is resumed where it stopped (``Last-Event-ID``), up to ``max_reconnects`` times
        in a row."""
        return follow(
            self.http.get_httpx_client(), self.sleep, _uuid(task_id), last_event_id or 0, max_reconnects
        )

    def output(self, task_id: UUID | str, *, max_reconnects: int = 5) -> Iterator[Output]:
        """The live output of the task's running model call (Server-Sent Events):
        ``output.delta`` pieces of the attempt's text in order, ``output.reset`` when
        another attempt starts, and last the task's terminal event (``task`` the task
        view). A dropped connection is resumed (the text already seen is not repeated),
        up to ``max_reconnects`` times in a row."""
        return follow_output(self.http.get_httpx_client(), self.sleep, _uuid(task_id), max_reconnects)

    # -- the one place answers become values or errors -----------------------------

    def _call(self, operation: Any, **kwargs: Any) -> Any:
        """Runs a generated operation; the parsed answer, or the typed error. Retries
        a refusal (429/503) only as its Retry-After says."""
        retries = 0
        while True:
            response: Response[Any] = operation.sync_detailed(client=self.http, **kwargs)
            status = int(response.status_code)
            if status < 400:
                return response.parsed
            error = errors.from_response(status, response.content, response.headers)
            if (
                isinstance(error, errors.Refused)
                and error.retry_after is not None
                and error.retry_after <= self.max_retry_wait
                and retries < self.max_retries
            ):
                retries += 1
                self.sleep(error.retry_after)
                continue
            raise error


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))
