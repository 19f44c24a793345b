//! Heartbeats of `BENCH_IN_FLIGHT` (1,000) remote tasks held by one remote worker:
//! claimed (`max` 100 at a time), then kept in flight for `BENCH_HEARTBEAT_SECONDS`
//! (60) and heartbeaten with `POST /v1/worker/heartbeats` (500 items a request) every
//! third of their lease, as a worker does. What the whole PostgreSQL server spends over
//! that stretch (cores, WAL, commits), beside the same replica idle for as long with
//! nothing in flight, measured first.

use std::time::{Duration, Instant};

use tasklane::load::drain;
use tasklane::load::fleet::Fleet;
use tasklane::load::remote::{Lease, RemoteWorker, MAX_CLAIM};
use tasklane::load::wal::Counters;

use crate::common;

/// What one stretch cost the server.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Stretch {
    pub seconds: f64,
    pub postgres_cores: f64,
    pub wal_bytes_per_second: f64,
    pub commits_per_second: f64,
    /// Heartbeat requests sent, and items answered `ok` of those sent.
    pub requests: usize,
    pub extended: usize,
    pub items: usize,
}

impl std::fmt::Display for Stretch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} s: PostgreSQL {:.4} core, {:.0} WAL B/s, {:.1} commits/s, {} heartbeat requests, {} of {} items extended",
            self.seconds,
            self.postgres_cores,
            self.wal_bytes_per_second,
            self.commits_per_second,
            self.requests,
            self.extended,
            self.items
        )
    }
}

/// The idle stretch and the stretch with `in_flight` tasks heartbeaten, each `seconds`
/// long, on one replica (the bench flags).
pub async fn measure(
    bench: &common::Bench,
    in_flight: i64,
    seconds: u64,
) -> anyhow::Result<(Stretch, Stretch, f64)> {
    let (name, url) = bench.fresh_db().await?;
    let outcome = async {
        let client = common::connect(&url).await?;
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .get(0);
        let mut spec = bench.fleet(&url, 1, &common::serve_args());
        spec.http_base_port = Some(common::free_ports(1)?);
        let fleet = Fleet::start(&spec, &client).await?;
        let token = common::create_token(&bench.bin, &url, "beats", "work")?;
        let worker = RemoteWorker::new(&spec.http_urls()[0], &token, "bench-beats", &["remote"])?;
        let length = Duration::from_secs(seconds);
        let idle = stretch(&client, pid, length, || async { Ok((0, 0, 0)) }).await?;
        drain::enqueue(
            &client,
            "beats",
            "remote",
            in_flight,
            &serde_json::json!({}),
        )
        .await?;
        let mut leases: Vec<Lease> = Vec::new();
        while (leases.len() as i64) < in_flight {
            leases.extend(worker.claim(MAX_CLAIM, 5).await?);
        }
        let now: chrono::DateTime<chrono::Utc> =
            client.query_one("SELECT now()", &[]).await?.get(0);
        let lease = leases
            .iter()
            .map(|l| (l.lease_expires_at - now).num_milliseconds())
            .min()
            .unwrap_or(0);
        let every = Duration::from_millis((lease.max(3) / 3) as u64);
        let (leases, worker) = (&leases, &worker);
        let beating = stretch(&client, pid, length, move || async move {
            let mut sent = (0, 0, 0);
            let started = Instant::now();
            let mut beat = 1;
            while every * beat <= length {
                tokio::time::sleep_until((started + every * beat).into()).await;
                beat += 1;
                sent.0 += leases.len().div_ceil(500);
                sent.1 += worker.heartbeat(leases).await?;
                sent.2 += leases.len();
            }
            Ok(sent)
        })
        .await?;
        fleet.stop();
        Ok((idle, beating, every.as_secs_f64()))
    }
    .await;
    bench.drop_db(&name).await?;
    outcome
}

/// Runs `work` (answering requests, items extended, items sent), then waits out the
/// rest of `length`, and reads what the server spent meanwhile.
async fn stretch<F, Fut>(
    client: &tokio_postgres::Client,
    pid: i32,
    length: Duration,
    work: F,
) -> anyhow::Result<Stretch>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(usize, usize, usize)>>,
{
    let wal = Counters::start(client).await?;
    let cpu = tasklane::load::cpu::server_seconds(pid);
    let started = Instant::now();
    let (requests, extended, items) = work().await?;
    if let Some(left) = length.checked_sub(started.elapsed()) {
        tokio::time::sleep(left).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cores = tasklane::load::cpu::server_seconds(pid)
        .zip(cpu)
        .map_or(f64::NAN, |(after, before)| (after - before) / seconds);
    // Backends report their commits within a second of going idle.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let used = wal.used_until(&Counters::read(client).await?, 1);
    Ok(Stretch {
        seconds,
        postgres_cores: cores,
        wal_bytes_per_second: used.wal_bytes_per_task / seconds,
        commits_per_second: used.commits_per_1000_tasks / 1000.0 / seconds,
        requests,
        extended,
        items,
    })
}
