// Small formatting helpers shared by the pages.

export const TERMINAL = ["succeeded", "failed", "cancelled"];
export const STATES = [
  "queued", "running", "cancelling", "waiting_for_retry", "waiting_for_external_fallback",
  "succeeded", "failed", "cancelled",
];

export const isTerminal = (state) => TERMINAL.includes(state);

/** A timestamp in the viewer's locale, or an em dash. */
export function time(value) {
  if (!value) return "—";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
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
