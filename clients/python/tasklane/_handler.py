"""What a worker's handler raises to decide its attempt's settlement other than by
returning a result."""

from __future__ import annotations

from typing import Any, Callable


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


#: A handler: takes the attempt's context, returns the result.
Handler = Callable[[Any], Any]
