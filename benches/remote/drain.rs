//! Remote drain beside the in-process drain, in the same rounds: `BENCH_TASKS` (50,000)
//! queued `remote` no-op tasks worked off by `BENCH_WORKERS` (8) remote workers of the
//! load generator (each claims `max` 100 and completes the batch with `POST
//! /v1/worker/complete`) through one replica, and as many `noop` tasks by that
//! replica's in-process workers. Both are timed as the drain bench times a drain (the
//! workers idle before one commit makes the backlog claimable; from that commit to the
//! last `finished_at`), and both report the whole PostgreSQL server's CPU, WAL and
//! commits per task.

use tasklane::load::drain::{self, Drained};
use tasklane::load::fleet::Fleet;
use tasklane::load::remote::RemoteWorker;
use tasklane::load::wal::WalUse;
use tokio_util::sync::CancellationToken;

use crate::common;

/// One drain's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    pub tasks_per_second: f64,
    pub postgres_cpu_ms_per_task: f64,
    pub wal: WalUse,
}

impl Figures {
    fn of(drained: &Drained, wal: WalUse) -> Figures {
        Figures {
            tasks_per_second: drained.tasks_per_second,
            postgres_cpu_ms_per_task: drained.postgres_server_cpu_ms_per_task.unwrap_or(f64::NAN),
            wal,
        }
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} tasks/s, PostgreSQL {:.3} CPU ms/task, {}",
            self.tasks_per_second, self.postgres_cpu_ms_per_task, self.wal
        )
    }
}

/// The in-process drain: one replica's own workers (the bench flags) drain `tasks` noop
/// tasks.
pub async fn in_process(bench: &common::Bench, tasks: i64) -> anyhow::Result<Figures> {
    let (name, url) = bench.fresh_db().await?;
    let outcome = async {
        let mut client = common::connect(&url).await?;
        let spec = bench.fleet(&url, 1, &common::serve_args());
        let fleet = Fleet::start(&spec, &client).await?;
        let mut drained = drain::drain(&mut client, &fleet, "drain", tasks).await?;
        fleet.stop();
        let wal = drained.finish_wal(&client).await?;
        checked(&drained)?;
        Ok(Figures::of(&drained, wal))
    }
    .await;
    bench.drop_db(&name).await?;
    outcome
}

/// The remote drain: `workers` remote workers drain `tasks` remote tasks through one
/// replica (API, workers and maintenance roles, the bench flags; its in-process workers
/// have nothing they may claim).
pub async fn remote(bench: &common::Bench, tasks: i64, workers: usize) -> anyhow::Result<Figures> {
    let (name, url) = bench.fresh_db().await?;
    let outcome = async {
        let mut client = common::connect(&url).await?;
        let mut spec = bench.fleet(&url, 1, &common::serve_args());
        spec.http_base_port = Some(common::free_ports(1)?);
        let fleet = Fleet::start(&spec, &client).await?;
        let token = common::create_token(&bench.bin, &url, "drain", "work")?;
        let base = &spec.http_urls()[0];
        let stop = CancellationToken::new();
        let mut running = tokio::task::JoinSet::new();
        for n in 0..workers {
            let worker = RemoteWorker::new(base, &token, &format!("bench-{n}"), &["remote"])?;
            let stop = stop.clone();
            running.spawn(async move { worker.drain(stop).await });
        }
        let backlog = drain::queue_of(&mut client, &fleet, "drain", "remote", tasks).await?;
        let drained = backlog.release(&mut client, &fleet).await;
        stop.cancel();
        let mut completed = 0;
        while let Some(done) = running.join_next().await {
            completed += done??;
        }
        let mut drained = drained?;
        fleet.stop();
        let wal = drained.finish_wal(&client).await?;
        checked(&drained)?;
        anyhow::ensure!(
            completed == tasks as u64,
            "the workers completed {completed} of {tasks}"
        );
        Ok(Figures::of(&drained, wal))
    }
    .await;
    bench.drop_db(&name).await?;
    outcome
}

fn checked(drained: &Drained) -> anyhow::Result<()> {
    anyhow::ensure!(
        drained.broken == 0,
        "{} tasks were not worked exactly once",
        drained.broken
    );
    Ok(())
}
