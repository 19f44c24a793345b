"""The Worker against the live server: a handler's result, failure, progress and
events; a result its type's output schema refuses; cancellation reaching the handler; a
lost lease raised in the handler; a worker killed mid-task whose task another worker
takes over, and whose live output an observer on another replica sees reset for the next
attempt."""

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
from tasklane.output import _stream


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


def test_tasks_run_at_once_up_to_concurrency_and_settle_in_batches(client, scope, worker_of) -> None:
    together = threading.Barrier(6, timeout=30)

    def handler(ctx: TaskContext):
        together.wait()  # all six run at the same time, or this breaks
        ctx.progress(50)
        return {"n": ctx.input["n"]}

    worker_of(handler, concurrency=6)
    ids = [client.run("py", scope_id=scope, effect_key=f"c{n}", input={"n": n}).id for n in range(6)]
    for n, id in enumerate(ids):
        done = client.run("py", scope_id=scope, effect_key=f"c{n}", input={"n": n}, wait=30)
        assert (done.id, done.state, done.result) == (id, "succeeded", {"n": n})
    assert not together.broken


def test_cancellation_reaches_one_handler_of_many(client, scope, worker_of) -> None:
    started = {k: threading.Event() for k in ("keep", "drop")}

    def handler(ctx: TaskContext):
        started[ctx.input["k"]].set()
        ctx.wait(1.5 if ctx.input["k"] == "keep" else 30)
        ctx.raise_if_cancelled()
        return "kept"

    worker_of(handler, concurrency=2)
    keep = client.run("py", scope_id=scope, effect_key="keep", input={"k": "keep"})
    drop = client.run("py", scope_id=scope, effect_key="drop", input={"k": "drop"})
    assert started["keep"].wait(30) and started["drop"].wait(30)
    client.cancel(drop.id)
    assert client.run("py", scope_id=scope, effect_key="drop", input={"k": "drop"}, wait=30).state == "cancelled"
    assert client.run("py", scope_id=scope, effect_key="keep", input={"k": "keep"}, wait=30).result == "kept"


def test_stop_cuts_an_idle_claim_short_and_lets_running_handlers_finish(client, scope) -> None:
    idle = Worker(client, ["py"], lambda ctx: None, wait_seconds=30).start()
    # The claim's long poll is in flight (its connection is open): stop cuts it.
    until("the claim in flight", lambda: idle._claims._backend and idle._claims._backend._open)
    began = time.monotonic()
    idle.stop(timeout=60)
    assert time.monotonic() - began < 15, "stop waited out the 30 s long poll"

    running = threading.Event()

    def slow(ctx: TaskContext):
        running.set()
        time.sleep(1)
        return "finished"

    busy = Worker(client, ["py"], slow, wait_seconds=30).start()
    task = client.run("py", scope_id=scope, effect_key="slow", input={})
    assert running.wait(30)
    busy.stop(timeout=30)
    assert client.get(task.id).result == "finished"


def test_live_output_reaches_an_observer_in_order(client, scope, worker_of) -> None:
    tokens = [f"tök{i} " for i in range(60)]
    first_seen = threading.Event()
    seen: list = []

    def observe(task_id) -> None:
        for event in client.output(task_id):
            seen.append(event)
            first_seen.set()

    def handler(ctx: TaskContext):
        ctx.write_output(tokens[0])
        assert first_seen.wait(30)  # the observer follows: the rest streams to it live
        for token in tokens[1:]:
            ctx.write_output(token)
            time.sleep(0.005)
        return {"text": "".join(tokens)}

    task = client.run("py", scope_id=scope, effect_key="stream", input={})
    observer = threading.Thread(target=observe, args=(task.id,))
    observer.start()
    worker_of(handler, concurrency=2)
    observer.join(60)
    text = ""
    for delta in (e for e in seen if e.type == "output.delta"):
        assert (delta.attempt, delta.offset) == (1, len(text))
        text += delta.text
    assert text == "".join(tokens)
    assert len([e for e in seen if e.type == "output.delta"]) > 1
    assert seen[-1].type == "task.succeeded"


STREAMING_WORKER_SCRIPT = textwrap.dedent("""
    import sys, time, tasklane
    def handler(ctx):
        for i in range(20):
            ctx.write_output(f"first{i:02} ")
            time.sleep(0.01)
        time.sleep(3600)
    client = tasklane.Tasklane(sys.argv[1], sys.argv[2])
    tasklane.Worker(client, ["py"], handler, wait_seconds=1).run()
""")


def test_a_killed_workers_output_is_reset_for_the_next_attempt_on_another_replica(
    client, server, scope, worker_of
) -> None:
    first = "".join(f"first{i:02} " for i in range(20))
    second = [f"second{i:02} " for i in range(15)]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tasklane.__file__)))
    doomed = subprocess.Popen(
        [sys.executable, "-c", STREAMING_WORKER_SCRIPT, server["url"], server["token"]], env=env)
    seen: list = []
    # The observer reads the other replica's stream as the server sends it (the client's
    # own follower would make up a reset of its own when the attempt changes).
    with tasklane.Tasklane(os.environ["TASKLANE_OBSERVER_URL"], server["token"]) as observer:
        try:
            task = client.run("py", scope_id=scope, effect_key="streamed", input={})

            def observe() -> None:
                for event in _stream(observer.http.get_httpx_client(), task.id):
                    seen.append(event)
                    if event.terminal:
                        return

            follower = threading.Thread(target=observe, daemon=True)
            follower.start()

            def text_of(attempt: int) -> str:
                text = ""
                for event in list(seen):
                    if event.type == "output.delta" and event.attempt == attempt:
                        assert event.offset == len(text), (event, text)
                        text += event.text
                return text

            until("the first attempt's output on the other replica", lambda: text_of(1) == first)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(10)
        finally:
            if doomed.poll() is None:
                doomed.kill()

        def handler(ctx: TaskContext):
            for piece in second:
                ctx.write_output(piece)
            return {"attempt": ctx.attempt}

        worker_of(handler)
        follower.join(60)
        assert not follower.is_alive(), "the observer's stream did not end"

    reset = [i for i, event in enumerate(seen) if event.type == "output.reset"]
    assert len(reset) == 1 and seen[reset[0]].attempt == 2, seen
    after = seen[reset[0] + 1:]
    assert all(e.attempt == 2 for e in after if e.type == "output.delta"), after
    assert text_of(1) == first and text_of(2) == "".join(second)
    assert seen[-1].type == "task.succeeded" and seen[-1].task["result"] == {"attempt": 2}
