// pg-boss's drain with batched fetch and LISTEN/NOTIFY wake-ups:
// `node pgboss.mjs DATABASE_URL JOBS BATCH WORKERS`.
//
// Timed as tasklane's drain is: `work` handlers taking BATCH jobs per fetch (WORKERS of
// them, fetching continuously while batches come back full) are started first and left
// idle (polling every 0.5 s, the shortest pg-boss allows, and listening: the queue is
// created with `notify`); then JOBS no-op jobs are inserted (insert, chunks of 1,000)
// inside one open transaction, so the workers cannot see them; the script says
// "queued" and waits for "go" on stdin (the bench samples the WAL counters in between),
// commits, and times from the commit's return (the backlog visible, the workers woken
// by its NOTIFY) until every job is completed. Prints one JSON line.
import { PgBoss } from "pg-boss";
import pg from "pg";
import { queued } from "./handshake.mjs";

const [url, jobsArg, batchArg, workersArg] = process.argv.slice(2);
const jobs = Number(jobsArg ?? 50000);
const batchSize = Number(batchArg ?? 200);
const workers = Number(workersArg ?? 4);

const boss = new PgBoss({
  connectionString: url,
  max: workers + 4,
  supervise: false,
  schedule: false,
  useListenNotify: true,
});
boss.on("error", (e) => console.error(e));
await boss.start();
await boss.createQueue("noop", { notify: true });

let completed = 0;
let firstJob;
let allDone;
const finished = new Promise((resolve) => (allDone = resolve));
await boss.work(
  "noop",
  {
    batchSize,
    localConcurrency: workers,
    pollingIntervalSeconds: 0.5,
    notifyPollingIntervalSeconds: 0.5,
    burstWhenBatchFull: true,
  },
  async (batch) => {
    firstJob ??= performance.now();
    completed += batch.length;
    if (completed >= jobs) setImmediate(allDone);
  },
);
// Let every worker find the queue empty once and go idle, as a fleet between bursts.
await new Promise((r) => setTimeout(r, 1500));

// The backlog, invisible until its commit: one connection outside pg-boss's pool.
const loader = new pg.Client({ connectionString: url });
await loader.connect();
await loader.query("BEGIN");
const db = { executeSql: (text, values) => loader.query(text, values) };
const enqueueStarted = performance.now();
for (let done = 0; done < jobs; done += 1000) {
  const n = Math.min(1000, jobs - done);
  await boss.insert("noop", Array.from({ length: n }, () => ({ data: {} })), { db });
}
const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
await queued();
await loader.query("COMMIT");
const started = performance.now();

await finished;
// A handler's batch is completed after it returns: wait until none is left open.
for (;;) {
  const { rows } = await loader.query("SELECT count(*)::int AS n FROM pgboss.job WHERE state < 'completed'");
  if (rows[0].n === 0) break;
  await new Promise((r) => setTimeout(r, 2));
}
const seconds = (performance.now() - started) / 1000;
await loader.end();
await boss.stop({ graceful: false, wait: false });
console.log(JSON.stringify({
  system: "pg-boss",
  jobs,
  batch: batchSize,
  workers,
  seconds,
  // From the commit's return to the first job in a handler: the wake-up.
  first_job_seconds: (firstJob - started) / 1000,
  jobs_per_second: jobs / seconds,
  enqueue_per_second: jobs / enqueueSeconds,
}));
