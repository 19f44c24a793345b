// The task list: filters (state, type, scope, source) kept in the URL's hash, keyset
// paging (older/newer by cursor), live refresh of the page shown, and bulk cancel and
// retry of the selected tasks for tokens that may.

import { html, useState } from "./vendor/htm-preact-standalone.mjs";
import { get, post, query } from "./api.js";
import { forEach, message, shortId, STATES, time } from "./format.js";
import { usePoll } from "./hooks.js";

const PAGE = 25;

function Filters({ me, params }) {
  const [form, setForm] = useState({
    state: params.state || "",
    task_type: params.task_type || "",
    scope_id: params.scope_id || "",
    source_id: params.source_id || "",
  });
  const field = (name) => ({
    id: `filter-${name}`,
    name,
    value: form[name],
    onInput: (e) => setForm({ ...form, [name]: e.target.value }),
  });
  const apply = (event) => {
    event.preventDefault();
    location.hash = `#/tasks${query(form)}`;
  };
  return html`
    <form class="filters" onSubmit=${apply} aria-label="Filter tasks">
      <div><label for="filter-state">State</label>
        <select ...${field("state")} onChange=${(e) => setForm({ ...form, state: e.target.value })}>
          <option value="">any</option>
          ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></div>
      <div><label for="filter-task_type">Type</label>
        <select ...${field("task_type")} onChange=${(e) => setForm({ ...form, task_type: e.target.value })}>
          <option value="">any</option>
          ${me.task_types.map((t) => html`<option value=${t}>${t}</option>`)}
        </select></div>
      ${!me.scope_id && html`<div><label for="filter-scope_id">Scope</label><input ...${field("scope_id")} /></div>`}
      <div><label for="filter-source_id">Source</label><input ...${field("source_id")} /></div>
      <div class="actions"><button type="submit">Apply</button>
        <a class="button secondary" href="#/tasks">Clear</a></div>
    </form>`;
}

function BulkBar({ me, selected, onDone }) {
  const [asking, setAsking] = useState(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState("");
  const ids = [...selected];
  const canCancel = me.permissions.includes("cancel");
  const canRetry = me.permissions.includes("submit");
  if (!canCancel && !canRetry) return null;
  const run = async (action) => {
    setBusy(true);
    const results = await forEach(ids, (id) => post(`/v1/tasks/${id}/${action}`));
    const failed = results.filter((r) => !r.ok);
    const verb = action === "cancel" ? "Cancel" : "Retry";
    setOutcome(failed.length === 0
      ? `${verb}: ${results.length} done.`
      : `${verb}: ${results.length - failed.length} done, ${failed.length} refused (${message(failed[0].error)}).`);
    setBusy(false);
    setAsking(null);
    onDone();
  };
  return html`
    <div class="bulk" role="group" aria-label="Selected tasks">
      <span>${ids.length} selected</span>
      ${canCancel && html`<button type="button" disabled=${!ids.length || busy} onClick=${() => setAsking("cancel")}>Cancel selected</button>`}
      ${canRetry && html`<button type="button" disabled=${!ids.length || busy} onClick=${() => setAsking("retry")}>Retry selected</button>`}
      ${asking && html`
        <span class="confirm" role="alert">
          ${asking === "cancel" ? "Cancel" : "Retry"} ${ids.length} task${ids.length === 1 ? "" : "s"}?
          <button type="button" class="danger" disabled=${busy} onClick=${() => run(asking)}>Yes, ${asking}</button>
          <button type="button" class="secondary" onClick=${() => setAsking(null)}>No</button>
        </span>`}
      <span class="outcome" role="status">${outcome}</span>
    </div>`;
}

function Row({ task, checked, onToggle, selectable }) {
  return html`
    <tr>
      ${selectable && html`<td><input type="checkbox" checked=${checked} onChange=${onToggle}
        aria-label=${`Select task ${task.id}`} /></td>`}
      <td class="squeeze"><a href=${`#/tasks/${task.id}`} title=${task.id}><code>${shortId(task.id)}</code></a></td>
      <td>${task.task_type}</td>
      <td class="squeeze">${task.scope_id}</td>
      <td class="wide">${task.source_id || ""}</td>
      <td><span class=${`state state-${task.state}`} data-testid="row-state">${task.state}</span>
        ${task.progress != null && !["succeeded", "failed", "cancelled"].includes(task.state) ? html` <small>${task.progress}%</small>` : ""}</td>
      <td class="wide">${task.attempt}/${task.max_attempts}</td>
      <td class="wide">${time(task.created_at)}</td>
    </tr>`;
}

export function Tasks({ me, params }) {
  const [cursors, setCursors] = useState([null]);
  const [selected, setSelected] = useState(new Set());
  const filters = { state: params.state, task_type: params.task_type, scope_id: params.scope_id, source_id: params.source_id };
  const key = JSON.stringify(filters);
  const cursor = cursors[cursors.length - 1];
  const page = usePoll(() => get(`/v1/tasks${query({ ...filters, limit: PAGE, cursor })}`), 4000, [key, cursor]);
  const selectable = me.permissions.includes("cancel") || me.permissions.includes("submit");
  const items = page.data ? page.data.items : [];
  const toggle = (id) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const allOnPage = items.length > 0 && items.every((t) => selected.has(t.id));
  const toggleAll = () => {
    const next = new Set(selected);
    for (const t of items) allOnPage ? next.delete(t.id) : next.add(t.id);
    setSelected(next);
  };
  return html`
    <main>
      <h1>Tasks</h1>
      <${Filters} key=${key} me=${me} params=${params} />
      ${selectable && html`<${BulkBar} me=${me} selected=${selected} onDone=${() => { setSelected(new Set()); page.reload(); }} />`}
      ${page.error && html`<p class="error" role="alert">${message(page.error)}</p>`}
      <div class="scroll">
        <table class="tasks">
          <caption class="sr-only">Tasks, newest first</caption>
          <thead><tr>
            ${selectable && html`<th scope="col"><input type="checkbox" checked=${allOnPage} onChange=${toggleAll} aria-label="Select every task on this page" /></th>`}
            <th scope="col">Id</th><th scope="col">Type</th><th scope="col">Scope</th><th scope="col" class="wide">Source</th>
            <th scope="col">State</th><th scope="col" class="wide">Attempt</th><th scope="col" class="wide">Created</th>
          </tr></thead>
          <tbody>
            ${items.map((task) => html`<${Row} key=${task.id} task=${task} selectable=${selectable}
              checked=${selected.has(task.id)} onToggle=${() => toggle(task.id)} />`)}
          </tbody>
        </table>
      </div>
      ${page.data && items.length === 0 && html`<p>No tasks match.</p>`}
      <nav class="pager" aria-label="Pages">
        <button type="button" class="secondary" disabled=${cursors.length === 1} onClick=${() => setCursors([null])}>Newest</button>
        <button type="button" class="secondary" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" class="secondary" disabled=${!page.data || !page.data.next_cursor}
          onClick=${() => setCursors([...cursors, page.data.next_cursor])}>Older</button>
      </nav>
    </main>`;
}
