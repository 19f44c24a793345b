"""Typed errors carrying the API's stable codes (docs/api.md, "Errors").

Every answer of 400 or more becomes a :class:`TasklaneError` (or a subclass chosen by
its ``code``), with the HTTP status, the problem's ``detail`` and ``field``, and, for
429 and 503, the ``Retry-After`` seconds. :class:`Refused` is the only retryable kind:
the client retries it itself only as ``Retry-After`` says (see ``Tasklane``); every
other error is permanent for that request and never retried.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


class TasklaneError(Exception):
    """An error answer of the API, or a refusal raised by the SQL API."""

    def __init__(
        self,
        code: str,
        detail: str = "",
        *,
        status: int | None = None,
        field: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        self.status = status
        self.field = field
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether asking again later may succeed (admission refusals only)."""
        return False


class InvalidRequest(TasklaneError):
    """The request is wrong: validation_failed, unknown_field, unknown_task_type,
    malformed_json, invalid_id, bad_request, payload_too_large."""


class Unauthorized(TasklaneError):
    """No valid bearer token."""


class Forbidden(TasklaneError):
    """The token lacks the permission, or a scope token names another scope."""


class NotFound(TasklaneError):
    """No such task for this caller."""


class IdempotencyConflict(TasklaneError):
    """The identity (scope, effect key, usage subject) is used by a different request."""


class ScopeDeleted(TasklaneError):
    """The scope was deleted with a fence: submits are refused until it is lifted."""


class LeaseLost(TasklaneError):
    """This worker's lease on the task is gone (expired and taken over, or settled):
    its work on the task must stop, and whatever it reports is ignored."""


class TaskGone(LeaseLost):
    """The task no longer exists (deleted by its owner)."""


class Refused(TasklaneError):
    """Refused by admission for now: capacity_exhausted, rate_limited,
    budget_exhausted (429) or emergency_stop (503); ask again after ``retry_after``."""

    @property
    def retryable(self) -> bool:
        return True


_BY_CODE: dict[str, type[TasklaneError]] = {
    "validation_failed": InvalidRequest,
    "unknown_field": InvalidRequest,
    "unknown_task_type": InvalidRequest,
    "malformed_json": InvalidRequest,
    "invalid_id": InvalidRequest,
    "bad_request": InvalidRequest,
    "payload_too_large": InvalidRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "idempotency_conflict": IdempotencyConflict,
    "scope_deleted": ScopeDeleted,
    "lease_lost": LeaseLost,
    "task_gone": TaskGone,
    "capacity_exhausted": Refused,
    "rate_limited": Refused,
    "budget_exhausted": Refused,
    "emergency_stop": Refused,
}


def error_for(code: str, detail: str = "", **kwargs: Any) -> TasklaneError:
    """The error class of ``code`` (TasklaneError for codes this library does not know)."""
    return _BY_CODE.get(code, TasklaneError)(code, detail, **kwargs)


def retry_after_of(headers: Mapping[str, str]) -> float | None:
    """The ``Retry-After`` header in seconds (the API sends whole seconds)."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def from_response(status: int, content: bytes, headers: Mapping[str, str]) -> TasklaneError:
    """The error of an HTTP answer (a problem+json body, or anything else)."""
    try:
        problem = json.loads(content or b"{}")
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    code = problem.get("code") or f"http_{status}"
    return error_for(
        str(code),
        str(problem.get("detail", "")),
        status=status,
        field=problem.get("field"),
        retry_after=retry_after_of(headers),
    )
