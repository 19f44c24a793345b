// Operator settings (admin tokens): pause and resume task types, the emergency stop,
// admission limits, resource slots, app weights and circuit resets. Each form says what
// happened in a status line; the current settings come from the overview (app weights
// and circuits from their own routes), re-read after each change and every few seconds.

import { html, useEffect, useState } from "./vendor/htm-preact-standalone.mjs";
import { get, put } from "./api.js";
import { message, time } from "./format.js";
import { usePoll } from "./hooks.js";
import { limitRows } from "./overview.js";
import { Circuits, loadCircuits } from "./circuits.js";
import { AppWeights } from "./weights.js";

/** Runs `change` and reports through `say`; re-reads the overview after. */
function useChange(reload) {
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const run = async (change, done) => {
    setBusy(true);
    try {
      await change();
      setStatus(done);
    } catch (error) {
      setStatus(message(error));
    } finally {
      setBusy(false);
      reload();
    }
  };
  return { status, busy, run, say: setStatus };
}

function Pause({ me, overview, reload }) {
  const change = useChange(reload);
  const paused = new Map(overview.paused_task_types.map((p) => [p.task_type, p.paused_at]));
  const names = [...new Set([...me.task_types, ...paused.keys()])].sort();
  const set = (name, on) => change.run(
    () => put(`/v1/admin/task-types/${encodeURIComponent(name)}/pause`, { paused: on }),
    `${name} ${on ? "paused" : "resumed"}.`);
  return html`
    <div class="scroll"><table data-testid="pause-table">
      <thead><tr><th scope="col">Type</th><th scope="col">State</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
      <tbody>${names.map((name) => html`
        <tr><th scope="row">${name}</th>
          <td>${paused.has(name) ? html`<span class="tag">paused</span> since ${time(paused.get(name))}` : "running"}</td>
          <td>${paused.has(name)
            ? html`<button type="button" disabled=${change.busy} onClick=${() => set(name, false)} aria-label=${`Resume ${name}`}>Resume</button>`
            : html`<button type="button" class="danger" disabled=${change.busy} onClick=${() => set(name, true)} aria-label=${`Pause ${name}`}>Pause</button>`}</td></tr>`)}
      </tbody></table></div>
    <p role="status" class="status">${change.status}</p>`;
}

function Stop({ overview, reload }) {
  const change = useChange(reload);
  const [app, setApp] = useState("");
  const stops = overview.emergency_stops;
  const globalOn = stops.some((s) => !s.app);
  const set = (enabled, forApp) => change.run(
    () => put("/v1/admin/emergency-stop", forApp ? { enabled, app: forApp } : { enabled }),
    `Emergency stop ${enabled ? "on" : "off"} for ${forApp || "everyone"}.`);
  return html`
    <p data-testid="global-stop" class="row">Global stop: <strong>${globalOn ? "on" : "off"}</strong>
      <button type="button" class=${globalOn ? "" : "danger"} disabled=${change.busy}
        onClick=${() => set(!globalOn)}>${globalOn ? "Turn global stop off" : "Turn global stop on"}</button></p>
    ${stops.filter((s) => s.app).map((s) => html`
      <p>Stopped: app <strong>${s.app}</strong> since ${time(s.enabled_at)}
        <button type="button" disabled=${change.busy} onClick=${() => set(false, s.app)}>Turn off for ${s.app}</button></p>`)}
    <form class="inline" onSubmit=${(e) => { e.preventDefault(); set(true, app.trim()); }}>
      <label for="stop-app">App</label>
      <input id="stop-app" required value=${app} onInput=${(e) => setApp(e.target.value)} />
      <button type="submit" class="danger" disabled=${change.busy}>Stop this app</button>
    </form>
    <p role="status" class="status">${change.status}</p>`;
}

function Limits({ overview, reload }) {
  const change = useChange(reload);
  const [form, setForm] = useState({ kind: "capacity", app: "", usage_subject: "", limit: "", window_seconds: "" });
  const bind = (name) => ({ id: `limit-${name}`, value: form[name], onInput: (e) => setForm({ ...form, [name]: e.target.value }) });
  const submit = (event) => {
    event.preventDefault();
    const body = { kind: form.kind, limit: Number(form.limit) };
    if (form.app.trim()) body.app = form.app.trim();
    if (form.usage_subject.trim()) body.usage_subject = form.usage_subject.trim();
    if (form.kind === "rate" && form.window_seconds) body.window_seconds = Number(form.window_seconds);
    change.run(() => put("/v1/admin/limits", body), `Limit set: ${body.kind} ${body.limit} for ${body.app || "everyone"}.`);
  };
  const rows = limitRows(overview.limits);
  return html`
    ${rows.length === 0 ? html`<p class="muted">No limit: admission is open.</p>` : html`
      <div class="scroll"><table><thead><tr>${["Kind", "App", "Usage subject", "Window", "Used / limit"].map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
        <tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody></table></div>`}
    <form class="stack" onSubmit=${submit} aria-label="Set a limit">
      <div><label for="limit-kind">Kind</label>
        <select ...${bind("kind")} onChange=${(e) => setForm({ ...form, kind: e.target.value })}>
          <option value="capacity">capacity (tasks in flight)</option>
          <option value="rate">rate (admissions per window)</option>
          <option value="budget">budget (usage units per day)</option>
        </select></div>
      <div><label for="limit-app">App (empty: global)</label><input ...${bind("app")} /></div>
      <div><label for="limit-usage_subject">Usage subject (optional)</label><input ...${bind("usage_subject")} /></div>
      <div><label for="limit-limit">Limit</label><input ...${bind("limit")} type="number" min="0" required /></div>
      ${form.kind === "rate" && html`<div><label for="limit-window_seconds">Window (seconds)</label>
        <input ...${bind("window_seconds")} type="number" min="1" required /></div>`}
      <div><button type="submit" disabled=${change.busy}>Set limit</button></div>
    </form>
    <p role="status" class="status">${change.status}</p>`;
}

function Resources({ overview, reload }) {
  const change = useChange(reload);
  const [name, setName] = useState("");
  const [slots, setSlots] = useState("");
  const submit = (event) => {
    event.preventDefault();
    change.run(() => put(`/v1/admin/resources/${encodeURIComponent(name.trim())}`, { slots: Number(slots) }),
      `${name.trim()}: ${slots} slots.`);
  };
  return html`
    ${overview.resources.length === 0 ? html`<p class="muted">No resource.</p>` : html`
      <ul>${overview.resources.map((r) => html`<li><strong>${r.name}</strong>: ${r.in_use} of ${r.slots} in use</li>`)}</ul>`}
    <form class="inline" onSubmit=${submit} aria-label="Set resource slots">
      <label for="resource-name">Resource</label><input id="resource-name" required value=${name} onInput=${(e) => setName(e.target.value)} />
      <label for="resource-slots">Slots</label><input id="resource-slots" type="number" min="0" max="10000" required value=${slots} onInput=${(e) => setSlots(e.target.value)} />
      <button type="submit" disabled=${change.busy}>Set slots</button>
    </form>
    <p role="status" class="status">${change.status}</p>`;
}

function CircuitsPanel({ overview, reload }) {
  const [circuits, setCircuits] = useState(null);
  const [status, setStatus] = useState("");
  useEffect(() => {
    loadCircuits(overview).then(setCircuits).catch((e) => setStatus(message(e)));
  }, [overview]);
  return html`<${Circuits} circuits=${circuits} onReset=${(outcome) => { setStatus(outcome); reload(); }} />
    <p role="status" class="status">${status}</p>`;
}

export function Admin({ me }) {
  const overview = usePoll(() => get("/v1/admin/overview"), 5000);
  const data = overview.data;
  const section = (title, id, body) => html`<section class="card" aria-labelledby=${id}><h2 id=${id}>${title}</h2>${body}</section>`;
  return html`
    <main>
      <h1>Admin</h1>
      ${overview.error && html`<p class="error" role="alert">${message(overview.error)}</p>`}
      ${!data ? html`<p aria-busy="true">Loading…</p>` : html`
        <div class="grid">
          ${section("Pause task types", "h-pause", html`<${Pause} me=${me} overview=${data} reload=${overview.reload} />`)}
          ${section("Emergency stop", "h-estop", html`<${Stop} overview=${data} reload=${overview.reload} />`)}
          ${section("Limits", "h-limits", html`<${Limits} overview=${data} reload=${overview.reload} />`)}
          ${section("Resource slots", "h-resources", html`<${Resources} overview=${data} reload=${overview.reload} />`)}
          ${section("App weights", "h-weights", html`<${AppWeights} tick=${data} />`)}
          ${section("Circuits", "h-circuits", html`<${CircuitsPanel} overview=${data} reload=${overview.reload} />`)}
        </div>`}
    </main>`;
}
