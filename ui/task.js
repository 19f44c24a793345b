// One task: its view (times in UTC, how long it queued and ran, the model that
// answered), its attempts, its live output, and its event timeline streamed live (SSE read
// through fetch, since EventSource cannot send the bearer header) until the terminal
// event, consecutive progress events folded into one row; the view and attempts are
// re-read as events arrive. Cancel and retry are
// offered when the token may and the state allows.

import { html, useEffect, useRef, useState } from "./vendor/htm-preact-standalone.mjs";
import { get, isNoRoute, post } from "./api.js";
import { duration, errorText, isTerminal, json, message, time } from "./format.js";
import { LiveOutput } from "./output.js";
import { streamEvents } from "./sse.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The task's view and attempts, re-read on demand with at most one read in flight. */
function useTask(id) {
  const [task, setTask] = useState(null);
  const [attempts, setAttempts] = useState(null);
  const [error, setError] = useState(null);
  const reading = useRef({ busy: false, again: false, noAttempts: false });
  const refresh = async () => {
    const r = reading.current;
    if (r.busy) {
      r.again = true;
      return;
    }
    r.busy = true;
    do {
      r.again = false;
      try {
        setTask(await get(`/v1/tasks/${id}`));
        setError(null);
      } catch (failure) {
        setError(failure);
      }
      if (!r.noAttempts) {
        try {
          setAttempts((await get(`/v1/tasks/${id}/attempts`)).items);
        } catch (failure) {
          // A server without the attempts route is not asked again for this task.
          r.noAttempts = isNoRoute(failure);
          setAttempts(r.noAttempts ? "unavailable" : null);
        }
      }
    } while (r.again);
    r.busy = false;
  };
  return { task, attempts, error, refresh };
}

/**
 * The timeline's rows with `event` added: a progress event right after another takes
 * that one's row (the latest progress and phase shown, `folded` counting them), so a
 * long task's hundreds of progress events are one row.
 */
function addEvent(rows, event) {
  const last = rows[rows.length - 1];
  if (event.type === "task.progress" && last && last.type === "task.progress") {
    return [...rows.slice(0, -1), { ...event, key: last.key, folded: last.folded + 1 }];
  }
  return [...rows, { ...event, key: event.seq, folded: 1 }];
}

/**
 * Streams the timeline from seq 0, reconnecting after the last seq seen until terminal;
 * a new `round` (after a retry queued the task again) streams on from there.
 */
function useTimeline(id, refresh, round) {
  const [events, setEvents] = useState([]);
  const [status, setStatus] = useState("connecting");
  const seen = useRef(0);
  useEffect(() => {
    const abort = new AbortController();
    (async () => {
      while (!abort.signal.aborted) {
        try {
          setStatus("live");
          await streamEvents(id, seen.current, (event) => {
            if (event.seq <= seen.current) return;
            seen.current = event.seq;
            setEvents((rows) => addEvent(rows, event));
            refresh();
          }, abort.signal);
          const now = await get(`/v1/tasks/${id}`);
          refresh();
          if (isTerminal(now.state)) {
            setStatus("ended");
            return;
          }
        } catch (failure) {
          if (abort.signal.aborted) return;
          if (failure.status === 404 || failure.status === 401 || failure.status === 403) {
            setStatus("ended");
            return;
          }
          setStatus("reconnecting");
        }
        await sleep(1500);
      }
    })();
    return () => abort.abort();
  }, [id, round]);
  return { events, status };
}

function Field({ name, children }) {
  return html`<div class="field"><dt>${name}</dt><dd>${children}</dd></div>`;
}

function View({ task }) {
  return html`
    <dl class="view">
      <${Field} name="State"><span class=${`state state-${task.state}`} data-testid="task-state">${task.state}</span><//>
      <${Field} name="Type">${task.task_type}<//>
      <${Field} name="Scope">${task.scope_id}<//>
      <${Field} name="Source">${task.source_id || "—"}<//>
      ${task.usage_subject !== undefined && html`<${Field} name="Usage subject">${task.usage_subject || "—"}<//>`}
      <${Field} name="Attempt">${task.attempt} of ${task.max_attempts}<//>
      <${Field} name="Progress"><span data-testid="task-progress">${progress(task)}</span><//>
      <${Field} name="Priority">${task.priority}<//>
      <${Field} name="Created">${time(task.created_at)}<//>
      <${Field} name="Started">${time(task.started_at)}<//>
      <${Field} name="Finished">${time(task.finished_at)}<//>
      <${Field} name="Queued for"><span data-testid="queued-for">${queuedFor(task)}</span><//>
      <${Field} name="Ran for"><span data-testid="ran-for">${ranFor(task)}</span><//>
      <${Field} name="Queue deadline">${time(task.deadline_at)}<//>
      <${Field} name="Released">${time(task.released_at)}<//>
      ${task.provenance && html`<${Field} name="Provenance">${[task.provenance.provider, task.provenance.model, task.provenance.route, task.provenance.route_name].filter(Boolean).join(" · ") || "—"}<//>`}
      ${task.provenance && html`<${Field} name="Answered by"><span data-testid="answered-by">${answeredBy(task.provenance)}</span><//>`}
      ${task.usage && html`<${Field} name="Usage">${usage(task.usage)}<//>`}
      ${task.error && html`<${Field} name="Error"><span data-testid="task-error"><code>${task.error.code}</code> ${errorText(task.error)}</span><//>`}
    </dl>
    ${task.result != null && html`<h2>Result</h2><pre class="json">${json(task.result)}</pre>`}`;
}

/**
 * Progress as the worker last reported it; the phase only while an attempt runs (a
 * finished task's last phase says nothing about it now).
 */
function progress(task) {
  if (task.progress == null) return "—";
  const running = ["running", "cancelling"].includes(task.state) && task.phase;
  return html`<progress max="100" value=${task.progress} aria-label="Progress">${task.progress}%</progress> ${task.progress}%${running ? ` (${task.phase})` : ""}`;
}

/** From submit to the first attempt's claim (or to the end, or now, if none started). */
function queuedFor(task) {
  const end = task.started_at || task.finished_at;
  return `${duration(task.created_at, end)}${end ? "" : " so far"}`;
}

/** From the first attempt's claim to the end (or now, while it runs): retries included. */
function ranFor(task) {
  if (!task.started_at) return "—";
  return `${duration(task.started_at, task.finished_at)}${task.finished_at ? "" : " so far"}`;
}

/** The model the provider says answered, and its system fingerprint, as the CLI shows them. */
function answeredBy(p) {
  return [p.response_model, p.system_fingerprint && `fingerprint ${p.system_fingerprint}`].filter(Boolean).join(" · ") || "—";
}

/** Token usage as the provider reported it. */
function usage(u) {
  return u ? `${u.input_tokens ?? "?"} in · ${u.output_tokens ?? "?"} out · ${u.total_tokens ?? "?"} total` : "—";
}

function Attempts({ attempts }) {
  if (attempts === "unavailable") return html`<p class="muted">This server does not report attempts.</p>`;
  if (!attempts) return html`<p class="muted">Loading…</p>`;
  if (attempts.length === 0) return html`<p class="muted">No attempt yet.</p>`;
  return html`
    <div class="scroll"><table>
      <thead><tr><th scope="col">#</th><th scope="col">Outcome</th><th scope="col">Route</th><th scope="col">Provider · model</th>
        <th scope="col">Usage</th><th scope="col">Started</th><th scope="col">Finished</th><th scope="col">Error</th></tr></thead>
      <tbody>${attempts.map((a) => html`
        <tr><td>${a.attempt}</td><td>${a.outcome}</td><td>${[a.route, a.route_name].filter(Boolean).join(" / ") || "—"}</td>
          <td>${[a.provider, a.model].filter(Boolean).join(" · ") || "—"}${a.response_model && html`<br /><span class="muted">answered by ${answeredBy(a)}</span>`}</td><td>${usage(a.usage)}</td>
          <td>${time(a.started_at)}</td><td>${time(a.finished_at)}</td>
          <td class="wrap">${a.error ? html`<code>${a.error.code}</code> ${errorText(a.error)}` : "—"}</td></tr>`)}
      </tbody></table></div>`;
}

function Timeline({ events, status }) {
  const label = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…", ended: "ended" }[status];
  return html`
    <p class="stream" data-testid="stream-status" role="status">Stream: ${label}</p>
    <ol class="timeline" aria-label="Events" data-testid="timeline">
      ${events.map((e) => html`
        <li key=${e.key}><span class="seq">${e.seq}</span> <strong>${e.type}</strong>
          <time datetime=${e.at}>${time(e.at)}</time>
          ${Object.keys(e.data || {}).length > 0 && html`<code class="data">${JSON.stringify(e.data)}</code>`}
          ${e.folded > 1 && html`<span class="folded">${e.folded} progress events (seq ${e.key}–${e.seq})</span>`}</li>`)}
    </ol>`;
}

export function Task({ me, id }) {
  const { task, attempts, error, refresh } = useTask(id);
  const [round, setRound] = useState(0);
  const { events, status } = useTimeline(id, refresh, round);
  const [outcome, setOutcome] = useState("");
  useEffect(() => { refresh(); }, [id]);
  const act = async (action) => {
    try {
      await post(`/v1/tasks/${id}/${action}`);
      setOutcome(action === "cancel" ? "Cancel requested." : "Queued again.");
      if (action === "retry") setRound((n) => n + 1);
    } catch (failure) {
      setOutcome(message(failure));
    }
    refresh();
  };
  const canCancel = me.permissions.includes("cancel") && task && !isTerminal(task.state);
  const canRetry = me.permissions.includes("submit") && task && ["failed", "cancelled"].includes(task.state);
  return html`
    <main>
      <p><a href="#/tasks">← Tasks</a></p>
      <h1>Task <code class="id">${id}</code></h1>
      ${error && html`<p class="error" role="alert">${error.status === 404 ? "No such task (or not this token's)." : message(error)}</p>`}
      ${task && html`
        <div class="actions">
          ${canCancel && html`<button type="button" class="danger" onClick=${() => act("cancel")}>Cancel task</button>`}
          ${canRetry && html`<button type="button" onClick=${() => act("retry")}>Retry task</button>`}
          <span role="status">${outcome}</span>
        </div>
        <section aria-labelledby="h-view"><h2 id="h-view" class="sr-only">Task</h2><${View} task=${task} /></section>
        <section aria-labelledby="h-attempts"><h2 id="h-attempts">Attempts</h2><${Attempts} attempts=${attempts} /></section>`}
      <${LiveOutput} id=${id} round=${round} />
      <section aria-labelledby="h-events"><h2 id="h-events">Events</h2><${Timeline} events=${events} status=${status} /></section>
    </main>`;
}
