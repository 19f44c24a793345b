// The deployment at a glance (admin tokens): queue depth by type and state, the last
// hour's activity, replicas, resource slots, limits, emergency stops, circuits, paused
// types, today's refusals and the webhook outbox, refreshed every few seconds (the chart
// every 30 s). Times are in UTC.

import { html, useEffect, useState } from "./vendor/htm-preact-standalone.mjs";
import { get } from "./api.js";
import { message, time } from "./format.js";
import { recordRefusals, usePoll } from "./hooks.js";
import { ActivityChart } from "./chart.js";
import { Circuits, loadCircuits } from "./circuits.js";

const LIVE = ["queued", "running", "cancelling", "waiting_for_retry", "waiting_for_external_fallback"];

function Queue({ queue, paused }) {
  const types = [...new Set(queue.map((q) => q.task_type))].sort();
  if (types.length === 0) return html`<p class="muted">Nothing queued or running.</p>`;
  const count = (type, state) => queue.find((q) => q.task_type === type && q.state === state)?.count || 0;
  const pausedTypes = new Set(paused.map((p) => p.task_type));
  return html`
    <div class="scroll"><table data-testid="queue">
      <thead><tr><th scope="col">Type</th>${LIVE.map((s) => html`<th scope="col" class="num">${s.replaceAll("_", " ")}</th>`)}</tr></thead>
      <tbody>${types.map((t) => html`
        <tr><th scope="row">${t}${pausedTypes.has(t) && html` <span class="tag">paused</span>`}</th>
          ${LIVE.map((s) => html`<td class="num">${count(t, s) || ""}</td>`)}</tr>`)}
      </tbody></table></div>`;
}

function Table({ head, rows, empty }) {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`
    <div class="scroll"><table>
      <thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
      <tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
    </table></div>`;
}

export function limitRows(limits) {
  return limits.map((l) => [l.kind, l.app || "(global)", l.usage_subject || "—",
    l.window_seconds ? `${l.window_seconds} s` : "—", `${l.used} / ${l.limit}`]);
}

/** The outbox at a glance: endpoints, notifications waiting and how long, failures. */
function Webhooks({ webhooks }) {
  if (!webhooks) return html`<p class="muted">This server does not report webhooks.</p>`;
  const w = webhooks;
  const oldest = w.pending === 0 ? "—" : `${w.oldest_pending_seconds} s`;
  return html`
    <dl class="view" data-testid="webhooks">
      <div class="field"><dt>Endpoints</dt><dd>${w.endpoints} (${w.disabled_endpoints} disabled)</dd></div>
      <div class="field"><dt>Pending notifications</dt><dd>${w.pending}</dd></div>
      <div class="field"><dt>Oldest pending</dt><dd>${oldest}</dd></div>
      <div class="field"><dt>Failed</dt><dd>${w.failed}</dd></div>
    </dl>`;
}

function Card({ title, id, children, wide }) {
  return html`<section class=${wide ? "card wide" : "card"} aria-labelledby=${id}><h2 id=${id}>${title}</h2>${children}</section>`;
}

export function Overview() {
  const overview = usePoll(() => get("/v1/admin/overview"), 5000);
  const activity = usePoll(() => get("/v1/admin/activity"), 30000);
  const [circuits, setCircuits] = useState(null);
  const [refusals, setRefusals] = useState(null);
  const data = overview.data;
  useEffect(() => {
    if (!data) return;
    setRefusals(recordRefusals(data.refusals_today));
    loadCircuits(data).then(setCircuits).catch(() => setCircuits(null));
  }, [data]);
  return html`
    <main>
      <h1>Overview</h1>
      ${overview.error && html`<p class="error" role="alert">${message(overview.error)}</p>`}
      ${!data ? html`<p aria-busy="true">Loading…</p>` : html`
      <div class="grid">
        <${Card} title="Emergency stop" id="h-stop">
          ${data.emergency_stops.length === 0
            ? html`<p data-testid="stop-status">Off: submits are admitted.</p>`
            : html`<p class="error" data-testid="stop-status">On for ${data.emergency_stops.map((s) => s.app || "everyone").join(", ")}.</p>`}
        <//>
        <${Card} title="Paused task types" id="h-paused">
          <${Table} head=${["Type", "Since"]} rows=${data.paused_task_types.map((p) => [p.task_type, time(p.paused_at)])} empty="None." />
        <//>
        <${Card} title="Queue depth" id="h-queue" wide=${true}><${Queue} queue=${data.queue} paused=${data.paused_task_types} /><//>
        <${Card} title="Last hour" id="h-activity" wide=${true}>
          ${activity.error && html`<p class="error">${message(activity.error)}</p>`}
          <${ActivityChart} minutes=${activity.data && activity.data.minutes} refusals=${refusals} />
        <//>
        <${Card} title="Replicas" id="h-replicas">
          <${Table} head=${["Name", "Started", "Heartbeat"]} empty="No live replica."
            rows=${data.replicas.map((r) => [r.name, time(r.started_at), time(r.heartbeat_at)])} />
        <//>
        <${Card} title="Resource slots" id="h-resources">
          <${Table} head=${["Resource", "In use / slots"]} empty="No resource."
            rows=${data.resources.map((r) => [r.name, `${r.in_use} / ${r.slots}`])} />
        <//>
        <${Card} title="Limits" id="h-limits">
          <${Table} head=${["Kind", "App", "Usage subject", "Window", "Used / limit"]} rows=${limitRows(data.limits)} empty="No limit: admission is open." />
        <//>
        <${Card} title="Refusals today" id="h-refusals">
          <${Table} head=${["Code", "App", "Count"]} empty="None today."
            rows=${data.refusals_today.map((r) => [r.code, r.app, r.count])} />
        <//>
        <${Card} title="Circuits" id="h-circuits"><${Circuits} circuits=${circuits} /><//>
        <${Card} title="Webhooks" id="h-webhooks"><${Webhooks} webhooks=${data.webhooks} /><//>
      </div>`}
    </main>`;
}
