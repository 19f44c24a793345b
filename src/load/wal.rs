//! What a stretch of work writes to the WAL and how many commits it makes, per task:
//! the cost that decides throughput on a durable server (every commit waits for a WAL
//! flush; more WAL bytes, full-page images above all, mean longer flushes), and that a
//! server with durability off does not show.
//!
//! A measurement starts after a checkpoint, so no full-page image is owed from before
//! it, and ends once every worker session has left the database, so the cumulative
//! counters include all that they did. The WAL counters are the server's: on a server
//! with other work, that work counts too.

use std::time::{Duration, Instant};

use tokio_postgres::Client;

/// The server's counters at one instant.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    position: f64,
    records: i64,
    full_page_images: i64,
    flushes: i64,
    commits: i64,
}

/// What the work between two samples cost, per task.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct WalUse {
    pub wal_bytes_per_task: f64,
    pub wal_records_per_task: f64,
    pub full_page_images_per_task: f64,
    /// WAL flushes (`wal_sync`) per 1,000 tasks.
    pub flushes_per_1000_tasks: f64,
    /// Commits in this database per 1,000 tasks.
    pub commits_per_1000_tasks: f64,
}

impl Counters {
    /// Takes a checkpoint, then samples: the start of a measurement.
    pub async fn start(client: &Client) -> anyhow::Result<Counters> {
        super::store::checkpoint(client).await?;
        Counters::read(client).await
    }

    /// The WAL position of this sample as PostgreSQL writes an LSN (`16/B374D848`), for
    /// tools that read the WAL from it (pg_waldump).
    pub fn lsn(&self) -> String {
        let position = self.position as u64;
        format!("{:X}/{:X}", position >> 32, position & 0xffff_ffff)
    }

    /// Samples now.
    pub async fn read(client: &Client) -> anyhow::Result<Counters> {
        let (position, records, full_page_images, flushes, commits) =
            super::store::wal_counters(client).await?;
        Ok(Counters {
            position,
            records,
            full_page_images,
            flushes,
            commits,
        })
    }

    /// Samples once no other session is left on the database (bounded: after 30 s it
    /// samples anyway), and returns what `tasks` tasks cost since `self`.
    pub async fn finish(&self, client: &Client, tasks: i64) -> anyhow::Result<WalUse> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while super::store::other_sessions(client).await? > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let end = Counters::read(client).await?;
        Ok(self.used_until(&end, tasks))
    }

    /// What `tasks` tasks cost from `self` to `end`. Mid-run, the commit count lags by
    /// what busy backends have not reported yet (up to a second of their work).
    pub fn used_until(&self, end: &Counters, tasks: i64) -> WalUse {
        let per = |a: f64, b: f64| (b - a) / tasks.max(1) as f64;
        WalUse {
            wal_bytes_per_task: per(self.position, end.position),
            wal_records_per_task: per(self.records as f64, end.records as f64),
            full_page_images_per_task: per(
                self.full_page_images as f64,
                end.full_page_images as f64,
            ),
            flushes_per_1000_tasks: 1000.0 * per(self.flushes as f64, end.flushes as f64),
            commits_per_1000_tasks: 1000.0 * per(self.commits as f64, end.commits as f64),
        }
    }
}

impl std::fmt::Display for WalUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WAL {:.0} B/task, {:.1} records/task, {:.3} FPI/task, {:.1} flushes and {:.1} commits per 1,000 tasks",
            self.wal_bytes_per_task,
            self.wal_records_per_task,
            self.full_page_images_per_task,
            self.flushes_per_1000_tasks,
            self.commits_per_1000_tasks
        )
    }
}
