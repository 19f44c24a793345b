//! Live output from remote workers across replicas: `BENCH_STREAMS` (100) remote
//! tasks, claimed by a remote worker of the load generator on replica A (roles api,
//! worker, maintenance), each streaming `BENCH_CHUNKS` (200) chunks `BENCH_CHUNK_MS`
//! (20) apart with `POST /v1/worker/tasks/{id}/output` (the streams share the worker's
//! connection pool), while one observer per task follows `GET /v1/tasks/{id}/output` on
//! replica B (role api). Each chunk's text is the time the worker sent its request
//! (`STAMP_DIGITS` digits of microseconds, then `;`), so each observer times every chunk
//! from that request to its arrival on the other replica: p50/p99 over all chunks. Then
//! the batch completes through A, which ends every observer's stream. What PostgreSQL
//! paid: commits per streamed attempt (claims, writes, completion, everything), and the
//! WAL written while the streams ran, per chunk (the goal: none per chunk).

use std::time::{Duration, Instant};

use tasklane::load::fleet::Fleet;
use tasklane::load::remote::{Lease, RemoteWorker, MAX_CLAIM};
use tasklane::load::wal::Counters;
use tasklane::mockllm::STAMP_DIGITS;

use crate::common;

/// How the streams are shaped.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Shape {
    pub streams: i64,
    pub chunks: usize,
    pub chunk_ms: u64,
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
        observers.push(tokio::spawn(common::stamps::latencies(response)));
    }
    // Let the replicas' backends report their statistics, then sample: the streams'
    // window holds only what the writes cost.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stream_start = Counters::read(client).await?;
    let started = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for lease in leases.clone() {
        let worker = worker.clone();
        writers.spawn(async move {
            let every = Duration::from_millis(shape.chunk_ms);
            let begin = tokio::time::Instant::now();
            let mut answered = Vec::with_capacity(shape.chunks);
            for n in 0..shape.chunks {
                tokio::time::sleep_until(begin + every * n as u32).await;
                let sent = common::stamps::now_micros();
                let stamp = format!("{sent:0width$};", width = STAMP_DIGITS);
                worker.write_output(&lease, &stamp).await?;
                answered.push(common::stamps::now_micros() - sent);
            }
            anyhow::Ok(answered)
        });
    }
    // How long each write's request took, to tell it apart from the publishing.
    let mut requests = Vec::new();
    while let Some(written) = writers.join_next().await {
        requests.extend(written??);
    }
    requests.sort_unstable();
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
    let mut latencies = Vec::new();
    for observer in observers {
        latencies.extend(observer.await??);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let whole = all_start.used_until(&Counters::read(client).await?, shape.streams);
    let output_writes = output_writes(client).await? - output_writes_before;
    latencies.sort_unstable();
    let pct = |sorted: &[u128], p: f64| {
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .map(|us| *us as f64 / 1000.0)
            .unwrap_or(f64::NAN)
    };
    Ok(serde_json::json!({
        "latency_p50_ms": pct(&latencies, 0.50),
        "latency_p99_ms": pct(&latencies, 0.99),
        "write_request_p50_ms": pct(&requests, 0.50),
        "write_request_p99_ms": pct(&requests, 0.99),
        "chunks_seen": latencies.len(),
        "chunks_expected": chunks,
        "writes_per_second": chunks as f64 / stream_seconds,
        "commits_per_attempt": whole.commits_per_1000_tasks / 1000.0,
        "wal_bytes_per_attempt": whole.wal_bytes_per_task,
        "commits_per_chunk_while_streaming": while_streaming.commits_per_1000_tasks / 1000.0,
        "wal_bytes_per_chunk_while_streaming": while_streaming.wal_bytes_per_task,
        "task_output_writes_per_attempt": output_writes as f64 / shape.streams as f64,
        "stream_seconds": stream_seconds,
    }))
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
