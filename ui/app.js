// The console's shell: sign-in, the identity of the token, navigation (hash routes, so
// the server serves one page) and the page of the current route.

import { html, render, useEffect, useState } from "./vendor/htm-preact-standalone.mjs";
import { get, token, whenUnauthorized } from "./api.js";
import { message } from "./format.js";
import { Overview } from "./overview.js";
import { Tasks } from "./tasks.js";
import { Task } from "./task.js";
import { Admin } from "./admin.js";

/** The route of the location's hash: {page, id?, params}. */
function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, search = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  const params = Object.fromEntries(new URLSearchParams(search));
  if (parts[0] === "tasks" && parts[1]) return { page: "task", id: decodeURIComponent(parts[1]), params };
  return { page: parts[0] || "", params };
}

function useRoute() {
  const [current, setCurrent] = useState(route());
  useEffect(() => {
    const onHash = () => setCurrent(route());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  return current;
}

function SignIn({ onSignedIn, notice }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState(notice || "");
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError("");
    token.set(value.trim());
    try {
      onSignedIn(await get("/v1/whoami"));
    } catch (failure) {
      token.clear();
      setError(failure.status === 401 ? "This token is not valid (or was revoked)." : message(failure));
    } finally {
      setBusy(false);
    }
  };
  return html`
    <main class="signin">
      <h1>tasklane console</h1>
      <form onSubmit=${submit} aria-describedby="signin-help">
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck="false"
          required value=${value} onInput=${(e) => setValue(e.target.value)} />
        <p id="signin-help" class="help">
          A token from <code>tasklane token create</code>. It stays in this tab only
          (sessionStorage) and is sent as a bearer header to this server alone.
        </p>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <button type="submit" disabled=${busy}>Sign in</button>
      </form>
    </main>`;
}

function Nav({ me, page, onSignOut }) {
  const admin = me.permissions.includes("admin");
  const links = [
    admin && ["overview", "Overview"],
    me.permissions.includes("read") && ["tasks", "Tasks"],
    admin && ["admin", "Admin"],
  ].filter(Boolean);
  const here = page === "task" ? "tasks" : page;
  return html`
    <header class="top">
      <a class="brand" href="#/">tasklane</a>
      <nav aria-label="Main">
        <ul>
          ${links.map(([name, label]) => html`
            <li><a href=${`#/${name}`} aria-current=${here === name ? "page" : undefined}>${label}</a></li>`)}
        </ul>
      </nav>
      <div class="who" data-testid="identity">
        <span>app <strong>${me.app}</strong></span>
        ${me.scope_id && html`<span>scope <strong>${me.scope_id}</strong></span>`}
        <span class="perms">${me.permissions.join(", ")}</span>
        <button type="button" class="link" onClick=${onSignOut}>Sign out</button>
      </div>
    </header>`;
}

function Page({ me, current }) {
  const can = (permission) => me.permissions.includes(permission);
  const admin = can("admin");
  let page = current.page;
  if (!page) page = admin ? "overview" : "tasks";
  if (page === "overview" && admin) return html`<${Overview} me=${me} />`;
  if (page === "admin" && admin) return html`<${Admin} me=${me} />`;
  if (page === "tasks" && can("read")) return html`<${Tasks} key=${JSON.stringify(current.params)} me=${me} params=${current.params} />`;
  if (page === "task" && can("read")) return html`<${Task} key=${current.id} me=${me} id=${current.id} />`;
  if (!can("read") && !admin) {
    return html`<main><p>This token may neither read tasks nor administer: the console has nothing to show.</p></main>`;
  }
  return html`<main><h1>Not here</h1><p>This page does not exist or this token may not see it.</p></main>`;
}

function App() {
  const [me, setMe] = useState(null);
  const [checking, setChecking] = useState(Boolean(token.get()));
  const [notice, setNotice] = useState("");
  const current = useRoute();
  useEffect(() => {
    whenUnauthorized(() => {
      token.clear();
      setMe(null);
      setNotice("The token is no longer valid: sign in again.");
    });
    if (!token.get()) return;
    get("/v1/whoami")
      .then(setMe)
      .catch(() => token.clear())
      .finally(() => setChecking(false));
  }, []);
  const signOut = () => {
    token.clear();
    sessionStorage.clear();
    setMe(null);
    setNotice("");
  };
  if (checking) return html`<main><p aria-busy="true">Loading…</p></main>`;
  if (!me) return html`<${SignIn} notice=${notice} onSignedIn=${(who) => { setNotice(""); setMe(who); }} />`;
  return html`
    <${Nav} me=${me} page=${current.page} onSignOut=${signOut} />
    <${Page} me=${me} current=${current} />`;
}

render(html`<${App} />`, document.getElementById("app"));
