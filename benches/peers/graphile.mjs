// Graphile Worker's drain in its fastest mode (a local queue and batched completion):
// `node graphile.mjs DATABASE_URL JOBS CONCURRENCY LOCAL_QUEUE`.
//
// Timed as tasklane's drain is: the worker pool is started first and left idle
// (connections open, listening and polling); then JOBS no-op jobs are added with
// addJobs (chunks of 1,000) inside one open transaction, so the workers cannot see
// them; the script says "queued" and waits for "go" on stdin (the bench samples the WAL
// counters in between), commits, and times from the commit's return (the backlog
// visible, the workers woken by its NOTIFY) until the last job is gone from the table.
// Prints one JSON line.
import { EventEmitter } from "node:events";
import { run, makeWorkerUtils, Logger } from "graphile-worker";
import pg from "pg";
import { queued } from "./handshake.mjs";

const [url, jobsArg, concurrencyArg, localQueueArg] = process.argv.slice(2);
const jobs = Number(jobsArg ?? 50000);
const concurrency = Number(concurrencyArg ?? 64);
const localQueue = Number(localQueueArg ?? 200);

// Quiet: a log line per job would measure the terminal, not the queue.
const logger = new Logger(() => () => {});
const setup = await makeWorkerUtils({ connectionString: url, logger });
await setup.migrate();
await setup.release();

// Idle connections are kept (no idle timeout): the fleet is warm when the jobs appear.
const pool = new pg.Pool({ connectionString: url, max: concurrency + 4, idleTimeoutMillis: 0 });
pool.on("error", (e) => console.error(e));
pool.on("connect", (client) => client.on("error", (e) => console.error(e)));
const warm = await Promise.all(Array.from({ length: concurrency }, () => pool.connect()));
warm.forEach((client) => client.release());

let completed = 0;
let firstJob;
let allDone;
const finished = new Promise((resolve) => (allDone = resolve));
const events = new EventEmitter();
const listening = new Promise((resolve) => events.once("pool:listen:success", resolve));
const runner = await run({
  events,
  pgPool: pool,
  concurrency,
  noHandleSignals: true,
  pollInterval: 1000,
  logger,
  crontab: "",
  preset: {
    worker: {
      localQueue: { size: localQueue },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
  taskList: {
    noop: async () => {
      firstJob ??= performance.now();
      completed += 1;
      if (completed === jobs) allDone();
    },
  },
});
await listening;
// Let the local queue find the table empty and go idle, as a fleet between bursts.
await new Promise((r) => setTimeout(r, 1500));

// The backlog, invisible until its commit: a pool of one connection outside the
// workers' pool, so every addJobs runs in the transaction opened here.
const loader = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 0 });
loader.on("error", (e) => console.error(e));
loader.on("connect", (client) => client.on("error", (e) => console.error(e)));
await loader.query("BEGIN");
const utils = await makeWorkerUtils({ pgPool: loader, logger });
const enqueueStarted = performance.now();
for (let done = 0; done < jobs; done += 1000) {
  const n = Math.min(1000, jobs - done);
  await utils.addJobs(Array.from({ length: n }, () => ({ identifier: "noop", payload: {} })));
}
const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
await queued();
await loader.query("COMMIT");
const started = performance.now();

await finished;
// Completions are batched: the run ends when the table has no job left.
for (;;) {
  const { rows } = await loader.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
  if (rows[0].n === 0) break;
  await new Promise((r) => setTimeout(r, 2));
}
const seconds = (performance.now() - started) / 1000;
await utils.release();
await loader.end();
await runner.stop();
await pool.end();
console.log(JSON.stringify({
  system: "graphile-worker",
  jobs,
  concurrency,
  local_queue: localQueue,
  seconds,
  // From the commit's return to the first job in a handler: the wake-up.
  first_job_seconds: (firstJob - started) / 1000,
  jobs_per_second: jobs / seconds,
  enqueue_per_second: jobs / enqueueSeconds,
}));
