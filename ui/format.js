// Small formatting helpers shared by the pages.

export const TERMINAL = ["succeeded", "failed", "cancelled"];
export const STATES = [
  "queued", "running", "cancelling", "waiting_for_retry", "waiting_for_external_fallback",
  "succeeded", "failed", "cancelled",
];

export const isTerminal = (state) => TERMINAL.includes(state);

/**
 * A timestamp in UTC, as the API and the command line give it, to the second
 * ("2026-12-01 02:32:39 UTC"), or an em dash.
 */
export function time(value) {
  if (!value) return "—";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * The time from `from` to `to` (now when `to` is absent) for people: "850 ms", "4.2 s",
 * "3 min 5 s", "2 h 7 min"; an em dash without `from`.
 */
export function duration(from, to, now = Date.now()) {
  if (!from) return "—";
  const ms = Math.max(0, (to ? Date.parse(to) : now) - Date.parse(from));
  if (Number.isNaN(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * A task's or attempt's error message without the worker's code in front of it when that
 * code is the error's own (`[handler_error] boom` under `handler_error` reads `boom`):
 * the server keeps a worker's code as `[code] message`, which says something only when
 * the codes differ.
 */
export function errorText(error) {
  const text = (error && error.message) || "";
  const own = `[${error && error.code}] `;
  return text.startsWith(own) ? text.slice(own.length) : text;
}

/** A short form of a task id (its random tail), for narrow screens. */
export const shortId = (id) => (id ? id.slice(-12) : "");

export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** The message of an error for people. */
export function message(error) {
  if (!error) return "";
  return error.code ? `${error.message} (${error.code})` : error.message || String(error);
}

/** Runs `work` for each item, a few at a time; resolves to [{item, ok, error}]. */
export async function forEach(items, work, parallel = 4) {
  const results = [];
  let next = 0;
  async function lane() {
    while (next < items.length) {
      const item = items[next++];
      try {
        await work(item);
        results.push({ item, ok: true });
      } catch (error) {
        results.push({ item, ok: false, error });
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
  return results;
}
