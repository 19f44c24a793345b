// Hooks shared by the pages: polling that pauses while the tab is hidden, and the
// refusal counter the overview samples for its chart.

import { useEffect, useRef, useState } from "./vendor/htm-preact-standalone.mjs";

/**
 * Calls `load()` now and every `ms` while the page is visible (and at once when it
 * becomes visible again); answers {data, error, reload}. `deps` restart it.
 */
export function usePoll(load, ms, deps = []) {
  const [state, setState] = useState({ data: null, error: null });
  const tick = useRef(() => {});
  useEffect(() => {
    let live = true;
    let timer = null;
    let running = false;
    const run = async () => {
      if (running) return;
      running = true;
      try {
        const data = await load();
        if (live) setState({ data, error: null });
      } catch (error) {
        if (live) setState((old) => ({ data: old.data, error }));
      } finally {
        running = false;
      }
    };
    const schedule = () => {
      clearTimeout(timer);
      if (!live) return;
      timer = setTimeout(async () => {
        if (document.visibilityState === "visible") await run();
        schedule();
      }, ms);
    };
    const onVisible = () => {
      if (document.visibilityState === "visible") run();
    };
    tick.current = () => run();
    run().then(schedule);
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      live = false;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, deps);
  return { ...state, reload: () => tick.current() };
}

const REFUSALS_KEY = "tasklane.refusals";

/**
 * Refusals per minute as this tab has seen them: the API counts refusals per day
 * only, so each overview sample's growth of today's total is put in the minute it was
 * seen. Kept in sessionStorage for an hour, so moving between pages keeps the history.
 */
export function recordRefusals(refusalsToday, now = Date.now()) {
  const total = refusalsToday.reduce((sum, r) => sum + r.count, 0);
  let seen;
  try {
    seen = JSON.parse(sessionStorage.getItem(REFUSALS_KEY)) || null;
  } catch {
    seen = null;
  }
  const day = new Date(now).toISOString().slice(0, 10);
  const minute = Math.floor(now / 60000) * 60000;
  if (!seen || typeof seen.total !== "number") {
    seen = { day, total, since: now, minutes: {} };
  } else {
    const grew = seen.day === day ? total - seen.total : total;
    if (grew > 0) seen.minutes[minute] = (seen.minutes[minute] || 0) + grew;
    seen.day = day;
    seen.total = total;
  }
  for (const key of Object.keys(seen.minutes)) {
    if (Number(key) < minute - 60 * 60000) delete seen.minutes[key];
  }
  sessionStorage.setItem(REFUSALS_KEY, JSON.stringify(seen));
  return seen;
}
