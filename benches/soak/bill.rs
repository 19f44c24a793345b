//! The soak's bill: where PostgreSQL's time went over the measured stretch (from the
//! end of the warm-up to the end of submitting), by statement and by maintenance.
//!
//! - By statement: `pg_stat_statements` of the run's database (the soak loads it into
//!   its private cluster; on a server named by `BENCH_DATABASE_URL` it is used when
//!   loaded there). Each statement is named by its file in `sql/` where its text is
//!   one, else by its first line of SQL. Execution time is time in the executor
//!   (waits on locks and I/O included), so it is shown as a share of all statements'
//!   time beside the calls, not as CPU.
//! - By process: the CPU of the server's processes by kind (client backends,
//!   autovacuum workers, checkpointer, WAL writer, background writer, the rest), read
//!   from `/proc` every second. Children that started and ended between two readings
//!   (short autovacuum workers, mostly) are counted from the CPU the server reaped.
//!
//! A bill covers the stretch between any two [`Reading`]s, so a run can also be billed
//! by phase (before, during and after a held snapshot, say).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often the server's processes are read.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// A statement's counters at one moment.
#[derive(Debug, Clone, Default)]
struct Counted {
    calls: i64,
    exec_ms: f64,
    rows: i64,
    /// Shared buffers hit or read: the pages a statement fetched.
    blocks: i64,
    query: String,
}

/// One statement's line of the bill.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StatementLine {
    pub name: String,
    /// `statement`, or the maintenance it belongs to.
    pub kind: &'static str,
    pub calls_per_task: f64,
    pub rows_per_call: f64,
    pub blocks_per_call: f64,
    pub exec_share: f64,
    pub exec_ms_per_task: f64,
}

/// The whole bill of the stretch.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Bill {
    pub tasks: f64,
    pub seconds: f64,
    /// CPU seconds by process kind over the stretch.
    pub cpu_by_process: BTreeMap<String, f64>,
    pub statements: Vec<StatementLine>,
    /// Pages fetched a task by table (heap and TOAST, indexes), most first.
    pub pages_by_table: Vec<(String, f64, f64)>,
    /// Why there is no statement table, when there is none.
    pub statements_missing: Option<String>,
}

/// What the meter read at one moment: the statements' counters by query id, CPU
/// seconds by process kind, the tasks completed, and when.
pub struct Reading {
    statements: HashMap<i64, Counted>,
    cpu: BTreeMap<String, f64>,
    /// Pages fetched (hit or read) by table: heap and TOAST, and indexes.
    pages: BTreeMap<String, (i64, i64)>,
    completed: f64,
    at: std::time::Instant,
}

/// The running bill: the sampler of the server's processes and the statement counters
/// at the stretch's start.
pub struct Meter {
    admin: tokio_postgres::Client,
    /// A connection to the run's database, for its tables' counters.
    run: tokio_postgres::Client,
    database: String,
    processes: Arc<Mutex<Processes>>,
    stop: CancellationToken,
    start: Option<Reading>,
    statements_missing: Option<String>,
    /// The SQL files statements are named by, read once.
    files: Vec<(String, String)>,
}

impl Meter {
    /// Starts reading the processes of the server `backend` (any of its backends' pid)
    /// belongs to; `admin_url` is the server's maintenance database, `database` the run's
    /// and `run_url` its URL.
    pub async fn start(
        admin_url: &str,
        database: &str,
        run_url: &str,
        backend: i32,
    ) -> anyhow::Result<Meter> {
        let admin = crate::common::connect(admin_url).await?;
        let run = crate::common::connect(run_url).await?;
        let statements_missing = admin
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await
            .err()
            .map(|e| format!("pg_stat_statements unavailable: {e}"));
        let processes = Arc::new(Mutex::new(Processes::new(postmaster_of(backend))));
        let stop = CancellationToken::new();
        let (shared, until) = (processes.clone(), stop.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => shared.lock().unwrap().read(),
                    _ = until.cancelled() => return,
                }
            }
        });
        Ok(Meter {
            admin,
            run,
            database: database.to_owned(),
            processes,
            stop,
            start: None,
            statements_missing,
            files: sql_files(),
        })
    }

    /// Starts the stretch now; `completed` is the count of tasks finished so far.
    pub async fn mark(&mut self, completed: f64) -> anyhow::Result<()> {
        self.start = Some(self.read(completed).await);
        Ok(())
    }

    /// Ends the stretch now, `completed` tasks finished so far; the bill since
    /// [`Meter::mark`].
    pub async fn close(&mut self, completed: f64) -> anyhow::Result<Bill> {
        let end = self.read(completed).await;
        self.stop.cancel();
        let Some(start) = self.start.take() else {
            anyhow::bail!("the bill was closed before its stretch began");
        };
        Ok(self.between(&start, &end))
    }

    /// The counters now, `completed` tasks finished so far.
    pub async fn read(&mut self, completed: f64) -> Reading {
        let statements = self.statements().await;
        let cpu = self.processes.lock().unwrap().read_totals();
        let pages = self.pages().await;
        Reading {
            statements,
            cpu,
            pages,
            completed,
            at: std::time::Instant::now(),
        }
    }

    /// The bill of the stretch from `start` to `end`.
    pub fn between(&self, start: &Reading, end: &Reading) -> Bill {
        let tasks = (end.completed - start.completed).max(1.0);
        let cpu_by_process = end
            .cpu
            .iter()
            .map(|(k, v)| (k.clone(), v - start.cpu.get(k).copied().unwrap_or(0.0)))
            .collect();
        let mut pages_by_table: Vec<(String, f64, f64)> = end
            .pages
            .iter()
            .map(|(table, (heap, index))| {
                let (heap_was, index_was) = start.pages.get(table).copied().unwrap_or_default();
                (
                    table.clone(),
                    (heap - heap_was) as f64 / tasks,
                    (index - index_was) as f64 / tasks,
                )
            })
            .collect();
        pages_by_table.sort_by(|a, b| (b.1 + b.2).total_cmp(&(a.1 + a.2)));
        Bill {
            tasks,
            seconds: end.at.duration_since(start.at).as_secs_f64(),
            cpu_by_process,
            pages_by_table,
            statements: lines(&start.statements, &end.statements, tasks, &self.files),
            statements_missing: self.statements_missing.clone(),
        }
    }

    /// Pages fetched so far by each of tasklane's tables (empty if unreadable).
    async fn pages(&self) -> BTreeMap<String, (i64, i64)> {
        let rows = self
            .run
            .query(
                "SELECT relname::text, \
                 (coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0) \
                  + coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0))::int8, \
                 (coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0))::int8 \
                 FROM pg_statio_user_tables WHERE schemaname = 'tasklane'",
                &[],
            )
            .await
            .unwrap_or_default();
        rows.iter()
            .map(|r| (r.get::<_, String>(0), (r.get(1), r.get(2))))
            .collect()
    }

    /// The run's statements' counters by query id (empty without pg_stat_statements).
    async fn statements(&mut self) -> HashMap<i64, Counted> {
        if self.statements_missing.is_some() {
            return HashMap::new();
        }
        let rows = self
            .admin
            .query(
                "SELECT s.queryid, sum(s.calls)::bigint, sum(s.total_exec_time), \
                 sum(s.rows)::bigint, min(s.query), \
                 sum(s.shared_blks_hit + s.shared_blks_read)::bigint \
                 FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
                 WHERE d.datname = $1 GROUP BY s.queryid",
                &[&self.database],
            )
            .await;
        match rows {
            Ok(rows) => rows
                .iter()
                .map(|r| {
                    let counted = Counted {
                        calls: r.get(1),
                        exec_ms: r.get(2),
                        rows: r.get(3),
                        query: r.get(4),
                        blocks: r.get(5),
                    };
                    (r.get::<_, i64>(0), counted)
                })
                .collect(),
            Err(error) => {
                self.statements_missing = Some(format!("read pg_stat_statements: {error}"));
                HashMap::new()
            }
        }
    }
}

/// The statement lines, most execution time first.
fn lines(
    before: &HashMap<i64, Counted>,
    after: &HashMap<i64, Counted>,
    tasks: f64,
    files: &[(String, String)],
) -> Vec<StatementLine> {
    let deltas: Vec<(Counted, &str)> = after
        .iter()
        .filter_map(|(id, now)| {
            let was = before.get(id).cloned().unwrap_or_default();
            let calls = now.calls - was.calls;
            (calls > 0).then(|| {
                let delta = Counted {
                    calls,
                    exec_ms: now.exec_ms - was.exec_ms,
                    rows: now.rows - was.rows,
                    blocks: now.blocks - was.blocks,
                    query: String::new(),
                };
                (delta, now.query.as_str())
            })
        })
        .collect();
    let total: f64 = deltas.iter().map(|(d, _)| d.exec_ms).sum::<f64>().max(1e-9);
    let mut by_name: BTreeMap<String, (Counted, &'static str)> = BTreeMap::new();
    for (delta, query) in deltas {
        let (name, kind) = name_of(query, files);
        let entry = by_name.entry(name).or_insert((Counted::default(), kind));
        entry.0.calls += delta.calls;
        entry.0.exec_ms += delta.exec_ms;
        entry.0.rows += delta.rows;
        entry.0.blocks += delta.blocks;
    }
    let mut lines: Vec<StatementLine> = by_name
        .into_iter()
        .map(|(name, (c, kind))| StatementLine {
            name,
            kind,
            calls_per_task: c.calls as f64 / tasks,
            rows_per_call: c.rows as f64 / c.calls.max(1) as f64,
            blocks_per_call: c.blocks as f64 / c.calls.max(1) as f64,
            exec_share: c.exec_ms / total,
            exec_ms_per_task: c.exec_ms / tasks,
        })
        .collect();
    lines.sort_by(|a, b| b.exec_share.total_cmp(&a.exec_share));
    lines
}

/// The SQL files of `sql/` (and the claim variants build.rs renders), each as (name,
/// text without its comment lines).
fn sql_files() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        root.join("sql"),
        root.join("sql/api"),
        root.join("sql/functions"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "sql") {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let name = path.file_stem().unwrap_or_default().to_string_lossy();
                    files.push((name.into_owned(), code_of(&text)));
                }
            }
        }
    }
    files
}

/// The text without comment lines, whitespace collapsed.
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A statement's name (its SQL file, or its first words) and kind.
fn name_of(query: &str, files: &[(String, String)]) -> (String, &'static str) {
    let code = code_of(query);
    let name = files
        .iter()
        .find(|(_, text)| !text.is_empty() && *text == code)
        .map(|(name, _)| format!("{name}.sql"))
        .or_else(|| {
            query
                .contains("transition: Claim")
                .then(|| "claim (rendered)".into())
        })
        .unwrap_or_else(|| code.chars().take(70).collect());
    let kind = maintenance_of(&name, &code);
    (name, kind)
}

/// Which maintenance a statement is part of, or `statement`.
fn maintenance_of(name: &str, code: &str) -> &'static str {
    let upper = code.to_ascii_uppercase();
    if upper.starts_with("VACUUM") || name.starts_with("vacuum_") {
        "tasklane's vacuums"
    } else if upper.starts_with("ANALYZE") || name.starts_with("stats_") {
        "statistics keeper"
    } else if name.contains("prune") || name.starts_with("lifecycle_delete") {
        "pruning"
    } else {
        "statement"
    }
}

/// The postmaster of the server `backend` belongs to.
fn postmaster_of(backend: i32) -> u32 {
    stat(backend as u32).map_or(0, |s| s.parent)
}

struct Stat {
    parent: u32,
    /// Own CPU seconds.
    own: f64,
    /// CPU seconds of reaped children.
    reaped: f64,
}

/// `/proc/<pid>/stat`'s parent and CPU times (clock ticks, 100 a second).
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text.get(text.rfind(')')? + 2..)?.split(' ').collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Some(Stat {
        parent: fields.get(1)?.parse().ok()?,
        own: (tick(11) + tick(12)) / 100.0,
        reaped: (tick(13) + tick(14)) / 100.0,
    })
}

/// The kind of a server process, from its title.
fn kind_of(pid: u32) -> String {
    let title = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let title = title.trim_end_matches('\0').replace('\0', " ");
    for kind in [
        "autovacuum worker",
        "autovacuum launcher",
        "checkpointer",
        "walwriter",
        "background writer",
    ] {
        if title.contains(kind) {
            return kind.to_owned();
        }
    }
    "client backends".to_owned()
}

/// The server's processes as last read.
struct Processes {
    postmaster: u32,
    /// Live children: kind and CPU seconds at the last reading.
    live: HashMap<u32, (String, f64)>,
    /// CPU seconds each kind used since the first reading.
    used: BTreeMap<String, f64>,
    /// The last readings of children that have ended since the first reading, and
    /// what the children alive then had used before it.
    ended_seen: f64,
    reaped_at_first: f64,
    reaped: f64,
    first: bool,
}

impl Processes {
    fn new(postmaster: u32) -> Processes {
        let mut processes = Processes {
            postmaster,
            live: HashMap::new(),
            used: BTreeMap::new(),
            ended_seen: 0.0,
            reaped_at_first: 0.0,
            reaped: 0.0,
            first: true,
        };
        processes.read();
        processes
    }

    /// Reads every child of the postmaster.
    fn read(&mut self) {
        let Some(own) = stat(self.postmaster) else {
            return;
        };
        let mut now = HashMap::new();
        let pids = std::fs::read_dir("/proc").into_iter().flatten().flatten();
        for pid in pids.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()) {
            let Some(s) = stat(pid).filter(|s| s.parent == self.postmaster) else {
                continue;
            };
            let (kind, before) = match self.live.get(&pid) {
                Some((kind, before)) => (kind.clone(), *before),
                // A child seen first now: all of its time is in the stretch, unless
                // this is the first reading (then it is the baseline).
                None => (kind_of(pid), if self.first { s.own } else { 0.0 }),
            };
            *self.used.entry(kind.clone()).or_default() += s.own - before;
            now.insert(pid, (kind, s.own));
        }
        for (pid, (_, seen)) in &self.live {
            if !now.contains_key(pid) {
                self.ended_seen += seen;
            }
        }
        if self.first {
            self.reaped_at_first = own.reaped;
            self.first = false;
        }
        self.reaped = own.reaped;
        self.live = now;
    }

    /// CPU seconds by kind since the first reading, including the reaped children's
    /// time that no reading saw.
    fn read_totals(&mut self) -> BTreeMap<String, f64> {
        self.read();
        let mut totals = self.used.clone();
        let unseen = (self.reaped - self.reaped_at_first - self.ended_seen).max(0.0);
        totals.insert("children between readings".into(), unseen);
        totals
    }
}
