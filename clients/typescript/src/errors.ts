/**
 * Typed errors carrying tasklane's stable codes: from an HTTP problem+json answer, or
 * from a refusal the SQL API raised (SQLSTATE class TL, the code in DETAIL).
 */

/** Admission refusals: the only errors worth asking again for, after `retryAfter`. */
export const RETRYABLE_CODES = new Set([
  "capacity_exhausted",
  "rate_limited",
  "budget_exhausted",
  "emergency_stop",
]);

export class TasklaneError extends Error {
  constructor(
    /** The stable code (`idempotency_conflict`, `validation_failed`, ...). */
    readonly code: string,
    readonly detail: string,
    /** The HTTP status (for SQL refusals, the status the HTTP API would answer). */
    readonly status?: number,
    /** For validation failures: the offending field. */
    readonly field?: string | null,
    /** Seconds to wait before asking again (429 and 503 only). */
    readonly retryAfter?: number,
  ) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = "TasklaneError";
  }

  /** Whether asking again later may succeed (admission refusals only). */
  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }
}

/** The error of an HTTP answer of 400 or more, with its problem body when it has one. */
export function fromResponse(response: Response, problem: unknown): TasklaneError {
  const body = (problem && typeof problem === "object" ? problem : {}) as Record<string, unknown>;
  const retryAfter = response.headers.get("retry-after");
  return new TasklaneError(
    typeof body.code === "string" ? body.code : `http_${response.status}`,
    typeof body.detail === "string" ? body.detail : "",
    response.status,
    typeof body.field === "string" ? body.field : null,
    retryAfter === null || Number.isNaN(Number(retryAfter)) ? undefined : Number(retryAfter),
  );
}

/**
 * The typed error of a database error raised by the SQL API (postgres.js or pg), or
 * the error itself when it is not a tasklane refusal.
 */
export function fromDatabaseError(error: unknown): unknown {
  const e = error as Record<string, unknown> | null;
  const state = e && typeof e.code === "string" ? e.code : "";
  if (!state.startsWith("TL")) return error;
  const hint = typeof e!.hint === "string" ? e!.hint : "";
  const wait = /^retry after (\d+) seconds$/.exec(hint);
  const column = (e!.column_name ?? e!.column) as string | undefined;
  return new TasklaneError(
    typeof e!.detail === "string" ? e!.detail : "refused",
    typeof e!.message === "string" ? e!.message : "",
    Number(state.slice(2)),
    column ?? null,
    wait ? Number(wait[1]) : undefined,
  );
}
