// pg-boss's drain with batched fetch: `node pgboss.mjs DATABASE_URL JOBS BATCH WORKERS`
// inserts JOBS no-op jobs (insert, in chunks of 1,000), says "queued" and waits for "go"
// on stdin, then times `work` handlers taking BATCH jobs per fetch (WORKERS of them,
// fetching continuously while batches come back full) until every job is completed, and
// prints one JSON line.
import { PgBoss } from "pg-boss";
import { queued } from "./handshake.mjs";

const [url, jobsArg, batchArg, workersArg] = process.argv.slice(2);
const jobs = Number(jobsArg ?? 50000);
const batchSize = Number(batchArg ?? 200);
const workers = Number(workersArg ?? 4);

const boss = new PgBoss({ connectionString: url, max: workers + 4, supervise: false, schedule: false });
boss.on("error", (e) => console.error(e));
await boss.start();
await boss.createQueue("noop");
const enqueueStarted = performance.now();
for (let done = 0; done < jobs; done += 1000) {
  const n = Math.min(1000, jobs - done);
  await boss.insert("noop", Array.from({ length: n }, () => ({ data: {} })));
}
const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
await queued();

let completed = 0;
let allDone;
const finished = new Promise((resolve) => (allDone = resolve));
const started = performance.now();
await boss.work(
  "noop",
  { batchSize, localConcurrency: workers, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
  async (batch) => {
    completed += batch.length;
    if (completed >= jobs) setImmediate(allDone);
  },
);
await finished;
// A handler's batch is completed after it returns: wait until none is left open.
const db = boss.getDb();
for (;;) {
  const { rows } = await db.executeSql("SELECT count(*)::int AS n FROM pgboss.job WHERE state < 'completed'");
  if (rows[0].n === 0) break;
  await new Promise((r) => setTimeout(r, 2));
}
const seconds = (performance.now() - started) / 1000;
await boss.stop({ graceful: false, wait: false });
console.log(JSON.stringify({
  system: "pg-boss",
  jobs,
  batch: batchSize,
  workers,
  seconds,
  jobs_per_second: jobs / seconds,
  enqueue_per_second: jobs / enqueueSeconds,
}));
