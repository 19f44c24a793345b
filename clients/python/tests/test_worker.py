"""The Worker against the live server: a handler's result, failure, progress and
events; a result its type's output schema refuses; cancellation reaching the handler; a
lost lease raised in the handler; a worker killed mid-task whose task another worker
takes over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psycopg
import pytest

import tasklane
from tasklane import Fail, TaskContext, Worker


def until(what: str, probe, timeout: float = 30.0):
    """Polls ``probe`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def worker_of(client: tasklane.Tasklane):
    started: list[Worker] = []

    def start(handler, **kwargs) -> Worker:
        worker = Worker(client, ["py"], handler, wait_seconds=1, **kwargs).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop(timeout=10)


def test_a_handler_reports_and_its_result_or_failure_settles(client, scope, worker_of) -> None:
    def handler(ctx: TaskContext):
        if ctx.input.get("fail"):
            raise Fail("bad_input", "cannot summarize that", retryable=False)
        ctx.progress(50, phase="running")
        ctx.emit("task.output", {"text": "partial"})
        ctx.save_snapshot({"page": 1})
        ctx.usage = None  # the attempts API reports usage; nothing to say here
        return {"echo": ctx.input, "attempt": ctx.attempt}

    worker_of(handler)
    done = client.run("py", scope_id=scope, effect_key="ok", input={"n": 1}, wait=30)
    assert (done.state, done.result) == ("succeeded", {"echo": {"n": 1}, "attempt": 1})
    kinds = [e.type for e in client.events(done.id)]
    assert "task.output" in kinds and kinds[-1] == "task.succeeded"
    failed = client.run("py", scope_id=scope, effect_key="bad", input={"fail": True}, wait=30)
    assert failed.state == "failed"
    assert "[bad_input]" in failed.error.message


def test_a_result_that_breaks_the_output_schema_fails_the_attempt(client, scope) -> None:
    def handler(ctx: TaskContext):
        ctx.usage = {"input_tokens": 3, "output_tokens": 2}
        return {"output": {"label": ctx.input["label"]}}

    def run(key: str, label: str):
        input = {"label": label}
        return client.run("py_structured", scope_id=scope, effect_key=key, input=input, wait=30)

    worker = Worker(client, ["py_structured"], handler, wait_seconds=1).start()
    try:
        good = run("ok", "ham")
        assert (good.state, good.result) == ("succeeded", {"output": {"label": "ham"}})
        bad = run("bad", "eggs")
        assert (bad.state, bad.error.code) == ("failed", "invalid_output")
        assert "/label" in bad.error.message
        assert bad.usage.total_tokens == 5
    finally:
        worker.stop(timeout=10)


def test_cancellation_reaches_the_handler(client, scope, worker_of) -> None:
    saw = threading.Event()
    started = threading.Event()

    def handler(ctx: TaskContext):
        started.set()
        if ctx.wait(30):
            saw.set()
        ctx.raise_if_cancelled()
        return "not cancelled"

    worker_of(handler)
    task = client.run("py", scope_id=scope, effect_key="c", input={})
    assert started.wait(30)
    client.cancel(task.id)
    done = client.run("py", scope_id=scope, effect_key="c", input={}, wait=30)
    assert done.state == "cancelled"
    assert saw.is_set()


def test_a_lost_lease_is_an_exception_in_the_handler(client, server, scope, worker_of) -> None:
    running = threading.Event()
    lost: list[BaseException] = []

    def handler(ctx: TaskContext):
        if ctx.attempt > 1:
            return "second attempt"
        running.set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                ctx.progress(10)
            except tasklane.LeaseLost as error:
                lost.append(error)
                raise
            time.sleep(0.1)
        return "lease never lost"

    worker_of(handler)
    task = client.run("py", scope_id=scope, effect_key="lost", input={})
    assert running.wait(30)
    # As if the lease had run out and another worker had claimed the task: the lease
    # token changes. Nobody renews the new lease, so it expires and the rescuer queues
    # the task again.
    with psycopg.connect(server["database_url"], autocommit=True) as conn:
        conn.execute("UPDATE tasklane.tasks SET lease_token = gen_random_uuid() WHERE id = %s",
                     [str(task.id)])
    done = client.run("py", scope_id=scope, effect_key="lost", input={}, wait=30)
    assert (done.state, done.result, done.attempt) == ("succeeded", "second attempt", 2)
    assert len(lost) == 1 and lost[0].code in ("lease_lost", "task_gone")


WORKER_SCRIPT = textwrap.dedent("""
    import sys, time, tasklane
    def handler(ctx):
        print("started", ctx.id, flush=True)
        time.sleep(3600)
    client = tasklane.Tasklane(sys.argv[1], sys.argv[2])
    tasklane.Worker(client, ["py"], handler, wait_seconds=1).run()
""")


def test_a_killed_worker_loses_its_lease_and_another_takes_the_task(client, server, scope, worker_of) -> None:
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tasklane.__file__)))
    doomed = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, server["url"], server["token"]],
        stdout=subprocess.PIPE, text=True, env=env)
    try:
        task = client.run("py", scope_id=scope, effect_key="killed", input={"n": 7})
        line = doomed.stdout.readline()
        assert line.split() == ["started", str(task.id)]
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
    assert client.get(task.id).state == "running"

    def handler(ctx: TaskContext):
        return {"attempt": ctx.attempt, "input": ctx.input}

    worker_of(handler)
    done = client.run("py", scope_id=scope, effect_key="killed", input={"n": 7}, wait=30)
    assert (done.state, done.result) == ("succeeded", {"attempt": 2, "input": {"n": 7}})
