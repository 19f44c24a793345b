// The overview's chart: per minute over the last hour, tasks submitted and finished
// (stacked by outcome) from GET /v1/admin/activity, and refusals as this tab saw them.
// Plain SVG built by Preact; its figure caption states the totals for screen readers.

import { html } from "./vendor/htm-preact-standalone.mjs";
import { time } from "./format.js";

const W = 600;
const H = 140;
const PAD = 6;

export function ActivityChart({ minutes, refusals }) {
  if (!minutes || minutes.length === 0) return html`<p class="muted">No activity data.</p>`;
  const refused = minutes.map((m) => (refusals && refusals.minutes[new Date(m.minute).getTime()]) || 0);
  const finished = (m) => m.succeeded + m.failed + m.cancelled;
  const top = Math.max(1, ...minutes.map((m) => Math.max(m.submitted, finished(m))), ...refused);
  const slot = W / minutes.length;
  const bar = Math.max(1, slot / 2 - 1);
  const y = (n) => H - PAD - (n / top) * (H - 2 * PAD);
  const h = (n) => (n / top) * (H - 2 * PAD);
  const sum = (f) => minutes.reduce((total, m) => total + f(m), 0);
  const totals = {
    submitted: sum((m) => m.submitted),
    succeeded: sum((m) => m.succeeded),
    failed: sum((m) => m.failed),
    cancelled: sum((m) => m.cancelled),
    refused: refused.reduce((a, b) => a + b, 0),
  };
  const since = refusals ? time(refusals.since) : "";
  const caption = `Last hour: ${totals.submitted} submitted, ${totals.succeeded} succeeded, `
    + `${totals.failed} failed, ${totals.cancelled} cancelled; ${totals.refused} refused since ${since || "this page opened"}.`;
  const points = refused.map((n, i) => `${i * slot + slot / 2},${y(n)}`).join(" ");
  return html`
    <figure class="chart">
      <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${caption} preserveAspectRatio="none">
        <line class="axis" x1="0" y1=${H - PAD} x2=${W} y2=${H - PAD} />
        ${minutes.map((m, i) => {
          const x = i * slot;
          let stack = H - PAD;
          const part = (n, cls) => {
            stack -= h(n);
            return n > 0 ? html`<rect class=${cls} x=${x + bar + 1} y=${stack} width=${bar} height=${h(n)} />` : null;
          };
          return html`<g>
            <title>${time(m.minute)}: ${m.submitted} submitted, ${m.succeeded} succeeded, ${m.failed} failed, ${m.cancelled} cancelled, ${refused[i]} refused</title>
            ${m.submitted > 0 && html`<rect class="submitted" x=${x} y=${y(m.submitted)} width=${bar} height=${h(m.submitted)} />`}
            ${part(m.succeeded, "succeeded")}${part(m.failed, "failed")}${part(m.cancelled, "cancelled")}
          </g>`;
        })}
        <polyline class="refused" points=${points} />
      </svg>
      <div class="ticks" aria-hidden="true"><span>−60 min</span><span>peak ${top}/min</span><span>now</span></div>
      <figcaption>
        <span class="key submitted">submitted</span> <span class="key succeeded">succeeded</span>
        <span class="key failed">failed</span> <span class="key cancelled">cancelled</span>
        <span class="key refused">refused (seen by this tab)</span>
        <span class="totals" data-testid="chart-totals">${caption}</span>
      </figcaption>
    </figure>`;
}
