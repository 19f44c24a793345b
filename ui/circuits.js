// Circuit breakers, shown on the overview and reset from the admin page: from the
// overview's `circuits` when it carries them, else GET /v1/admin/circuits; a server
// without either says so.

import { html } from "./vendor/htm-preact-standalone.mjs";
import { get, isNoRoute, post } from "./api.js";
import { message, time } from "./format.js";

// Set once the server answered that it has no circuits route: not asked again until
// the console is loaded anew (a replica of another version answers then).
let missing = false;

/** The circuits (an array), or "unavailable" when this server has no breakers. */
export async function loadCircuits(overview) {
  if (overview && Array.isArray(overview.circuits)) return overview.circuits;
  if (missing) return "unavailable";
  try {
    return (await get("/v1/admin/circuits")).items;
  } catch (error) {
    if (!isNoRoute(error)) throw error;
    missing = true;
    return "unavailable";
  }
}

/** The circuits; with `onReset(outcome)`, a reset button for each open one. */
export function Circuits({ circuits, onReset }) {
  if (circuits === "unavailable") return html`<p class="muted">This server has no circuit breakers.</p>`;
  if (!circuits) return html`<p class="muted">Loading…</p>`;
  if (circuits.length === 0) return html`<p class="muted">No route has failed yet: every circuit is closed.</p>`;
  const reset = async (name) => {
    try {
      await post(`/v1/admin/circuits/${encodeURIComponent(name)}/reset`);
      onReset(`Circuit ${name} reset.`);
    } catch (error) {
      onReset(message(error));
    }
  };
  return html`
    <div class="scroll"><table>
      <thead><tr><th scope="col">Route</th><th scope="col">State</th><th scope="col">Failures</th>
        <th scope="col">Opened</th><th scope="col">Retry at</th>${onReset && html`<th scope="col"><span class="sr-only">Actions</span></th>`}</tr></thead>
      <tbody>${circuits.map((c) => html`
        <tr><td>${c.route_name}</td><td><span class=${`circuit circuit-${c.state}`}>${c.state.replace("_", "-")}</span></td>
          <td>${c.consecutive_failures}</td><td>${time(c.opened_at)}</td><td>${time(c.retry_at)}</td>
          ${onReset && html`<td>${c.state !== "closed" && html`<button type="button" onClick=${() => reset(c.route_name)}
            aria-label=${`Reset circuit ${c.route_name}`}>Reset</button>`}</td>`}</tr>`)}
      </tbody></table></div>`;
}
