/**
 * The Worker's live output without a server: fetch is replaced by a fake that claims
 * three tasks once, records every request, and answers a batched output write `ok`
 * for each item but one (`lease_lost`), whose attempt then reports nothing more.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Tasklane, Worker, type TaskContext } from "../src/index.js";

type Item = { id: string; lease_token: string; text: string };

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status: 200,
    headers: { "content-type": "application/json", date: new Date().toUTCString() },
  });
}

test("one request carries the output of every attempt; each item is answered on its own", async () => {
  const realFetch = globalThis.fetch;
  const outputs: Item[][] = [];
  const completed: string[] = [];
  const paths: string[] = [];
  let claims = 0;
  let answered!: () => void;
  const outputAnswered = new Promise<void>((resolve) => (answered = resolve));
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const path = new URL(String(input)).pathname;
    paths.push(path);
    const body = JSON.parse(String(init?.body ?? "{}"));
    if (path === "/v1/worker/claim") {
      claims += 1;
      if (claims > 1) {
        // Long-poll until the worker stops and aborts the claim.
        return new Promise<Response>((_, reject) =>
          init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))),
        );
      }
      const expires = new Date(Date.now() + 60_000).toISOString();
      const tasks = [1, 2, 3].map((n) => ({ id: `t${n}`, task_type: "py", attempt: 1, lease_token: `l${n}`, lease_expires_at: expires, input: {} }));
      return json({ tasks });
    }
    if (path === "/v1/worker/output") {
      outputs.push(body.items);
      answered();
      return json({ items: body.items.map((item: Item) => ({ id: item.id, status: item.id === "t2" ? "lease_lost" : "ok" })) });
    }
    if (path === "/v1/worker/complete") {
      completed.push(...body.items.map((item: Item) => item.id));
      return json({ items: body.items.map((item: Item) => ({ id: item.id, status: "succeeded" })) });
    }
    return json({ items: [] });
  };
  const worker = new Worker(
    new Tasklane("http://tasklane.invalid", "tl_test"),
    ["py"],
    async (ctx: TaskContext) => {
      ctx.writeOutput(`${ctx.id} says `);
      ctx.writeOutput("hello");
      await outputAnswered;
      return null;
    },
    { concurrency: 3, waitSeconds: 1 },
  );
  try {
    worker.start();
    await outputAnswered;
  } finally {
    await worker.stop(10);
    globalThis.fetch = realFetch;
  }
  assert.deepEqual(outputs, [
    [
      { id: "t1", lease_token: "l1", text: "t1 says hello" },
      { id: "t2", lease_token: "l2", text: "t2 says hello" },
      { id: "t3", lease_token: "l3", text: "t3 says hello" },
    ],
  ]);
  // The lost lease is told apart: its attempt reports nothing more.
  assert.deepEqual(completed.sort(), ["t1", "t3"]);
  assert.ok(!paths.some((p) => p.startsWith("/v1/worker/tasks/") && p.endsWith("/output")), paths.join(", "));
});
