"""The SQL API (docs/sql-api.md) from the application's own transaction, for psycopg 3
(or any DB-API connection or cursor with the ``%s`` paramstyle).

    with conn.transaction():
        conn.execute("INSERT INTO orders ...")
        task_id, outcome = tasklane.sql.run_task(conn, "shop", "summarize",
                                                 scope_id="customer-9",
                                                 effect_key="order-42", input={"order": 42})

The task exists exactly when the transaction commits; a rollback leaves nothing.
Refusals raised by the database (SQLSTATE class TL) become the same typed errors as
over HTTP, with the stable code from the error's DETAIL.
"""

from __future__ import annotations

import json
from typing import Any

from . import errors

_OPTIONS = (
    "source_id",
    "usage_subject",
    "priority",
    "deadline_seconds",
    "max_attempts",
    "on_restart",
    "privacy",
)


def run_task(
    conn: Any,
    app: str,
    task_type: str,
    *,
    scope_id: str,
    effect_key: str,
    input: Any,
    **options: Any,
) -> tuple[str, str]:
    """``tasklane.run_task``: the task's id and ``created``, ``joined`` or ``replayed``."""
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"unknown options: {sorted(unknown)}")
    named = [(k, options[k]) for k in _OPTIONS if options.get(k) is not None]
    extra = "".join(f", {k} => %s" for k, _ in named)
    row = _one(
        conn,
        "SELECT task_id::text, outcome FROM tasklane.run_task(app => %s, task_type => %s,"
        f" scope_id => %s, effect_key => %s, input => %s::jsonb{extra})",
        [app, task_type, scope_id, effect_key, json.dumps(input)] + [v for _, v in named],
    )
    return row[0], row[1]


def release_task(
    conn: Any, app: str, scope_id: str, effect_key: str, usage_subject: str | None = None
) -> bool:
    """``tasklane.release_task``: whether a task has this identity."""
    return bool(
        _one(conn, "SELECT tasklane.release_task(%s, %s, %s, %s)",
             [app, scope_id, effect_key, usage_subject])[0]
    )


def delete_tasks(
    conn: Any, app: str, scope_id: str, source_id: str | None = None, fence: bool = False
) -> int:
    """``tasklane.delete_tasks``: how many tasks were deleted (needs READ COMMITTED)."""
    return int(
        _one(conn, "SELECT tasklane.delete_tasks(%s, %s, %s, %s)",
             [app, scope_id, source_id, fence])[0]
    )


def list_unreleased_sources(
    conn: Any,
    app: str,
    after: tuple[str, str | None] | None = None,
    limit: int = 100,
) -> list[tuple[str, str | None]]:
    """``tasklane.list_unreleased_sources``: (scope_id, source_id) pairs after ``after``."""
    scope, source = after if after else (None, None)
    return [
        (r[0], r[1])
        for r in _all(conn, "SELECT scope_id, source_id FROM"
                      " tasklane.list_unreleased_sources(%s, %s, %s, %s)",
                      [app, scope, source, limit])
    ]


def _cursor(conn: Any) -> Any:
    return conn.cursor() if hasattr(conn, "cursor") else conn


def _execute(conn: Any, sql: str, params: list[Any]) -> Any:
    cur = _cursor(conn)
    try:
        cur.execute(sql, params)
    except Exception as error:  # the driver's error: typed when it is a refusal
        raise _typed(error) from error
    return cur


def _one(conn: Any, sql: str, params: list[Any]) -> Any:
    return _execute(conn, sql, params).fetchone()


def _all(conn: Any, sql: str, params: list[Any]) -> list[Any]:
    return _execute(conn, sql, params).fetchall()


def _typed(error: Exception) -> Exception:
    state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if not state or not state.startswith("TL"):
        return error
    diag = getattr(error, "diag", None)
    code = getattr(diag, "message_detail", None) or "refused"
    hint = getattr(diag, "message_hint", None) or ""
    retry_after = None
    if hint.startswith("retry after "):
        retry_after = float(hint.split()[2])
    return errors.error_for(
        code,
        getattr(diag, "message_primary", None) or str(error),
        status=int(state[2:]),
        field=getattr(diag, "column_name", None),
        retry_after=retry_after,
    )
