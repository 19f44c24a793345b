//! What every benchmark shares: a private PostgreSQL, a fresh migrated database per
//! measurement, the `tasklane` binary built by this very `cargo bench` (or another one
//! named by `BENCH_BIN`, e.g. the commit before a change, for an A/B in alternating
//! runs), the machine description printed with each result, and where results are
//! written.
//!
//! A benchmark never touches a test's database or a shared server: it starts its own
//! throwaway cluster (`tasklane::devdb`) unless `BENCH_DATABASE_URL` names a server to
//! create its databases on. That cluster keeps PostgreSQL's durability defaults (fsync,
//! full-page writes, synchronous commit on), as users run it; `BENCH_DURABILITY=off`
//! switches them off for studies, and every result then says so.

#![allow(dead_code)] // each bench binary uses a different part

pub mod peers;
pub mod pgbench;
pub mod plot;
pub mod stamps;
pub mod waldump;

use std::path::{Path, PathBuf};

use anyhow::Context;
use tasklane::devdb::{self, Server};
use tasklane::load::fleet::{self, FleetSpec};

/// A server to benchmark on, plus the files a fleet needs.
pub struct Bench {
    pub server: Server,
    pub bin: PathBuf,
    pub task_types: PathBuf,
    next: std::cell::Cell<u32>,
}

impl Bench {
    pub async fn start() -> anyhow::Result<Bench> {
        let url = std::env::var("BENCH_DATABASE_URL").ok();
        let options = devdb::ClusterOptions {
            durable: durable(),
            settings: extra_settings(),
            ..devdb::ClusterOptions::default()
        };
        let server = devdb::resolve_server_with(url.as_deref(), &options).await?;
        let bin = std::env::var_os("BENCH_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tasklane")));
        let task_types = fleet::write_task_types(&std::env::temp_dir())?;
        Ok(Bench {
            server,
            bin,
            task_types,
            next: std::cell::Cell::new(0),
        })
    }

    /// A new, empty database migrated by the bench's binary; the caller drops it with
    /// [`Bench::drop_db`].
    pub async fn fresh_db(&self) -> anyhow::Result<(String, String)> {
        self.fresh_db_for(&self.bin).await
    }

    /// A new, empty database migrated by `bin`: a binary of another commit runs on the
    /// schema it ships, whose functions (the batch settle, the claims of the outbox) are
    /// part of what it measures; this build's own library migrates for its binary.
    pub async fn fresh_db_for(&self, bin: &Path) -> anyhow::Result<(String, String)> {
        let n = self.next.get();
        self.next.set(n + 1);
        let name = format!("tasklane_bench_{}_{n}", std::process::id());
        let admin = connect(self.server.url()).await?;
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
        let url = devdb::url_with_database(self.server.url(), &name);
        if bin == Path::new(env!("CARGO_BIN_EXE_tasklane")) {
            tasklane::store::migrate::run(&url).await?;
        } else {
            let output = tokio::process::Command::new(bin)
                .args(["migrate", "--database-url", &url])
                .output()
                .await
                .with_context(|| format!("run {}", bin.display()))?;
            anyhow::ensure!(
                output.status.success(),
                "{} migrate: {}",
                bin.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        // What-if experiments only (never for published figures): e.g. drop an index to
        // see what it costs.
        if let Ok(sql) = std::env::var("BENCH_EXPERIMENT_SQL") {
            connect(&url).await?.batch_execute(&sql).await?;
        }
        Ok((name, url))
    }

    pub async fn drop_db(&self, name: &str) -> anyhow::Result<()> {
        devdb::drop_database(self.server.url(), name).await
    }

    pub fn fleet(&self, url: &str, replicas: usize, serve_args: &[String]) -> FleetSpec {
        FleetSpec {
            bin: self.bin.clone(),
            database_url: url.to_owned(),
            task_types: self.task_types.clone(),
            replicas,
            serve_args: serve_args.to_vec(),
            http_base_port: None,
            roles: None,
        }
    }

    /// `SHOW`s of the server settings that matter for these figures, after a label that
    /// says whether the server is durable (the headline figures must be).
    pub async fn settings(&self) -> anyhow::Result<String> {
        settings(self.server.url()).await
    }

    pub async fn stop(self) {
        let _ = std::fs::remove_file(&self.task_types);
        self.server.stop().await;
    }
}

/// [`Bench::settings`] of the server at `url`.
pub async fn settings(url: &str) -> anyhow::Result<String> {
    let client = connect(url).await?;
    let mut on = 0;
    for name in ["fsync", "synchronous_commit", "full_page_writes"] {
        let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
        on += usize::from(row.get::<_, String>(0) == "on");
    }
    let mut out = vec![if on == 3 {
        "DURABLE".to_owned()
    } else {
        "DURABILITY OFF (a study, not a headline figure)".to_owned()
    }];
    for name in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "shared_buffers",
        "max_connections",
    ] {
        let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
        out.push(format!("{name}={}", row.get::<_, String>(0)));
    }
    for (name, value) in extra_settings() {
        out.push(format!("{name}={value} (BENCH_PG_SETTINGS)"));
    }
    Ok(out.join(" "))
}

/// `bin token create` for `app` with the comma-separated `perms`: the secret, alone on
/// the command's last line.
pub fn create_token(bin: &Path, url: &str, app: &str, perms: &str) -> anyhow::Result<String> {
    let output = std::process::Command::new(bin)
        .args(["token", "create", "--app", app, "--perm", perms])
        .args(["--database-url", url])
        .output()
        .with_context(|| format!("run {}", bin.display()))?;
    anyhow::ensure!(
        output.status.success(),
        "token create: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned())
}

/// The `/metrics` pages of a fleet's replicas, fetched once for several sums.
pub struct Scrape(Vec<String>);

impl Scrape {
    /// `GET {base}/metrics` of every replica in `bases`.
    pub async fn fetch(http: &reqwest::Client, bases: &[String]) -> anyhow::Result<Scrape> {
        let mut pages = Vec::with_capacity(bases.len());
        for base in bases {
            let page = http
                .get(format!("{base}/metrics"))
                .send()
                .await?
                .error_for_status()?
                .text()
                .await?;
            pages.push(page);
        }
        Ok(Scrape(pages))
    }

    /// The sum over the replicas of the series of `name` whose labels (`{...}`, or ""
    /// for none) pass `keep`.
    pub fn sum(&self, name: &str, keep: impl Fn(&str) -> bool) -> f64 {
        let mut sum = 0.0;
        for line in self.0.iter().flat_map(|page| page.lines()) {
            let Some(rest) = line.strip_prefix(name) else {
                continue;
            };
            let labels = match rest.as_bytes().first() {
                Some(b'{') => &rest[..rest.find('}').map_or(rest.len(), |i| i + 1)],
                Some(b' ') => "",
                _ => continue,
            };
            if keep(labels) {
                sum += line
                    .rsplit(' ')
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0);
            }
        }
        sum
    }
}

/// A plain connection with its driver spawned.
pub async fn connect(url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connect")?;
    tokio::spawn(connection);
    Ok(client)
}

/// Whether the private cluster keeps PostgreSQL's durability defaults: yes unless
/// `BENCH_DURABILITY=off`.
pub fn durable() -> bool {
    std::env::var("BENCH_DURABILITY").as_deref() != Ok("off")
}

/// Server settings for studies (`BENCH_PG_SETTINGS`, whitespace separated `name=value`
/// pairs, e.g. `shared_preload_libraries=pg_stat_statements`), added to the private
/// cluster's command line. Durability is `BENCH_DURABILITY`'s alone: these never turn it
/// off, and a result names any setting it ran with (the `postgres:` line).
pub fn extra_settings() -> Vec<(String, String)> {
    std::env::var("BENCH_PG_SETTINGS")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| !["fsync", "synchronous_commit", "full_page_writes"].contains(name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// How many times each figure is measured (`BENCH_RUNS`, default 3).
pub fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Flags every benchmark replica is started with (`BENCH_SERVE_ARGS`, whitespace
/// separated), after the defaults of `tasklane serve`.
pub fn serve_args() -> Vec<String> {
    let args = std::env::var("BENCH_SERVE_ARGS").unwrap_or_else(|_| DEFAULT_SERVE_ARGS.into());
    args.split_whitespace().map(str::to_owned).collect()
}

/// The benchmark replica: as shipped, except sized for a backlog of instant tasks. The
/// shipped 16 slots suit long inference calls; with no-op tasks they cap a replica at
/// one claim round trip per 16 tasks. Two claim loops keep a claim in flight while the
/// other's batch runs and settles.
pub const DEFAULT_SERVE_ARGS: &str = "--claimers 2 --concurrency 512 --claim-batch 100";

/// A port p such that p..p+n are free now (a fleet's `http_base_port`: replica k
/// listens on p+k).
pub fn free_ports(n: usize) -> anyhow::Result<u16> {
    for _ in 0..100 {
        let first = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let free = (1..n).all(|k| {
            let port = first.checked_add(k as u16);
            port.is_some_and(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        });
        if free {
            return Ok(first);
        }
    }
    anyhow::bail!("no {n} consecutive free ports")
}

/// One line describing the machine and its load, for the results.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().next().map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0);
    format!(
        "{cores} cores ({cpu}), {:.1} GiB RAM, load average {}",
        mem as f64 / 1024.0 / 1024.0,
        load_average()
    )
}

/// The 1, 5 and 15-minute load averages, as `uptime` shows them: on a shared box, said
/// beside each figure.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `value` as pretty JSON to `target/bench-results/<name>.json` and says where.
pub fn write_json(name: &str, value: &serde_json::Value) -> anyhow::Result<()> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(value)?)?;
    println!("json: {}", path.display());
    Ok(())
}
