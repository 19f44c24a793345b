"""The application's client: against the live server, and (retries) against a fake
transport that answers as the server would."""

from __future__ import annotations

import json
import threading

import httpx
import psycopg
import pytest

import tasklane


def test_run_wait_replay_release_delete(client: tasklane.Tasklane, scope: str) -> None:
    task = client.run("noop", scope_id=scope, effect_key="k1", input={"b": [1, 2], "a": "é"}, wait=20)
    assert task.state == "succeeded"
    assert task.result == {"b": [1, 2], "a": "é"}
    # The same request again is a replay of the same task; a different one conflicts.
    again = client.run("noop", scope_id=scope, effect_key="k1", input={"a": "é", "b": [1, 2]})
    assert (again.id, again.state) == (task.id, "succeeded")
    with pytest.raises(tasklane.IdempotencyConflict) as conflict:
        client.run("noop", scope_id=scope, effect_key="k1", input={"a": 2})
    assert (conflict.value.status, conflict.value.code) == (409, "idempotency_conflict")
    assert client.get(task.id).state == "succeeded"
    assert client.release(scope, "k1") is True
    assert client.get(task.id).released_at is not None
    assert client.release(scope, "no-such-key") is False
    assert client.delete_scope(scope) == 1
    with pytest.raises(tasklane.NotFound):
        client.get(task.id)


def test_bad_input_is_a_typed_permanent_error(client: tasklane.Tasklane, scope: str) -> None:
    with pytest.raises(tasklane.InvalidRequest) as unknown:
        client.run("no-such-type", scope_id=scope, effect_key="k", input={})
    assert unknown.value.code == "unknown_task_type"
    with pytest.raises(tasklane.InvalidRequest) as invalid:
        client.run("noop", scope_id=scope, effect_key="k", input={}, priority=101)
    assert (invalid.value.code, invalid.value.field) == ("validation_failed", "priority")
    assert not invalid.value.retryable
    bad = tasklane.Tasklane(client.http._base_url, "tl_not-a-token")
    with pytest.raises(tasklane.Unauthorized):
        bad.get("0193a5c2-7f00-7000-8000-000000000001")


def test_fenced_scope_and_cancel(client: tasklane.Tasklane, scope: str) -> None:
    slow = client.run("sleep", scope_id=scope, effect_key="slow", input={"ms": 20000, "steps": 200})
    cancelled = client.cancel(slow.id)
    assert cancelled.state in ("cancelled", "cancelling")
    done = client.run("sleep", scope_id=scope, effect_key="slow",
                      input={"ms": 20000, "steps": 200}, wait=20)
    assert done.state == "cancelled"
    assert client.delete_scope(scope, fence=True) == 1
    with pytest.raises(tasklane.ScopeDeleted):
        client.run("noop", scope_id=scope, effect_key="after", input={})


def test_events_follow_and_resume(client: tasklane.Tasklane, scope: str) -> None:
    task = client.run("sleep", scope_id=scope, effect_key="ev", input={"ms": 300, "steps": 3})
    events = list(client.events(task.id))
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert events[0].type == "task.queued"
    assert events[-1].type == "task.succeeded" and events[-1].terminal
    assert any(e.type == "task.progress" for e in events)
    # Resuming after an event (Last-Event-ID) yields exactly the rest.
    middle = events[len(events) // 2].seq
    rest = list(client.events(task.id, last_event_id=middle))
    assert [e.seq for e in rest] == [s for s in seqs if s > middle]


def test_output_of_a_finished_task_is_its_terminal_event(client: tasklane.Tasklane, scope: str) -> None:
    task = client.run("noop", scope_id=scope, effect_key="out", input={"n": 1}, wait=20)
    events = list(client.output(task.id))
    assert [e.type for e in events] == ["task.succeeded"]
    assert events[0].terminal and events[0].task["id"] == str(task.id)
    with pytest.raises(tasklane.NotFound):
        list(client.output("01a22f72-0000-7000-8000-000000000000"))


def test_sql_api_in_the_applications_transaction(client: tasklane.Tasklane, server, scope: str) -> None:
    app = server["app"]
    with psycopg.connect(server["database_url"], autocommit=True) as conn:
        conn.execute("SET ROLE tasklane_app")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with conn.transaction():
                conn.execute("SELECT count(*) FROM tasklane.tasks")
        # Rolled back: nothing is left.
        with pytest.raises(RuntimeError):
            with conn.transaction():
                task_id, outcome = tasklane.sql.run_task(
                    conn, app, "noop", scope_id=scope, effect_key="rolled", input={"n": 1})
                assert outcome == "created"
                raise RuntimeError("the application changes its mind")
        with pytest.raises(tasklane.NotFound):
            client.get(task_id)
        # Committed: the task exists and a worker runs it.
        with conn.transaction():
            task_id, outcome = tasklane.sql.run_task(
                conn, app, "noop", scope_id=scope, effect_key="kept", input={"n": 1.0},
                priority=3)
        assert outcome == "created"
        # The same request over HTTP (1.0 and 1 are one number) is the same task.
        done = client.run("noop", scope_id=scope, effect_key="kept", input={"n": 1}, priority=3, wait=20)
        assert (str(done.id), done.state) == (task_id, "succeeded")
        # Refusals are the HTTP API's typed errors, with the stable code.
        with pytest.raises(tasklane.IdempotencyConflict):
            with conn.transaction():
                tasklane.sql.run_task(conn, app, "noop", scope_id=scope, effect_key="kept", input={"n": 2})
        with pytest.raises(tasklane.InvalidRequest) as invalid:
            with conn.transaction():
                tasklane.sql.run_task(conn, app, "noop", scope_id=scope, effect_key="x", input={},
                                      max_attempts=99)
        assert (invalid.value.code, invalid.value.field) == ("validation_failed", "max_attempts")
        with conn.transaction():
            assert tasklane.sql.release_task(conn, app, scope, "kept") is True
            pairs = tasklane.sql.list_unreleased_sources(conn, app)
            assert all(p[0] != scope for p in pairs)
            assert tasklane.sql.delete_tasks(conn, app, scope) == 1


# -- retries, against a transport that answers like the server -----------------------

TASK = {
    "id": "0193a5c2-7f00-7000-8000-000000000001", "task_type": "noop", "scope_id": "s",
    "state": "queued", "priority": 0, "attempt": 0, "max_attempts": 3,
    "created_at": "2026-12-01T05:00:00Z",
    "links": {"self": "/v1/tasks/x", "events": "/v1/tasks/x/events"},
}


def scripted(answers: list[tuple[int, dict, dict]]):
    """A client whose server answers ``answers`` in order; the requests it saw and the
    waits it took."""
    seen: list[httpx.Request] = []
    waits: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body, headers = answers[len(seen) - 1]
        return httpx.Response(status, json=body, headers=headers)

    client = tasklane.Tasklane("http://tasklane.invalid", "tl_x",
                               httpx_args={"transport": httpx.MockTransport(handle)})
    client.sleep = waits.append
    return client, seen, waits


def problem(status: int, code: str) -> dict:
    return {"type": "about:blank", "title": "x", "status": status, "detail": code, "code": code}


def test_refusals_are_retried_as_retry_after_says() -> None:
    client, seen, waits = scripted([
        (429, problem(429, "rate_limited"), {"Retry-After": "3"}),
        (503, problem(503, "emergency_stop"), {"Retry-After": "1"}),
        (202, TASK, {}),
    ])
    task = client.run("noop", scope_id="s", effect_key="k", input={})
    assert str(task.id) == TASK["id"]
    assert waits == [3.0, 1.0]
    assert len(seen) == 3
    # Every retry is the same request: the same identity, so never a second task.
    assert len({r.content for r in seen}) == 1


def test_permanent_errors_are_never_retried() -> None:
    for status, code, kind in [
        (409, "idempotency_conflict", tasklane.IdempotencyConflict),
        (422, "validation_failed", tasklane.InvalidRequest),
        (410, "scope_deleted", tasklane.ScopeDeleted),
        (500, "internal", tasklane.TasklaneError),
    ]:
        client, seen, waits = scripted([(status, problem(status, code), {"Retry-After": "1"})] * 3)
        with pytest.raises(kind) as error:
            client.run("noop", scope_id="s", effect_key="k", input={})
        assert (error.value.code, len(seen), waits) == (code, 1, [])


def test_a_refusal_without_retry_after_or_with_a_long_one_is_raised() -> None:
    client, seen, waits = scripted([(429, problem(429, "capacity_exhausted"), {})] * 2)
    with pytest.raises(tasklane.Refused):
        client.run("noop", scope_id="s", effect_key="k", input={})
    assert (len(seen), waits) == (1, [])
    client, seen, waits = scripted([(429, problem(429, "budget_exhausted"), {"Retry-After": "7200"})])
    with pytest.raises(tasklane.Refused) as refused:
        client.run("noop", scope_id="s", effect_key="k", input={})
    assert (refused.value.retry_after, len(seen)) == (7200.0, 1)
    # Retries stop after max_retries.
    client, seen, waits = scripted([(429, problem(429, "rate_limited"), {"Retry-After": "1"})] * 5)
    client.max_retries = 2
    with pytest.raises(tasklane.Refused):
        client.run("noop", scope_id="s", effect_key="k", input={})
    assert (len(seen), waits) == (3, [1.0, 1.0])
