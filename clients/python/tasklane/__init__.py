"""tasklane's Python client.

- :class:`Tasklane`: run (submit or join) tasks and wait for them, get, follow events
  and live output,
  cancel, release, delete a scope, with typed errors (:mod:`tasklane.errors`).
- :class:`Worker`: run a handler function as a remote worker (:mod:`tasklane.worker`).
- :mod:`tasklane.sql`: run, release and delete from the application's own transaction.

The HTTP layer underneath (``tasklane._http``) is generated from the OpenAPI document;
do not edit it: ``bash scripts/check-openapi.sh --bless`` regenerates it.
"""

from . import errors, sql
from .client import TERMINAL_STATES, Tasklane, is_terminal
from .errors import (
    Forbidden,
    IdempotencyConflict,
    InvalidRequest,
    LeaseLost,
    NotFound,
    Refused,
    ScopeDeleted,
    TaskGone,
    TasklaneError,
    Unauthorized,
)
from .events import Event
from .output import Output
from .worker import Cancelled, Fail, Fallback, TaskContext, Worker

__all__ = [
    "Tasklane",
    "Worker",
    "TaskContext",
    "Event",
    "Output",
    "Cancelled",
    "Fail",
    "Fallback",
    "TERMINAL_STATES",
    "is_terminal",
    "errors",
    "sql",
    "TasklaneError",
    "InvalidRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "IdempotencyConflict",
    "ScopeDeleted",
    "LeaseLost",
    "TaskGone",
    "Refused",
]
