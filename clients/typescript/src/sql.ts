/**
 * The SQL API (docs/sql-api.md) from the application's own transaction, for postgres
 * (postgres.js: a `sql` or the `tx` of `sql.begin(async (tx) => ...)`) and pg (a
 * `Client` or `PoolClient` inside `BEGIN` ... `COMMIT`). The task exists exactly when
 * the transaction commits; a rollback leaves nothing. Refusals raised by the database
 * become `TasklaneError`s with the HTTP API's stable codes.
 */

import { fromDatabaseError } from "./errors.js";

/** postgres.js: a `sql` or `tx` (anything with `unsafe(query, params)`). */
export interface PostgresJs {
  unsafe(query: string, params?: unknown[]): PromiseLike<unknown>;
}

/** pg: a `Client`, `PoolClient` or `Pool` (anything with `query(text, values)`). */
export interface NodePg {
  query(text: string, values?: unknown[]): PromiseLike<{ rows: unknown[] }>;
}

export type Db = PostgresJs | NodePg;

export interface RunTaskArgs {
  app: string;
  taskType: string;
  scopeId: string;
  effectKey: string;
  /** Any JSON value. */
  input: unknown;
  sourceId?: string;
  usageSubject?: string;
  priority?: number;
  deadlineSeconds?: number;
  maxAttempts?: number;
  onRestart?: "fail" | "retry" | "resume";
  privacy?: "local_only" | "external_allowed";
}

export interface RunTaskResult {
  taskId: string;
  outcome: "created" | "joined" | "replayed";
}

const OPTIONS: [keyof RunTaskArgs, string][] = [
  ["sourceId", "source_id"],
  ["usageSubject", "usage_subject"],
  ["priority", "priority"],
  ["deadlineSeconds", "deadline_seconds"],
  ["maxAttempts", "max_attempts"],
  ["onRestart", "on_restart"],
  ["privacy", "privacy"],
];

/** `tasklane.run_task`: submit or join a task in `tx`'s transaction. */
export async function runTask(tx: Db, args: RunTaskArgs): Promise<RunTaskResult> {
  const params: unknown[] = [args.app, args.taskType, args.scopeId, args.effectKey, JSON.stringify(args.input)];
  let named = "";
  for (const [key, name] of OPTIONS) {
    if (args[key] !== undefined && args[key] !== null) {
      params.push(args[key]);
      named += `, ${name} => $${params.length}`;
    }
  }
  const [row] = await rows(
    tx,
    "SELECT task_id::text AS task_id, outcome FROM tasklane.run_task(app => $1, task_type => $2," +
      ` scope_id => $3, effect_key => $4, input => $5::text::jsonb${named})`,
    params,
  );
  return { taskId: String(row.task_id), outcome: row.outcome as RunTaskResult["outcome"] };
}

/** `tasklane.release_task`: whether a task has this identity. */
export async function releaseTask(
  tx: Db,
  args: { app: string; scopeId: string; effectKey: string; usageSubject?: string },
): Promise<boolean> {
  const [row] = await rows(tx, "SELECT tasklane.release_task($1, $2, $3, $4) AS released", [
    args.app,
    args.scopeId,
    args.effectKey,
    args.usageSubject ?? null,
  ]);
  return Boolean(row.released);
}

/** `tasklane.delete_tasks`: how many tasks were deleted (needs READ COMMITTED). */
export async function deleteTasks(
  tx: Db,
  args: { app: string; scopeId: string; sourceId?: string; fence?: boolean },
): Promise<number> {
  const [row] = await rows(tx, "SELECT tasklane.delete_tasks($1, $2, $3, $4)::int8::text AS deleted", [
    args.app,
    args.scopeId,
    args.sourceId ?? null,
    args.fence ?? false,
  ]);
  return Number(row.deleted);
}

/** `tasklane.list_unreleased_sources`: pairs after `after`, in byte order. */
export async function listUnreleasedSources(
  sql: Db,
  args: { app: string; after?: { scopeId: string; sourceId: string | null }; limit?: number },
): Promise<{ scopeId: string; sourceId: string | null }[]> {
  const found = await rows(
    sql,
    "SELECT scope_id, source_id FROM tasklane.list_unreleased_sources($1, $2, $3, $4)",
    [args.app, args.after?.scopeId ?? null, args.after?.sourceId ?? null, args.limit ?? 100],
  );
  return found.map((r) => ({ scopeId: String(r.scope_id), sourceId: (r.source_id as string | null) ?? null }));
}

async function rows(db: Db, query: string, params: unknown[]): Promise<Record<string, unknown>[]> {
  try {
    if ("unsafe" in db && typeof db.unsafe === "function") {
      return (await db.unsafe(query, params)) as Record<string, unknown>[];
    }
    return (await (db as NodePg).query(query, params)).rows as Record<string, unknown>[];
  } catch (error) {
    throw fromDatabaseError(error);
  }
}
