/**
 * One claimed attempt as a worker's handler sees it (`TaskContext`), and what a handler
 * throws to settle it otherwise than with a result (`Cancelled`, `Fail`, `Fallback`).
 * What the context reports goes out in the worker's batches (see `worker.ts`).
 */

import { TasklaneError } from "./errors.js";

/** Thrown by a handler (`ctx.throwIfCancelled()` does) to acknowledge a cancellation. */
export class Cancelled extends Error {
  constructor() {
    super("cancelled");
    this.name = "Cancelled";
  }
}

/** Thrown by a handler: the attempt failed with `code`, retried when `retryable`. */
export class Fail extends Error {
  constructor(
    readonly code: string,
    readonly detail: string,
    readonly options: { retryable?: boolean; retryAfterSeconds?: number } = {},
  ) {
    super(`${code}: ${detail}`);
    this.name = "Fail";
  }
}

/** Thrown by a handler: the local route cannot serve the task (next attempt external). */
export class Fallback extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "Fallback";
  }
}

/** Where a context's reports go: the worker's batcher. */
export interface Reports {
  output(ctx: TaskContext, text: string): void;
  beatSoon(ctx: TaskContext): void;
}

/** What a claim answers for one task. */
export interface Claimed {
  id: string;
  task_type: string;
  attempt: number;
  lease_token: string;
  input: unknown;
  snapshot?: unknown;
  deadline_at?: string | null;
}

export class TaskContext {
  readonly id: string;
  readonly taskType: string;
  readonly attempt: number;
  readonly leaseToken: string;
  readonly input: unknown;
  /** The last snapshot an earlier attempt saved (a resumed task), else null. */
  readonly snapshot: unknown;
  /** Aborted when the owner asks to cancel or the lease is lost. */
  readonly signal: AbortSignal;
  /** Sent with the completion when set: recorded on the attempt, charged to budgets. */
  usage?: Record<string, number>;
  provenance?: Record<string, string>;
  /** The lease is gone: nothing more is reported for this task. */
  leaseLost = false;
  /** @internal what the next batches carry */
  pendingOutput: string[] = [];
  /** @internal */
  pendingProgress?: number;
  /** @internal */
  pendingSnapshot?: { value: unknown };
  /** @internal */
  nextBeat: number;
  private readonly abort = new AbortController();

  constructor(
    private readonly reports: Reports,
    claimed: Claimed,
    readonly leaseSeconds: number,
  ) {
    this.id = claimed.id;
    this.taskType = claimed.task_type;
    this.attempt = claimed.attempt;
    this.leaseToken = claimed.lease_token;
    this.input = claimed.input;
    this.snapshot = claimed.snapshot ?? null;
    this.signal = this.abort.signal;
    this.nextBeat = Date.now() + (leaseSeconds * 1000) / 3;
  }

  /** Whether the owner asked to cancel (or the lease was lost). */
  get cancelRequested(): boolean {
    return this.signal.aborted;
  }

  /** Throws a `lease_lost` TasklaneError when the lease is gone, `Cancelled` when a
   * cancellation was requested. */
  throwIfCancelled(): void {
    this.throwIfLost();
    if (this.cancelRequested) throw new Cancelled();
  }

  /** Appends `text` to the attempt's live output (sent within tens of milliseconds). */
  writeOutput(text: string): void {
    this.throwIfLost();
    if (text) this.reports.output(this, text);
  }

  /** Reports progress (0..100) with the next batched heartbeat. */
  progress(percent: number): void {
    this.throwIfLost();
    this.pendingProgress = percent;
    this.reports.beatSoon(this);
  }

  /** Saves a snapshot a later attempt of a `resume` task starts from. */
  saveSnapshot(snapshot: unknown): void {
    this.throwIfLost();
    this.pendingSnapshot = { value: snapshot };
    this.reports.beatSoon(this);
  }

  /** Waits up to `ms`; resolves true early when cancellation is requested. */
  wait(ms: number): Promise<boolean> {
    if (this.cancelRequested) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** @internal the owner asked to cancel */
  cancel(): void {
    this.abort.abort();
  }

  /** @internal the lease is gone */
  lost(): void {
    this.leaseLost = true;
    this.abort.abort();
  }

  private throwIfLost(): void {
    if (this.leaseLost) throw new TasklaneError("lease_lost", `the lease on ${this.id} was lost`, 409);
  }
}
