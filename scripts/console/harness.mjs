// What the console's browser tests share: the server under test, its API (with the
// tokens scripts/check-console.sh made), one browser whose every request and console
// error is recorded, and screenshots.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const BASE = process.env.CONSOLE_URL;
export const ADMIN_TOKEN = process.env.ADMIN_TOKEN;
export const SCOPE_TOKEN = process.env.SCOPE_TOKEN;
const SHOTS = process.env.CONSOLE_SHOTS || "console-screenshots";
assert.ok(BASE && ADMIN_TOKEN && SCOPE_TOKEN, "run through scripts/check-console.sh");

/** The HTTP API with `token`, for arranging what the browser then shows. */
export async function call(method, path, body, token = ADMIN_TOKEN) {
  const response = await fetch(`${BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

let keys = 0;
/** Runs one SQL statement on the server's database (to arrange what no route makes). */
export function sql(statement) {
  execFileSync("psql", [process.env.CONSOLE_DATABASE_URL, "-qAtc", statement], { stdio: ["ignore", "pipe", "inherit"] });
}

/** Submits a task of `type` with `input` in `scope`; its id. */
export async function submit(type, input, scope = "console-tests", extra = {}) {
  const body = { task_type: type, scope_id: scope, effect_key: `k-${process.pid}-${Date.now()}-${keys++}`, input, ...extra };
  const answer = await call("POST", "/v1/tasks", body);
  assert.ok([200, 202].includes(answer.status), JSON.stringify(answer.body));
  return answer.body.id;
}

/** Polls `probe` until it returns a truthy value (bounded by `seconds`); that value. */
export async function eventually(what, probe, seconds = 30) {
  const until = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < until) {
    last = await probe();
    if (last) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`not within ${seconds} s: ${what} (last: ${JSON.stringify(last)})`);
}

export async function state(id) {
  return (await call("GET", `/v1/tasks/${id}`)).body.state;
}

export async function pause(type, paused) {
  const answer = await call("PUT", `/v1/admin/task-types/${type}/pause`, { paused });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
}

/** One browser for the whole run; every request and console error of every page is kept. */
export class Browser {
  requests = [];
  problems = [];
  refused = [];

  async start() {
    this.browser = await chromium.launch({
      executablePath: process.env.CHROMIUM,
      // Root in CI containers: Chromium's sandbox needs user namespaces it may not have.
      args: ["--no-sandbox", "--disable-gpu"],
    });
  }

  /** A fresh context (its own sessionStorage) at `viewport`. */
  async page(viewport = { width: 1280, height: 800 }) {
    const context = await this.browser.newContext({ viewport });
    context.on("request", (request) => this.requests.push(request.url()));
    context.on("response", (response) => {
      if (response.status() >= 400) this.refused.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    const page = await context.newPage();
    page.on("console", (message) => {
      // The browser logs every 4xx answer to fetch as an error too: those are checked
      // apart (Browser.refused), so only other errors count here.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        this.problems.push(`console: ${message.text()}`);
      }
    });
    page.on("pageerror", (error) => this.problems.push(`page: ${error.message}`));
    return page;
  }

  async stop() {
    await this.browser?.close();
  }
}

/** Signs in on the console with `token`, by keyboard. */
export async function signIn(page, token, hash = "") {
  await page.goto(`${BASE}/ui${hash}`);
  await page.getByLabel("API token").focus();
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
