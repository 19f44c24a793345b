import assert from "node:assert/strict";
import { test } from "node:test";

import pg from "pg";
import postgres from "postgres";

import { Tasklane, TasklaneError, deleteTasks, listUnreleasedSources, releaseTask, runTask } from "../src/index.js";
import { env, scope, skip } from "./env.js";

class RollBack extends Error {}

test("postgres.js: a rolled-back transaction leaves no task; a committed one runs", { skip }, async () => {
  const sql = postgres(env.databaseUrl, { max: 1, onnotice: () => {} });
  const client = new Tasklane(env.url, env.token);
  const s = scope();
  try {
    await sql`SET ROLE tasklane_app`;
    let rolled = "";
    await assert.rejects(
      sql.begin(async (tx) => {
        const run = await runTask(tx, { app: env.app, taskType: "noop", scopeId: s, effectKey: "rolled", input: { n: 1 } });
        assert.equal(run.outcome, "created");
        rolled = run.taskId;
        throw new RollBack();
      }),
      RollBack,
    );
    await assert.rejects(client.get(rolled), (e: TasklaneError) => e.code === "not_found");
    const kept = await sql.begin((tx) =>
      runTask(tx, { app: env.app, taskType: "noop", scopeId: s, effectKey: "kept", input: { n: 1.0 }, priority: 2 }),
    );
    assert.equal(kept.outcome, "created");
    // The same request over HTTP is the same task; a worker ran it.
    const done = await client.run(
      { task_type: "noop", scope_id: s, effect_key: "kept", input: { n: 1 }, priority: 2 },
      { wait: 20 },
    );
    assert.equal(done.id, kept.taskId);
    assert.equal(done.state, "succeeded");
    await assert.rejects(
      sql.begin((tx) => runTask(tx, { app: env.app, taskType: "noop", scopeId: s, effectKey: "kept", input: { n: 2 } })),
      (e: TasklaneError) => e.code === "idempotency_conflict" && e.status === 409,
    );
    await assert.rejects(
      sql.begin((tx) => runTask(tx, { app: env.app, taskType: "noop", scopeId: s, effectKey: "x", input: {}, maxAttempts: 99 })),
      (e: TasklaneError) => e.code === "validation_failed" && e.field === "max_attempts",
    );
    const replay = await sql.begin((tx) =>
      runTask(tx, { app: env.app, taskType: "noop", scopeId: s, effectKey: "kept", input: { n: 1 }, priority: 2 }),
    );
    assert.deepEqual(replay, { taskId: kept.taskId, outcome: "replayed" });
    await sql.begin(async (tx) => {
      assert.equal(await releaseTask(tx, { app: env.app, scopeId: s, effectKey: "kept" }), true);
      assert.equal(await deleteTasks(tx, { app: env.app, scopeId: s }), 1);
    });
  } finally {
    await sql.end();
  }
});

test("pg: run, release, reconcile and delete in BEGIN ... COMMIT", { skip }, async () => {
  const db = new pg.Client({ connectionString: env.databaseUrl });
  await db.connect();
  const client = new Tasklane(env.url, env.token);
  const s = scope();
  try {
    await db.query("SET ROLE tasklane_app");
    await db.query("BEGIN");
    const rolled = await runTask(db, { app: env.app, taskType: "noop", scopeId: s, effectKey: "r", input: [1] });
    await db.query("ROLLBACK");
    await assert.rejects(client.get(rolled.taskId), (e: TasklaneError) => e.code === "not_found");
    await db.query("BEGIN");
    const run = await runTask(db, {
      app: env.app, taskType: "sleep", scopeId: s, effectKey: "c", input: { ms: 10 }, sourceId: "src-1",
    });
    await db.query("COMMIT");
    assert.equal(run.outcome, "created");
    const done = await client.run(
      { task_type: "sleep", scope_id: s, effect_key: "c", input: { ms: 10 }, source_id: "src-1" },
      { wait: 20 },
    );
    assert.equal(done.state, "succeeded");
    // Page through the app's pairs (keyset: after the last pair of a page).
    let found = false;
    let after: { scopeId: string; sourceId: string | null } | undefined;
    for (;;) {
      const page = await listUnreleasedSources(db, { app: env.app, after, limit: 10 });
      found ||= page.some((p) => p.scopeId === s && p.sourceId === "src-1");
      if (page.length < 10) break;
      after = page[page.length - 1];
    }
    assert.ok(found);
    await db.query("BEGIN");
    assert.equal(await releaseTask(db, { app: env.app, scopeId: s, effectKey: "c" }), true);
    assert.equal(await deleteTasks(db, { app: env.app, scopeId: s, sourceId: "src-1" }), 1);
    await db.query("COMMIT");
    await assert.rejects(client.get(done.id), (e: TasklaneError) => e.code === "not_found");
  } finally {
    await db.end();
  }
});
