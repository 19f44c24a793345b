// The web console in a real browser against a real `tasklane serve` (run through
// scripts/check-console.sh). The tests run in order and share one browser, whose
// request log the last test checks: the console asks nothing of any other origin.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  ADMIN_TOKEN, BASE, Browser, SCOPE_TOKEN, call, eventually, pause, screenshot, signIn, sql, state, submit,
} from "./harness.mjs";

const browser = new Browser();
const TIMEOUT = 30_000;

describe("web console", () => {
  before(async () => browser.start());
  after(async () => browser.stop());

  it("serves the page without a token, under a strict CSP", async () => {
    const answer = await fetch(`${BASE}/ui`);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-security-policy"), /default-src 'self'/);
    assert.match(await answer.text(), /<div id="app">/);
  });

  it("signs in and shows the overview with the last hour", async () => {
    await submit("noop", { hello: 1 });
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN);
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByRole("heading", { name: "Replicas" }).waitFor();
    // The noop just submitted is in the chart's totals.
    await page.getByTestId("chart-totals").filter({ hasText: /[1-9]\d* submitted/ }).waitFor({ timeout: TIMEOUT });
    // The token is kept in sessionStorage, never in a cookie or the URL.
    assert.equal(await page.evaluate(() => sessionStorage.getItem("tasklane.token")), ADMIN_TOKEN);
    assert.equal((await page.context().cookies()).length, 0);
    assert.ok(!page.url().includes(ADMIN_TOKEN));
    await screenshot(page, "overview-1280x800");
    await page.context().close();
  });

  it("shows a task go queued -> running -> succeeded live on its page", async () => {
    await pause("sleep", true);
    const id = await submit("sleep", { ms: 3000, steps: 6 });
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    const badge = page.getByTestId("task-state");
    await badge.filter({ hasText: "queued" }).waitFor({ timeout: TIMEOUT });
    // Resume and watch, without any reload, the page follow the stream.
    await page.evaluate(() => { window.stillTheSamePage = true; });
    await pause("sleep", false);
    await badge.filter({ hasText: /^running$/ }).waitFor({ timeout: TIMEOUT });
    await screenshot(page, "task-running");
    await badge.filter({ hasText: "succeeded" }).waitFor({ timeout: TIMEOUT });
    await page.getByTestId("stream-status").filter({ hasText: "ended" }).waitFor({ timeout: TIMEOUT });
    const timeline = await page.getByTestId("timeline").innerText();
    for (const type of ["task.queued", "task.running", "task.progress", "task.succeeded"]) {
      assert.ok(timeline.includes(type), `${type} in ${timeline}`);
    }
    assert.equal(await page.evaluate(() => window.stillTheSamePage), true);
    await page.getByRole("heading", { name: "Result" }).waitFor();
    await screenshot(page, "task-succeeded");
    await page.context().close();
  });

  it("folds a task's consecutive progress events into one timeline row that follows the latest", async () => {
    // Held queued until the page streams, so the events arrive one by one, live.
    await pause("sleep", true);
    const id = await submit("sleep", { ms: 2000, steps: 40 });
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    await page.getByTestId("task-state").filter({ hasText: "queued" }).waitFor({ timeout: TIMEOUT });
    await page.getByTestId("stream-status").filter({ hasText: "live" }).waitFor({ timeout: TIMEOUT });
    await pause("sleep", false);
    const progress = page.getByTestId("timeline").getByRole("listitem").filter({ hasText: "task.progress" });
    await page.getByTestId("stream-status").filter({ hasText: "ended" }).waitFor({ timeout: TIMEOUT });
    await page.getByTestId("task-state").filter({ hasText: "succeeded" }).waitFor({ timeout: TIMEOUT });
    assert.equal(await progress.count(), 1, await page.getByTestId("timeline").innerText());
    const row = await progress.innerText();
    assert.match(row, /40 progress events/, row);
    assert.match(row, /"progress":100/, row);
    assert.equal(await page.getByTestId("timeline").getByText("task.succeeded", { exact: true }).count(), 1);
    await screenshot(page, "task-progress-folded");
    await page.context().close();
  });

  it("wraps a long attempt error inside a 1280 px wide page", async () => {
    const id = await submit("sleep", { ms: 1, fail: "permanent" });
    await eventually("the task failed", async () => (await state(id)) === "failed");
    const long = "the upstream answered 502 Bad Gateway after 30 s, retrying would not help".repeat(4);
    sql(`UPDATE tasklane.task_attempts SET error_message = '${long}' WHERE task_id = '${id}'`);
    const page = await browser.page({ width: 1280, height: 800 });
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    const cell = page.getByRole("region", { name: "Attempts" }).getByRole("cell").filter({ hasText: "502 Bad Gateway" });
    await cell.waitFor({ timeout: TIMEOUT });
    const width = await page.evaluate(() => document.documentElement.clientWidth);
    const { left, right, clipped } = await cell.evaluate((td) => {
      const box = td.getBoundingClientRect();
      return { left: box.left, right: box.right, clipped: td.scrollWidth > td.clientWidth };
    });
    assert.ok(left >= 0 && right <= width, `the Error cell spans ${left}..${right} px of ${width}`);
    assert.equal(clipped, false, "the Error cell's text is cut");
    await screenshot(page, "task-attempt-error-1280x800");
    await page.context().close();
  });

  it("retries a failed task from its page and follows the new attempt", async () => {
    const id = await submit("sleep", { ms: 1, fail: "permanent" });
    await eventually("the task failed", async () => (await state(id)) === "failed");
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    await page.getByTestId("stream-status").filter({ hasText: "ended" }).waitFor({ timeout: TIMEOUT });
    await page.getByRole("button", { name: "Retry task" }).click();
    // The input fails it again: the timeline streams on to the second failure.
    const failures = page.getByTestId("timeline").getByText("task.failed", { exact: true });
    await eventually("two failures in the timeline", async () => (await failures.count()) === 2);
    await page.getByTestId("stream-status").filter({ hasText: "ended" }).waitFor({ timeout: TIMEOUT });
    await page.getByTestId("task-state").filter({ hasText: "failed" }).waitFor({ timeout: TIMEOUT });
    await page.context().close();
  });

  it("shows a failed task plainly: its code once, no phase, how long it queued and ran, in UTC", async () => {
    const id = await submit("sleep", { ms: 200, steps: 2, fail: "permanent" });
    await eventually("the task failed", async () => (await state(id)) === "failed");
    const task = (await call("GET", `/v1/tasks/${id}`)).body;
    assert.equal(task.progress, 100, JSON.stringify(task));
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    await page.getByTestId("task-state").filter({ hasText: "failed" }).waitFor({ timeout: TIMEOUT });
    const error = await page.getByTestId("task-error").innerText();
    assert.ok(error.startsWith(task.error.code) && error.includes("failed as asked"), error);
    assert.ok(!error.includes(`[${task.error.code}]`), `the code twice: ${error}`);
    const progress = await page.getByTestId("task-progress").innerText();
    assert.match(progress, /100%/, progress);
    assert.doesNotMatch(progress, /running/, `a failed task's progress: ${progress}`);
    const spans = /^(\d+ ms|\d+\.\d s|\d+ min \d+ s|\d+ h \d+ min)$/;
    assert.match(await page.getByTestId("queued-for").innerText(), spans);
    assert.match(await page.getByTestId("ran-for").innerText(), spans);
    const view = await page.locator("dl.view").innerText();
    const created = `${task.created_at.slice(0, 19).replace("T", " ")} UTC`;
    assert.ok(view.includes(created), `Created ${created} in ${view}`);
    await screenshot(page, "task-failed");
    await page.context().close();
  });

  it("shows the model that answered a remote worker's task, and its fingerprint", async () => {
    const id = await submit("remote", {});
    const claimed = await eventually("the remote task claimed", async () => {
      const answer = await call("POST", "/v1/worker/claim",
        { worker_id: "console-test", task_types: ["remote"], route: "local", max: 1 });
      return answer.body.tasks.find((t) => t.id === id);
    });
    const provenance = { provider: "vllm", model: "llama-3.1-8b", route_name: "local-vllm",
      response_model: "llama-3.1-8b-instruct", system_fingerprint: "fp_console" };
    const done = await call("POST", `/v1/worker/tasks/${id}/complete`,
      { lease_token: claimed.lease_token, result: { summary: "ok" }, provenance });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks/${id}`);
    await page.getByTestId("task-state").filter({ hasText: "succeeded" }).waitFor({ timeout: TIMEOUT });
    await page.getByTestId("answered-by").filter({ hasText: "llama-3.1-8b-instruct · fingerprint fp_console" })
      .waitFor({ timeout: TIMEOUT });
    await page.getByRole("region", { name: "Attempts" }).getByText("answered by llama-3.1-8b-instruct").waitFor({ timeout: TIMEOUT });
    await page.context().close();
  });

  it("cancels a sleeping task selected in the list", async () => {
    const scope = `cancel-${Date.now()}`;
    const id = await submit("sleep", { ms: 60000, steps: 60 }, scope);
    const other = await submit("sleep", { ms: 60000, steps: 60 }, scope);
    await eventually("both running", async () => (await state(id)) === "running" && (await state(other)) === "running");
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, `#/tasks?scope_id=${scope}`);
    await page.getByLabel(`Select task ${id}`).check();
    await page.getByRole("button", { name: "Cancel selected" }).click();
    await page.getByRole("button", { name: "Yes, cancel" }).click();
    await page.getByText("Cancel: 1 done.").waitFor({ timeout: TIMEOUT });
    await eventually("the selected task cancelled", async () => (await state(id)) === "cancelled");
    const row = page.getByRole("row").filter({ has: page.getByLabel(`Select task ${id}`) });
    await row.getByTestId("row-state").filter({ hasText: "cancelled" }).waitFor({ timeout: TIMEOUT });
    assert.equal(await state(other), "running", "only the selected task is cancelled");
    await screenshot(page, "tasks-1280x800");
    await call("POST", `/v1/tasks/${other}/cancel`);
    await page.context().close();
  });

  it("pauses a type on the admin page: its tasks stay queued until resumed", async () => {
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, "#/admin");
    await page.getByRole("button", { name: "Pause noop" }).click();
    await page.getByText("noop paused.").waitFor({ timeout: TIMEOUT });
    const held = await submit("noop", { held: true });
    // A task of another type submitted after it runs to the end: the workers claim,
    // and still leave the paused type's task queued.
    const control = await submit("sleep", { ms: 10 });
    await eventually("the control task succeeded", async () => (await state(control)) === "succeeded");
    assert.equal(await state(held), "queued");
    await page.getByRole("row").filter({ hasText: "noop" }).getByText("paused").waitFor();
    await screenshot(page, "admin-1280x800");
    await page.getByRole("button", { name: "Resume noop" }).click();
    await page.getByText("noop resumed.").waitFor({ timeout: TIMEOUT });
    await eventually("the held task succeeded once resumed", async () => (await state(held)) === "succeeded");
    await page.context().close();
  });

  it("shows an open circuit on the overview and resets it on the admin page", async () => {
    // No demo type calls an upstream: open a route's circuit as its breaker would.
    sql(`INSERT INTO tasklane.circuits (route_name, consecutive_failures, opened_at, retry_at)
         VALUES ('local-vllm', 5, now(), now() + interval '1 hour')`);
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, "#/overview");
    const circuits = page.getByRole("region", { name: "Circuits" });
    await circuits.getByRole("row").filter({ hasText: "local-vllm" }).getByText("open").waitFor({ timeout: TIMEOUT });
    await page.goto(`${BASE}/ui#/admin`);
    await page.getByRole("button", { name: "Reset circuit local-vllm" }).click();
    await page.getByText("Circuit local-vllm reset.").waitFor({ timeout: TIMEOUT });
    const listed = (await call("GET", "/v1/admin/circuits")).body.items;
    assert.ok(listed.every((c) => c.route_name !== "local-vllm" || c.state === "closed"), JSON.stringify(listed));
    await page.getByRole("button", { name: "Reset circuit local-vllm" }).waitFor({ state: "detached", timeout: TIMEOUT });
    await page.context().close();
  });

  it("sets an app's weight on the admin page and lists it", async () => {
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, "#/admin");
    const weights = page.getByRole("region", { name: "App weights" });
    // The console's own token makes its app listed, at the default.
    await weights.getByRole("row").filter({ hasText: "console" }).getByText("default").waitFor({ timeout: TIMEOUT });
    await weights.getByLabel("App", { exact: true }).fill("mail");
    await weights.getByLabel("Weight", { exact: true }).fill("4");
    await weights.getByRole("button", { name: "Set weight" }).click();
    await weights.getByText("mail: weight 4.").waitFor({ timeout: TIMEOUT });
    const row = weights.getByRole("row").filter({ has: page.getByRole("rowheader", { name: "mail", exact: true }) });
    await row.getByRole("cell", { name: "4", exact: true }).waitFor({ timeout: TIMEOUT });
    const listed = (await call("GET", "/v1/admin/apps")).body.items;
    assert.deepEqual(listed.find((a) => a.app === "mail")?.weight, 4, JSON.stringify(listed));
    await screenshot(page, "admin-weights");
    await page.context().close();
  });

  it("offers a scope token only its own scope, redacted, and nothing it may not do", async () => {
    const mine = await submit("sleep", { ms: 1, fail: "permanent" }, "mailbox-9", { usage_subject: "user-9" });
    await submit("noop", {}, "someone-else");
    await eventually("the scope's task failed", async () => (await state(mine)) === "failed");
    const page = await browser.page();
    await signIn(page, SCOPE_TOKEN);
    await page.getByRole("heading", { name: "Tasks" }).waitFor();
    const nav = page.getByRole("navigation", { name: "Main" });
    assert.equal(await nav.getByRole("link", { name: "Overview" }).count(), 0);
    assert.equal(await nav.getByRole("link", { name: "Admin" }).count(), 0);
    await page.getByTestId("row-state").first().waitFor({ timeout: TIMEOUT });
    const scopes = await page.locator("table.tasks tbody td:nth-child(4)").allInnerTexts();
    assert.ok(scopes.length > 0 && scopes.every((s) => s === "mailbox-9"), `scopes: ${scopes}`);
    assert.equal(await page.getByRole("button", { name: "Retry selected" }).count(), 0);
    await page.goto(`${BASE}/ui#/tasks/${mine}`);
    await page.getByTestId("task-state").filter({ hasText: "failed" }).waitFor({ timeout: TIMEOUT });
    const view = await page.locator("dl.view").innerText();
    assert.ok(!view.includes("Usage subject") && !view.includes("user-9"), view);
    assert.equal(await page.getByRole("button", { name: "Retry task" }).count(), 0);
    await screenshot(page, "task-scope-token");
    await page.context().close();
  });

  it("fits a phone's width", async () => {
    const page = await browser.page({ width: 390, height: 844 });
    await signIn(page, ADMIN_TOKEN);
    for (const [hash, heading] of [["#/overview", "Overview"], ["#/tasks", "Tasks"], ["#/admin", "Admin"]]) {
      await page.goto(`${BASE}/ui${hash}`);
      await page.getByRole("heading", { name: heading, exact: true }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${hash} is ${overflow}px wider than the phone`);
      await screenshot(page, `${heading.toLowerCase()}-390x844`);
    }
    await page.context().close();
  });

  it("shows the task list's State column on a phone", async () => {
    await submit("noop", {}, "phone-list-with-a-long-scope-name");
    const page = await browser.page({ width: 390, height: 844 });
    await signIn(page, ADMIN_TOKEN, "#/tasks");
    const states = page.getByTestId("row-state");
    await states.first().waitFor({ timeout: TIMEOUT });
    const width = await page.evaluate(() => document.documentElement.clientWidth);
    const cells = await states.evaluateAll((badges) => badges.map((badge) => {
      const box = badge.closest("td").getBoundingClientRect();
      return [box.left, box.right];
    }));
    assert.ok(cells.length > 0);
    const outside = cells.filter(([left, right]) => left < 0 || right > width);
    assert.deepEqual(outside, [], `State cells outside 0..${width} px`);
    await screenshot(page, "tasks-states-390x844");
    await page.context().close();
  });

  it("shows the webhook outbox on the overview", async () => {
    // Subscribed to cancellations only, and deleted at the end: nothing is sent to it.
    const put = await call("PUT", "/v1/webhooks/console-hooks",
      { url: "https://hooks.example.com/tasklane", events: ["task.cancelled"] });
    assert.ok([200, 201].includes(put.status), JSON.stringify(put.body));
    const page = await browser.page();
    await signIn(page, ADMIN_TOKEN, "#/overview");
    const card = page.getByRole("region", { name: "Webhooks" }).getByTestId("webhooks");
    await card.filter({ hasText: /Endpoints\s*1 \(0 disabled\)/ }).waitFor({ timeout: TIMEOUT });
    assert.match(await card.innerText(), /Pending notifications\s*0/);
    await page.context().close();
    assert.equal((await call("DELETE", "/v1/webhooks/console-hooks")).status, 204);
  });

  it("made no request outside its origin and logged no error", () => {
    const origin = new URL(BASE).origin;
    assert.ok(browser.requests.length > 20, `${browser.requests.length} requests recorded`);
    const outside = browser.requests.filter((url) => new URL(url).origin !== origin);
    assert.deepEqual(outside, []);
    assert.deepEqual(browser.problems, []);
    // Refused requests: only the routes a server without attempts or circuit breakers
    // lacks (the console then says so), each asked once per page, not on every refresh.
    const optional = /^404 \/v1\/(tasks\/[^/]+\/attempts|admin\/circuits)$/;
    const unexpected = browser.refused.filter((r) => !optional.test(r));
    assert.deepEqual(unexpected, []);
    assert.ok(browser.refused.length <= 12, `asked again and again: ${browser.refused}`);
  });
});
