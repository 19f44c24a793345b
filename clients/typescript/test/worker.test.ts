import assert from "node:assert/strict";
import { test } from "node:test";

import { Tasklane, Worker, type TaskContext } from "../src/index.js";
import { env, scope, skip } from "./env.js";

/** Resolves when `probe` does (bounded). */
async function until<T>(what: string, probe: () => T | undefined | false, seconds = 30): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("tasks run at once up to concurrency; a cancel reaches one of them", { skip }, async () => {
  const client = new Tasklane(env.url, env.token);
  const s = scope();
  let inFlight = 0;
  let most = 0;
  const worker = new Worker(
    client,
    ["py"],
    async (ctx: TaskContext) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      const input = ctx.input as { n: number; cancel?: boolean };
      await until("all four running", () => most >= 4);
      if (input.cancel) await ctx.wait(30_000);
      inFlight -= 1;
      ctx.throwIfCancelled();
      ctx.progress(100);
      return { n: input.n };
    },
    { concurrency: 4, waitSeconds: 1 },
  ).start();
  try {
    const tasks = [];
    for (let n = 0; n < 4; n++) {
      tasks.push(await client.run({ task_type: "py", scope_id: s, effect_key: `c${n}`, input: { n, cancel: n === 3 } }));
    }
    await until("four in flight", () => most >= 4);
    await client.cancel(tasks[3].id);
    for (let n = 0; n < 4; n++) {
      const done = await client.run({ task_type: "py", scope_id: s, effect_key: `c${n}`, input: { n, cancel: n === 3 } }, { wait: 30 });
      if (n === 3) assert.equal(done.state, "cancelled");
      else assert.deepEqual([done.state, done.result], ["succeeded", { n }]);
    }
  } finally {
    await worker.stop(10);
  }
});

test("writeOutput reaches an observer in order", { skip }, async () => {
  const client = new Tasklane(env.url, env.token);
  const tokens = Array.from({ length: 40 }, (_, i) => `tök${i} `);
  let observed = false;
  const task = await client.run({ task_type: "py", scope_id: scope(), effect_key: "stream", input: {} });
  const seen: { type: string; offset?: number; text?: string }[] = [];
  const observer = (async () => {
    for await (const event of client.output(task.id)) {
      seen.push(event as (typeof seen)[number]);
      observed = true;
    }
  })();
  const worker = new Worker(
    client,
    ["py"],
    async (ctx: TaskContext) => {
      ctx.writeOutput(tokens[0]);
      await until("the observer following", () => observed);
      for (const token of tokens.slice(1)) {
        ctx.writeOutput(token);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return { text: tokens.join("") };
    },
    { waitSeconds: 1 },
  ).start();
  try {
    await observer;
  } finally {
    await worker.stop(10);
  }
  let text = "";
  for (const delta of seen.filter((e) => e.type === "output.delta")) {
    assert.equal(delta.offset, [...text].length);
    text += delta.text;
  }
  assert.equal(text, tokens.join(""));
  assert.equal(seen[seen.length - 1].type, "task.succeeded");
});

test("stop cuts an idle claim short", { skip }, async () => {
  // The claim's request is watched through fetch itself: once it is in flight, stop()
  // must abort it (the fetch rejects with AbortError) and resolve without waiting out
  // the 30 s long poll. Were the claim not aborted, stop() would wait for the poll to
  // answer, and the claim's fetch would resolve instead of rejecting.
  const client = new Tasklane(env.url, env.token);
  const realFetch = globalThis.fetch;
  // The answer is wrapped: a promise resolved with a promise would wait for it.
  let claimStarted!: (claim: { answer: Promise<Response> }) => void;
  const claimed = new Promise<{ answer: Promise<Response> }>((resolve) => (claimStarted = resolve));
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const answer = realFetch(input, init);
    if (String(input).endsWith("/v1/worker/claim")) {
      // Settled here, so an early rejection is never reported as unhandled.
      answer.catch(() => undefined);
      claimStarted({ answer });
    }
    return answer;
  };
  let claim: { answer: Promise<Response> };
  const worker = new Worker(client, ["py"], () => null, { waitSeconds: 30 });
  try {
    worker.start();
    claim = await claimed;
  } finally {
    globalThis.fetch = realFetch;
  }
  await worker.stop(60);
  await assert.rejects(claim.answer, (error: Error) => error.name === "AbortError");
});
