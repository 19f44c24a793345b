// App weights on the admin page: each app's share of the claims' turns against the
// other apps with claimable work in the same priority level (1 when never set), listed
// from GET /v1/admin/apps and set with PUT /v1/admin/apps/{app}/weight. A new weight
// applies to the tasks that take their turn after it is set (a task takes its turn
// when it becomes claimable). A server without the routes says so, asked once.

import { html, useEffect, useState } from "./vendor/htm-preact-standalone.mjs";
import { get, isNoRoute, put } from "./api.js";
import { message, time } from "./format.js";

// Set once the server answered that it has no app routes: not asked again until the
// console is loaded anew (a replica of another version answers then).
let missing = false;

/** The apps (an array of {app, weight, updated_at}), or "unavailable". */
async function loadApps() {
  if (missing) return "unavailable";
  try {
    return (await get("/v1/admin/apps")).items;
  } catch (error) {
    if (!isNoRoute(error)) throw error;
    missing = true;
    return "unavailable";
  }
}

function AppTable({ apps }) {
  if (apps === "unavailable") return html`<p class="muted">This server has no app weights.</p>`;
  if (!apps) return html`<p class="muted">Loading…</p>`;
  if (apps.length === 0) return html`<p class="muted">No app yet: every app weighs 1.</p>`;
  return html`
    <div class="scroll"><table data-testid="weights-table">
      <thead><tr><th scope="col">App</th><th scope="col">Weight</th><th scope="col">Set</th></tr></thead>
      <tbody>${apps.map((a) => html`
        <tr><th scope="row">${a.app}</th><td>${a.weight}</td>
          <td>${a.updated_at ? time(a.updated_at) : html`<span class="muted">default</span>`}</td></tr>`)}
      </tbody></table></div>`;
}

/** The list and a form to set one app's weight; `tick` (the overview) re-reads it. */
export function AppWeights({ tick }) {
  const [apps, setApps] = useState(null);
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const [app, setApp] = useState("");
  const [weight, setWeight] = useState("");
  const reload = () => loadApps().then(setApps).catch((e) => setStatus(message(e)));
  useEffect(() => { reload(); }, [tick]);
  const submit = async (event) => {
    event.preventDefault();
    const name = app.trim();
    setBusy(true);
    try {
      const set = await put(`/v1/admin/apps/${encodeURIComponent(name)}/weight`, { weight: Number(weight) });
      setStatus(`${set.app}: weight ${set.weight}.`);
    } catch (error) {
      setStatus(message(error));
    } finally {
      setBusy(false);
      reload();
    }
  };
  return html`
    <p class="muted">An app's share of the claims' turns against other apps with claimable work at the same
      priority; applies to tasks that become claimable after it is set.</p>
    <${AppTable} apps=${apps} />
    ${apps !== "unavailable" && html`
      <form class="inline" onSubmit=${submit} aria-label="Set an app's weight">
        <label for="weight-app">App</label><input id="weight-app" required value=${app} onInput=${(e) => setApp(e.target.value)} />
        <label for="weight-weight">Weight</label><input id="weight-weight" type="number" min="1" max="100" step="1" required
          value=${weight} onInput=${(e) => setWeight(e.target.value)} />
        <button type="submit" disabled=${busy}>Set weight</button>
      </form>`}
    <p role="status" class="status">${status}</p>`;
}
