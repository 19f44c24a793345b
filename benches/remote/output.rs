//! Live output from remote workers across replicas: `BENCH_STREAMS` (100) remote
//! tasks, claimed by a remote worker of the load generator on replica A (roles api,
//! worker, maintenance), each producing `BENCH_CHUNKS` (200) chunks `BENCH_CHUNK_MS`
//! (20) apart (the streams' phases spread over that period), while one observer per
//! task follows `GET /v1/tasks/{id}/output` on replica B (role api). The worker sends
//! as the clients' workers do: every `BENCH_ROUND_MS` (20) one batched request
//! (`POST /v1/worker/output`) carries what every stream produced since the last round,
//! over one kept-alive connection, a round at a time. Each chunk's text is two stamps
//! (`STAMP_DIGITS` digits of microseconds, joined by `,`, then `;`): when it was
//! produced and when the request that carried it was sent, so each observer times every
//! chunk both from its request (the goal's measure) and from its production (what a
//! reader of the stream sees, the round's coalescing included): p50/p99 over all
//! chunks (and which chunks each observer missed; the first 10 streams are followed on
//! A as well, to tell a chunk A never published from one B never delivered). Then the
//! batch completes through A, which ends every observer's stream. What
//! PostgreSQL paid: commits per streamed attempt (claims, writes, completion,
//! everything), and the WAL written while the streams ran, per chunk (the goal: none
//! per chunk).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tasklane::load::fleet::Fleet;
use tasklane::load::remote::{Lease, RemoteWorker, MAX_CLAIM};
use tasklane::load::wal::Counters;

use crate::common;

/// How the streams are shaped.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Shape {
    pub streams: i64,
    pub chunks: usize,
    pub chunk_ms: u64,
    /// How often the worker sends what the streams produced (the clients' 20 ms).
    pub round_ms: u64,
}

/// One run's figures (JSON, printed as a table by the caller).
pub async fn measure(bench: &common::Bench, shape: Shape) -> anyhow::Result<serde_json::Value> {
    let (name, url) = bench.fresh_db().await?;
    let outcome = async {
        let client = common::connect(&url).await?;
        let port = common::free_ports(2)?;
        let mut a = bench.fleet(&url, 1, &common::serve_args());
        a.http_base_port = Some(port);
        let mut b = bench.fleet(&url, 1, &[]);
        b.http_base_port = Some(port + 1);
        b.roles = Some("api".into());
        let fleet_a = Fleet::start(&a, &client).await?;
        let fleet_b = Fleet::start(&b, &client).await?;
        let work = common::create_token(&bench.bin, &url, "stream", "work")?;
        let read = common::create_token(&bench.bin, &url, "stream", "read")?;
        let figures = streams(
            &client,
            &a.http_urls()[0],
            &b.http_urls()[0],
            &work,
            &read,
            shape,
        )
        .await;
        fleet_a.stop();
        fleet_b.stop();
        figures
    }
    .await;
    bench.drop_db(&name).await?;
    outcome
}

async fn streams(
    client: &tokio_postgres::Client,
    a: &str,
    b: &str,
    work: &str,
    read: &str,
    shape: Shape,
) -> anyhow::Result<serde_json::Value> {
    let all_start = Counters::start(client).await?;
    let output_writes_before = output_writes(client).await?;
    tasklane::load::drain::enqueue(
        client,
        "stream",
        "remote",
        shape.streams,
        &serde_json::json!({}),
    )
    .await?;
    let worker = RemoteWorker::new(a, work, "bench-stream", &["remote"])?;
    let mut leases: Vec<Lease> = Vec::new();
    while (leases.len() as i64) < shape.streams {
        leases.extend(worker.claim(MAX_CLAIM, 5).await?);
    }
    let http = reqwest::Client::new();
    let mut observers = Vec::new();
    for lease in &leases {
        let response = http
            .get(format!("{b}/v1/tasks/{}/output", lease.id))
            .bearer_auth(read)
            .send()
            .await?
            .error_for_status()?;
        observers.push(tokio::spawn(common::stamps::arrivals(response)));
    }
    // A few streams are followed on replica A too (the writer's own): when B misses
    // chunks, these say whether A published them.
    let mut controls = Vec::new();
    for lease in leases.iter().take(CONTROLS) {
        let response = http
            .get(format!("{a}/v1/tasks/{}/output", lease.id))
            .bearer_auth(read)
            .send()
            .await?
            .error_for_status()?;
        controls.push(tokio::spawn(common::stamps::arrivals(response)));
    }
    // Let the replicas' backends report their statistics, then sample: the streams'
    // window holds only what the writes cost.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stream_start = Counters::read(client).await?;
    let started = Instant::now();
    let produced = produce(shape);
    let (requests, sent) = send_rounds(&worker, &leases, &produced, shape).await?;
    let stream_seconds = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let chunks = shape.streams * shape.chunks as i64;
    let while_streaming = stream_start.used_until(&Counters::read(client).await?, chunks);
    let completed = worker.complete(&leases, &serde_json::json!({})).await?;
    anyhow::ensure!(
        completed == leases.len(),
        "{completed} of {} completed",
        leases.len()
    );
    let (mut from_request, mut from_production) = (Vec::new(), Vec::new());
    let mut missing = Missing::default();
    for (observer, sent) in observers.into_iter().zip(&sent) {
        let arrivals = observer.await??;
        for a in &arrivals {
            from_production.push(a.arrived.saturating_sub(a.stamps[0]));
            from_request.push(a.arrived.saturating_sub(*a.stamps.last().expect("stamps")));
        }
        missing.count(sent, &arrivals);
    }
    let mut missing_on_a = Missing::default();
    for (control, sent) in controls.into_iter().zip(&sent) {
        missing_on_a.count(sent, &control.await??);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let whole = all_start.used_until(&Counters::read(client).await?, shape.streams);
    let output_writes = output_writes(client).await? - output_writes_before;
    from_request.sort_unstable();
    from_production.sort_unstable();
    let mut request_times: Vec<u128> = requests.iter().map(|r| r.micros).collect();
    request_times.sort_unstable();
    let items: usize = requests.iter().map(|r| r.items).sum();
    let pct = |sorted: &[u128], p: f64| {
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .map(|us| *us as f64 / 1000.0)
            .unwrap_or(f64::NAN)
    };
    Ok(serde_json::json!({
        "latency_p50_ms": pct(&from_request, 0.50),
        "latency_p99_ms": pct(&from_request, 0.99),
        "from_production_p50_ms": pct(&from_production, 0.50),
        "from_production_p99_ms": pct(&from_production, 0.99),
        "write_request_p50_ms": pct(&request_times, 0.50),
        "write_request_p99_ms": pct(&request_times, 0.99),
        "chunks_seen": from_request.len(),
        "chunks_expected": chunks,
        "streams_missing_chunks": missing.streams,
        "control_streams_missing_chunks_on_a": missing_on_a.streams,
        "missing_first_index_median": missing.first_median(),
        "missing_last_index_median": missing.last_median(),
        "chunks_per_second": chunks as f64 / stream_seconds,
        "requests_per_second": requests.len() as f64 / stream_seconds,
        "items_per_request": items as f64 / requests.len().max(1) as f64,
        "commits_per_attempt": whole.commits_per_1000_tasks / 1000.0,
        "wal_bytes_per_attempt": whole.wal_bytes_per_task,
        "commits_per_chunk_while_streaming": while_streaming.commits_per_1000_tasks / 1000.0,
        "wal_bytes_per_chunk_while_streaming": while_streaming.wal_bytes_per_task,
        "task_output_writes_per_attempt": output_writes as f64 / shape.streams as f64,
        "stream_seconds": stream_seconds,
    }))
}

/// How many of the streams are followed on replica A as well.
const CONTROLS: usize = 10;

/// Every stream's chunks produced and not yet sent: their production stamps.
type Produced = Arc<Vec<Mutex<Vec<u128>>>>;

/// Starts one producer per stream: `shape.chunks` chunks `shape.chunk_ms` apart, the
/// streams' phases spread evenly over that period. The count says how many still run.
fn produce(shape: Shape) -> (Produced, Arc<AtomicUsize>) {
    let produced: Produced = Arc::new((0..shape.streams).map(|_| Mutex::new(Vec::new())).collect());
    let running = Arc::new(AtomicUsize::new(shape.streams as usize));
    let every = Duration::from_millis(shape.chunk_ms);
    let begin = tokio::time::Instant::now();
    for n in 0..shape.streams as usize {
        let (produced, running) = (produced.clone(), running.clone());
        let phase = every * n as u32 / shape.streams as u32;
        tokio::spawn(async move {
            for c in 0..shape.chunks {
                tokio::time::sleep_until(begin + phase + every * c as u32).await;
                let now = common::stamps::now_micros();
                produced[n].lock().unwrap().push(now);
            }
            running.fetch_sub(1, Ordering::SeqCst);
        });
    }
    (produced, running)
}

/// The chunks sent that an observer never saw: how many streams missed some, and where
/// in each stream (the index of the first and the last chunk missed).
#[derive(Default)]
struct Missing {
    streams: usize,
    first: Vec<usize>,
    last: Vec<usize>,
}

impl Missing {
    fn count(&mut self, sent: &[u128], seen: &[common::stamps::Arrival]) {
        let seen: std::collections::HashSet<u128> = seen.iter().map(|a| a.stamps[0]).collect();
        let missed: Vec<usize> = (0..sent.len())
            .filter(|&n| !seen.contains(&sent[n]))
            .collect();
        if let (Some(first), Some(last)) = (missed.first(), missed.last()) {
            self.streams += 1;
            self.first.push(*first);
            self.last.push(*last);
        }
    }

    fn first_median(&self) -> Option<usize> {
        median(&self.first)
    }

    fn last_median(&self) -> Option<usize> {
        median(&self.last)
    }
}

fn median(values: &[usize]) -> Option<usize> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

/// One batched write's request: how long it took to be answered, how many items.
struct Request {
    micros: u128,
    items: usize,
}

/// Every `shape.round_ms`, one batched request with what every stream produced since
/// the last round (a round at a time: a slow answer delays the next), until the
/// producers are done and everything is sent: the requests, and every stream's chunks
/// sent (their production stamps, in order).
async fn send_rounds(
    worker: &RemoteWorker,
    leases: &[Lease],
    (produced, running): &(Produced, Arc<AtomicUsize>),
    shape: Shape,
) -> anyhow::Result<(Vec<Request>, Vec<Vec<u128>>)> {
    let mut sent_chunks = vec![Vec::new(); leases.len()];
    let mut tick = tokio::time::interval(Duration::from_millis(shape.round_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut requests = Vec::new();
    loop {
        tick.tick().await;
        // Read before taking: once it is zero, this round takes the last chunks.
        let done = running.load(Ordering::SeqCst) == 0;
        let sent = common::stamps::now_micros();
        let writes: Vec<(&Lease, String)> = leases
            .iter()
            .zip(produced.iter())
            .zip(sent_chunks.iter_mut())
            .filter_map(|((lease, stamps), sent_chunks)| {
                let stamps = std::mem::take(&mut *stamps.lock().unwrap());
                sent_chunks.extend(&stamps);
                let text: String = stamps
                    .iter()
                    .map(|p| {
                        let (p, s) = (common::stamps::stamp(*p), common::stamps::stamp(sent));
                        format!("{p},{s};")
                    })
                    .collect();
                (!stamps.is_empty()).then_some((lease, text))
            })
            .collect();
        if !writes.is_empty() {
            let appended = worker.write_outputs(&writes).await?;
            anyhow::ensure!(
                appended == writes.len(),
                "{appended} of {} appended",
                writes.len()
            );
            requests.push(Request {
                micros: common::stamps::now_micros() - sent,
                items: writes.len(),
            });
        }
        if done {
            return Ok((requests, sent_chunks));
        }
    }
}

/// Rows written to `tasklane.task_output` (inserted, updated, deleted) so far.
async fn output_writes(client: &tokio_postgres::Client) -> anyhow::Result<i64> {
    client
        .execute("SELECT pg_stat_clear_snapshot()", &[])
        .await?;
    Ok(client
        .query_one(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint \
             FROM pg_stat_user_tables WHERE schemaname = 'tasklane' AND relname = 'task_output'",
            &[],
        )
        .await?
        .get(0))
}
