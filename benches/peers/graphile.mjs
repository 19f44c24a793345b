// Graphile Worker's drain in its fastest mode (a local queue and batched completion):
// `node graphile.mjs DATABASE_URL JOBS CONCURRENCY LOCAL_QUEUE` enqueues JOBS no-op jobs
// with addJobs (in chunks of 1,000), says "queued" and waits for "go" on stdin, then
// times a worker pool from its start until the last job is gone from the table, and
// prints one JSON line.
import { run, makeWorkerUtils, Logger } from "graphile-worker";
import pg from "pg";
import { queued } from "./handshake.mjs";

const [url, jobsArg, concurrencyArg, localQueueArg] = process.argv.slice(2);
const jobs = Number(jobsArg ?? 50000);
const concurrency = Number(concurrencyArg ?? 64);
const localQueue = Number(localQueueArg ?? 200);

// Quiet: a log line per job would measure the terminal, not the queue.
const logger = new Logger(() => () => {});
const utils = await makeWorkerUtils({ connectionString: url, logger });
await utils.migrate();
const enqueueStarted = performance.now();
for (let done = 0; done < jobs; done += 1000) {
  const n = Math.min(1000, jobs - done);
  await utils.addJobs(Array.from({ length: n }, () => ({ identifier: "noop", payload: {} })));
}
const enqueueSeconds = (performance.now() - enqueueStarted) / 1000;
await utils.release();
await queued();

const pool = new pg.Pool({ connectionString: url, max: concurrency + 4 });
pool.on("error", (e) => console.error(e));
pool.on("connect", (client) => client.on("error", (e) => console.error(e)));
let completed = 0;
let allDone;
const finished = new Promise((resolve) => (allDone = resolve));
const started = performance.now();
const runner = await run({
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
      completed += 1;
      if (completed === jobs) allDone();
    },
  },
});
await finished;
// Completions are batched: the run ends when the table has no job left.
const probe = await pool.connect();
for (;;) {
  const { rows } = await probe.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
  if (rows[0].n === 0) break;
  await new Promise((r) => setTimeout(r, 2));
}
const seconds = (performance.now() - started) / 1000;
probe.release();
await runner.stop();
await pool.end();
console.log(JSON.stringify({
  system: "graphile-worker",
  jobs,
  concurrency,
  local_queue: localQueue,
  seconds,
  jobs_per_second: jobs / seconds,
  enqueue_per_second: jobs / enqueueSeconds,
}));
