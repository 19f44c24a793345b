import assert from "node:assert/strict";
import { test } from "node:test";

import { Tasklane, TasklaneError, createHttpClient } from "../src/index.js";
import { env, scope, skip } from "./env.js";

test("run with wait, replay, conflict, release, delete", { skip }, async () => {
  const client = new Tasklane(env.url, env.token);
  const s = scope();
  const body = { task_type: "noop", scope_id: s, effect_key: "k", input: { b: [1, 2], a: "é" } };
  const done = await client.run(body, { wait: 20 });
  assert.equal(done.state, "succeeded");
  assert.deepEqual(done.result, { b: [1, 2], a: "é" });
  const again = await client.run({ ...body, input: { a: "é", b: [1, 2] } });
  assert.equal(again.id, done.id);
  await assert.rejects(client.run({ ...body, input: { a: 1 } }), (e: TasklaneError) => {
    assert.equal(e.code, "idempotency_conflict");
    assert.equal(e.status, 409);
    assert.equal(e.retryable, false);
    return true;
  });
  assert.equal(await client.release(s, "k"), true);
  assert.notEqual((await client.get(done.id)).released_at, null);
  assert.equal(await client.deleteScope(s), 1);
  await assert.rejects(client.get(done.id), (e: TasklaneError) => e.code === "not_found" && e.status === 404);
});

test("a finished task's output is its terminal event; a missing task is a 404", { skip }, async () => {
  const client = new Tasklane(env.url, env.token);
  const done = await client.run({ task_type: "noop", scope_id: scope(), effect_key: "o", input: {} }, { wait: 20 });
  const events = [];
  for await (const event of client.output(done.id)) events.push(event);
  assert.deepEqual(
    events.map((e) => e.type),
    ["task.succeeded"],
  );
  const last = events[0];
  assert.ok(last.type === "task.succeeded" && last.task.id === done.id);
  const missing = "01a22f72-0000-7000-8000-000000000000";
  await assert.rejects(
    (async () => {
      for await (const _ of client.output(missing)) void _;
    })(),
    (e: TasklaneError) => e.code === "not_found" && e.status === 404,
  );
});

test("the typed client reaches every route; bad input is a typed error", { skip }, async () => {
  const http = createHttpClient(env.url, env.token);
  const page = await http.GET("/v1/tasks", { params: { query: { limit: 1 } } });
  assert.equal(page.response.status, 200);
  assert.ok(Array.isArray(page.data?.items));
  const client = new Tasklane(env.url, env.token);
  await assert.rejects(
    client.run({ task_type: "noop", scope_id: scope(), effect_key: "k", input: {}, priority: 101 }),
    (e: TasklaneError) => e.code === "validation_failed" && e.field === "priority",
  );
  await assert.rejects(
    client.run({ task_type: "nope", scope_id: scope(), effect_key: "k", input: {} }),
    (e: TasklaneError) => e.code === "unknown_task_type",
  );
});

/** A fetch that answers `answers` in order, counting calls. */
function scripted(answers: [number, Record<string, unknown>, Record<string, string>][]) {
  const calls: Request[] = [];
  const waits: number[] = [];
  const fake = async (input: Request) => {
    calls.push(input);
    const [status, body, headers] = answers[calls.length - 1];
    return new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/problem+json", ...headers },
    });
  };
  const client = new Tasklane("http://tasklane.invalid", "tl_x", {
    fetch: fake as typeof fetch,
    sleep: async (s) => {
      waits.push(s);
    },
  });
  return { client, calls, waits };
}

const TASK = {
  id: "0193a5c2-7f00-7000-8000-000000000001", task_type: "noop", scope_id: "s", state: "queued",
  priority: 0, attempt: 0, max_attempts: 3, created_at: "2026-12-01T05:00:00Z",
  links: { self: "/v1/tasks/x", events: "/v1/tasks/x/events" },
};
const problem = (status: number, code: string) => ({ type: "about:blank", title: "x", status, detail: code, code });

test("refusals are retried as Retry-After says; permanent errors never", async () => {
  const body = { task_type: "noop", scope_id: "s", effect_key: "k", input: {} };
  const ok = scripted([
    [429, problem(429, "rate_limited"), { "retry-after": "3" }],
    [503, problem(503, "emergency_stop"), { "retry-after": "1" }],
    [202, TASK, {}],
  ]);
  assert.equal((await ok.client.run(body)).id, TASK.id);
  assert.deepEqual(ok.waits, [3, 1]);
  assert.equal(ok.calls.length, 3);
  for (const [status, code] of [[409, "idempotency_conflict"], [422, "validation_failed"], [500, "internal"]] as const) {
    const permanent = scripted([[status, problem(status, code), { "retry-after": "1" }]]);
    await assert.rejects(permanent.client.run(body), (e: TasklaneError) => e.code === code);
    assert.equal(permanent.calls.length, 1);
    assert.deepEqual(permanent.waits, []);
  }
  const long = scripted([[429, problem(429, "budget_exhausted"), { "retry-after": "7200" }]]);
  await assert.rejects(long.client.run(body), (e: TasklaneError) => e.retryAfter === 7200);
  assert.equal(long.calls.length, 1);
});
