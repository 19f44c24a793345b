/**
 * A remote worker: runs a handler for tasks of its types over the worker protocol
 * (docs/api.md, "Worker protocol"), up to `concurrency` at once. Claims long-poll and
 * take as many tasks as there are free slots; what the handlers report goes out in
 * rounds: first the live output every attempt wrote (`ctx.writeOutput`), in one batched
 * write (`POST /v1/worker/output`), then the
 * settlements (every success in one batched completion), then one batched heartbeat
 * for every lease a third through (or with progress to report). `stop()` cuts a
 * waiting claim short at once and lets running handlers finish within a grace period.
 *
 * A handler returns the result, or throws `Fail`, `Fallback` or `Cancelled`
 * (`ctx.throwIfCancelled()`); anything else thrown fails the attempt, retryable, as
 * `handler_error`. When the lease is lost, `ctx.signal` aborts and reporting throws a
 * `lease_lost` TasklaneError; nothing more is sent for that task.
 */

import { hostname } from "node:os";

import { Cancelled, type Claimed, Fail, Fallback, type Reports, TaskContext } from "./context.js";
import { TasklaneError, fromResponse } from "./errors.js";
import type { Tasklane } from "./client.js";

export type Handler = (ctx: TaskContext) => unknown | Promise<unknown>;

export interface WorkerOptions {
  workerId?: string;
  route?: "local" | "external";
  /** Tasks run at once (default 1). */
  concurrency?: number;
  /** How long a claim waits for tasks, 0..30 s (default 10). */
  waitSeconds?: number;
}

/** How long new output waits to be sent with more. */
const OUTPUT_EVERY_MS = 20;
/** Most items in one batched request, and tasks in one claim (the server's bounds). */
const BATCH = 500;
const MAX_CLAIM = 100;
/** Most text in one item of a batched output write (UTF-8 bytes; the server's bound),
 * and in one such request (JSON-encoded; well under the server's body limit). Longer
 * output goes out in pieces, in order, in the same round. */
const OUTPUT_ITEM_BYTES = 64 * 1024;
const OUTPUT_REQUEST_BYTES = 512 * 1024;

type Settlement = { ctx: TaskContext; kind: "complete" | "fail" | "fallback" | "cancelled" | "lost"; value?: unknown };

export class Worker implements Reports {
  readonly workerId: string;
  private readonly route: string;
  private readonly concurrency: number;
  private readonly waitSeconds: number;
  private readonly running = new Map<string, TaskContext>();
  private settling: Settlement[] = [];
  private readonly claimAbort = new AbortController();
  private stopping = false;
  private loop?: Promise<void>;
  private round?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private idle?: () => void;

  constructor(
    private readonly client: Tasklane,
    private readonly taskTypes: string[],
    private readonly handler: Handler,
    options: WorkerOptions = {},
  ) {
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}`;
    this.route = options.route ?? "local";
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.waitSeconds = options.waitSeconds ?? 10;
  }

  /** Starts claiming in the background. */
  start(): this {
    this.loop = this.claimLoop();
    this.schedule();
    return this;
  }

  /** Stops claiming at once, then waits up to `graceSeconds` for running handlers to
   * finish and settle. */
  async stop(graceSeconds = 30): Promise<void> {
    this.stopping = true;
    this.claimAbort.abort();
    await this.loop?.catch(() => undefined);
    if (this.running.size > 0) {
      const idle = new Promise<void>((resolve) => (this.idle = resolve));
      await Promise.race([idle, new Promise((resolve) => setTimeout(resolve, graceSeconds * 1000))]);
    }
    clearTimeout(this.timer);
    await this.round;
  }

  // -- claiming --------------------------------------------------------------------

  private async claimLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = Math.min(this.concurrency - this.running.size, MAX_CLAIM);
      if (free <= 0) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      let answer: { tasks: (Claimed & { lease_expires_at: string })[] };
      let serverNow: number;
      try {
        const body = { worker_id: this.workerId, task_types: this.taskTypes, route: this.route, max: free, wait_seconds: this.waitSeconds };
        const response = await this.post("/v1/worker/claim", body, this.claimAbort.signal);
        answer = (await response.json()) as typeof answer;
        const date = response.headers.get("date");
        serverNow = date ? Date.parse(date) + 1000 : Date.now();
        failures = 0;
      } catch (error) {
        if (this.stopping) return;
        if (error instanceof TasklaneError && !error.retryable) throw error;
        failures += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** Math.min(failures, 4), 8000)));
        continue;
      }
      for (const task of answer.tasks) {
        const leaseSeconds = Math.max((Date.parse(task.lease_expires_at) - serverNow) / 1000, 1);
        const ctx = new TaskContext(this, task, leaseSeconds);
        this.running.set(ctx.id, ctx);
        void this.runOne(ctx);
      }
      this.schedule();
    }
  }

  private async runOne(ctx: TaskContext): Promise<void> {
    let settlement: Settlement;
    try {
      settlement = { ctx, kind: "complete", value: await this.handler(ctx) };
    } catch (error) {
      if (error instanceof Cancelled) settlement = { ctx, kind: "cancelled" };
      else if (error instanceof Fail) settlement = { ctx, kind: "fail", value: error };
      else if (error instanceof Fallback) settlement = { ctx, kind: "fallback", value: error };
      else if (error instanceof TasklaneError && (error.code === "lease_lost" || error.code === "task_gone")) settlement = { ctx, kind: "lost" };
      else settlement = { ctx, kind: "fail", value: new Fail("handler_error", String(error).slice(0, 1000), { retryable: true }) };
    }
    this.settling.push(settlement);
    this.schedule(0);
  }

  // -- what contexts report (Reports) ---------------------------------------------------

  output(ctx: TaskContext, text: string): void {
    ctx.pendingOutput.push(text);
    this.schedule(OUTPUT_EVERY_MS);
  }

  beatSoon(ctx: TaskContext): void {
    ctx.nextBeat = 0;
    this.schedule(0);
  }

  // -- rounds ---------------------------------------------------------------------------

  /** Runs a round after `ms` (default: when the first lease is due), one at a time. */
  private schedule(ms?: number): void {
    let wait = ms;
    if (wait === undefined) {
      const first = Math.min(...[...this.running.values()].map((c) => c.nextBeat), Date.now() + 1000);
      wait = Math.max(first - Date.now(), 0);
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.round = (this.round ?? Promise.resolve()).then(() => this.sendRound()).catch(() => undefined);
      void this.round.then(() => {
        if (!this.stopping || this.running.size > 0) this.schedule();
      });
    }, wait);
  }

  private async sendRound(): Promise<void> {
    await this.sendOutput();
    const settling = this.settling;
    this.settling = [];
    await this.complete(settling.filter((s) => s.kind === "complete"));
    for (const s of settling.filter((s) => s.kind !== "complete")) await this.settleOne(s);
    await this.heartbeat();
  }

  /** Sends the output every attempt wrote since the last round in one batched write
   * (more when it is too long for one), each item answered on its own. */
  private async sendOutput(): Promise<void> {
    let pending: [TaskContext, string][] = [];
    for (const ctx of this.running.values()) {
      if (ctx.pendingOutput.length === 0) continue;
      pending.push([ctx, ctx.pendingOutput.join("")]);
      ctx.pendingOutput = [];
    }
    while (pending.length > 0) {
      const sent: TaskContext[] = [];
      const items: { id: string; lease_token: string; text: string }[] = [];
      const rest: [TaskContext, string][] = [];
      let size = 0;
      for (const [ctx, text] of pending) {
        if (ctx.leaseLost) continue;
        const [piece, left] = split(text, OUTPUT_ITEM_BYTES);
        const cost = Buffer.byteLength(JSON.stringify(piece));
        if (items.length > 0 && (items.length === BATCH || size + cost > OUTPUT_REQUEST_BYTES)) {
          rest.push([ctx, text]);
          continue;
        }
        sent.push(ctx);
        items.push({ id: ctx.id, lease_token: ctx.leaseToken, text: piece });
        size += cost;
        if (left) rest.push([ctx, left]);
      }
      pending = rest;
      if (items.length === 0) continue;
      try {
        const response = await this.post("/v1/worker/output", { items });
        const answers = ((await response.json()) as { items: { status: string }[] }).items;
        for (const [n, ctx] of sent.entries()) if (answers[n]?.status !== "ok") ctx.lost();
      } catch {
        // Live output is not retried: the task's result holds the whole answer.
      }
    }
  }

  private async complete(batch: Settlement[]): Promise<void> {
    for (let start = 0; start < batch.length; start += BATCH) {
      const chunk = batch.slice(start, start + BATCH).filter((s) => !s.ctx.leaseLost);
      const items = chunk.map(({ ctx, value }) => ({ id: ctx.id, lease_token: ctx.leaseToken, result: value ?? null, ...extras(ctx) }));
      let answers: { status: string; error?: { message?: string } }[] = [];
      if (items.length > 0) {
        try {
          const response = await this.post("/v1/worker/complete", { worker_id: this.workerId, items });
          answers = ((await response.json()) as { items: typeof answers }).items;
        } catch {
          answers = items.map(() => ({ status: "unsent" }));
        }
      }
      for (const [n, s] of chunk.entries()) {
        const answer = answers[n];
        if (answer?.status === "invalid_output") {
          const fail = new Fail("invalid_output", (answer.error?.message ?? "").slice(0, 1000), { retryable: true });
          await this.settleOne({ ctx: s.ctx, kind: "fail", value: fail }, extras(s.ctx));
          continue;
        }
        if (answer?.status === "lease_lost" || answer?.status === "task_gone") s.ctx.lost();
        this.done(s.ctx);
      }
      for (const s of batch.slice(start, start + BATCH)) if (s.ctx.leaseLost) this.done(s.ctx);
    }
  }

  private async settleOne({ ctx, kind, value }: Settlement, more: object = {}): Promise<void> {
    if (kind !== "lost" && !ctx.leaseLost) {
      const token = { lease_token: ctx.leaseToken };
      if (kind === "fail") {
        const fail = value as Fail;
        const body = { ...token, code: fail.code, message: fail.detail, retryable: fail.options.retryable ?? false, ...more };
        if (fail.options.retryAfterSeconds !== undefined) Object.assign(body, { retry_after_seconds: fail.options.retryAfterSeconds });
        await this.guard(ctx, () => this.post(`/v1/worker/tasks/${ctx.id}/fail`, body));
      } else if (kind === "fallback") {
        await this.guard(ctx, () => this.post(`/v1/worker/tasks/${ctx.id}/fallback`, { ...token, reason: (value as Fallback).reason }));
      } else if (kind === "cancelled") {
        await this.guard(ctx, () => this.post(`/v1/worker/tasks/${ctx.id}/cancelled`, token));
      }
    }
    this.done(ctx);
  }

  private async heartbeat(): Promise<void> {
    const now = Date.now();
    const due = [...this.running.values()].filter((c) => c.nextBeat <= now && !c.leaseLost);
    for (let start = 0; start < due.length; start += BATCH) {
      const chunk = due.slice(start, start + BATCH);
      const items = chunk.map((ctx) => {
        const item: Record<string, unknown> = { id: ctx.id, lease_token: ctx.leaseToken };
        if (ctx.pendingProgress !== undefined) item.progress = ctx.pendingProgress;
        if (ctx.pendingSnapshot) item.snapshot = ctx.pendingSnapshot.value;
        ctx.pendingProgress = undefined;
        ctx.pendingSnapshot = undefined;
        ctx.nextBeat = now + (ctx.leaseSeconds * 1000) / 3;
        return item;
      });
      try {
        const response = await this.post("/v1/worker/heartbeats", { worker_id: this.workerId, items });
        const answers = ((await response.json()) as { items: { status: string; cancel_requested: boolean }[] }).items;
        for (const [n, ctx] of chunk.entries()) {
          if (answers[n].status !== "ok") ctx.lost();
          else if (answers[n].cancel_requested) ctx.cancel();
        }
      } catch {
        // Transient: the next beat may still come in time.
      }
    }
  }

  /** Runs a write of `ctx`'s; a lost lease marks it, other errors are dropped. */
  private async guard(ctx: TaskContext, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (error instanceof TasklaneError && (error.code === "lease_lost" || error.code === "task_gone")) ctx.lost();
    }
  }

  private done(ctx: TaskContext): void {
    if (!this.running.delete(ctx.id)) return;
    if (this.running.size === 0) this.idle?.();
  }

  private async post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    const response = await fetch(`${this.client.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${this.client.token}` },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) {
      const problem = await response.json().catch(() => undefined);
      throw fromResponse(response, problem);
    }
    return response;
  }
}

/** `text` cut to at most `limit` UTF-8 bytes at a character's boundary, and the rest. */
function split(text: string, limit: number): [string, string] {
  const bytes = Buffer.from(text);
  if (bytes.length <= limit) return [text, ""];
  let cut = limit;
  while ((bytes[cut] & 0xc0) === 0x80) cut -= 1; // a continuation byte: back to the character's start
  const head = bytes.subarray(0, cut).toString();
  return [head, text.slice(head.length)];
}

function extras(ctx: TaskContext): object {
  return { ...(ctx.usage ? { usage: ctx.usage } : {}), ...(ctx.provenance ? { provenance: ctx.provenance } : {}) };
}

export { Cancelled, Fail, Fallback, TaskContext };
