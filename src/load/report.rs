//! What a load run reports, as a table for people and as JSON for tooling.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::fleet::Memory;
use super::stats::Summary;

/// The figures of one `tasklane load` run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    pub task_type: String,
    pub submit_path: String,
    pub clients: usize,
    /// Asked submit rate (0: flat out).
    pub target_rate: f64,
    pub replicas: usize,
    pub submitted: u64,
    pub accepted: u64,
    pub completed: u64,
    pub failed: u64,
    pub submits_per_second: f64,
    pub completed_per_second: f64,
    pub submit_latency: Summary,
    /// Commit of the submit → the attempt's claim (its task.running event).
    pub pickup_latency: Summary,
    /// Commit of the submit → the task's finished_at.
    pub end_to_end_latency: Summary,
    pub errors: BTreeMap<String, u64>,
    /// CPU per accepted task from the first submit until every task finished: the
    /// database's backends (`None` when the database is not on this machine), the
    /// replicas this run started, and this load generator.
    pub postgres_cpu_ms_per_task: Option<f64>,
    pub replica_cpu_ms_per_task: Option<f64>,
    pub load_cpu_ms_per_task: f64,
    /// Per replica started by this run: RSS when idle, peak RSS by the end.
    pub idle_memory: Vec<Memory>,
    pub peak_memory: Vec<Memory>,
    /// Tasks still unfinished when the run gave up waiting.
    pub unfinished: u64,
}

impl Report {
    /// A two-column table.
    pub fn table(&self) -> String {
        let mut rows: Vec<(String, String)> = vec![
            ("task type".into(), self.task_type.clone()),
            (
                "submit path".into(),
                format!("{} ({} clients)", self.submit_path, self.clients),
            ),
            (
                "target rate".into(),
                if self.target_rate > 0.0 {
                    format!("{:.0}/s", self.target_rate)
                } else {
                    "flat out".into()
                },
            ),
            ("replicas started".into(), self.replicas.to_string()),
            (
                "submitted / accepted".into(),
                format!("{} / {}", self.submitted, self.accepted),
            ),
            (
                "completed / failed".into(),
                format!("{} / {}", self.completed, self.failed),
            ),
            (
                "submits/s".into(),
                format!("{:.0}", self.submits_per_second),
            ),
            (
                "completed/s".into(),
                format!("{:.0}", self.completed_per_second),
            ),
            (
                "submit latency p50/p95/p99/max".into(),
                self.submit_latency.cell(),
            ),
            (
                "pickup latency p50/p95/p99/max".into(),
                self.pickup_latency.cell(),
            ),
            (
                "end-to-end p50/p95/p99/max".into(),
                self.end_to_end_latency.cell(),
            ),
        ];
        let ms = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.3} ms"));
        rows.push((
            "CPU per task: postgres / replicas / load".into(),
            format!(
                "{} / {} / {:.3} ms",
                ms(self.postgres_cpu_ms_per_task),
                ms(self.replica_cpu_ms_per_task),
                self.load_cpu_ms_per_task
            ),
        ));
        let errors = if self.errors.is_empty() {
            "none".into()
        } else {
            self.errors
                .iter()
                .map(|(code, n)| format!("{code}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        rows.push(("errors by code".into(), errors));
        for (n, (idle, peak)) in self.idle_memory.iter().zip(&self.peak_memory).enumerate() {
            rows.push((
                format!("replica {n} RSS idle / peak"),
                format!("{:.1} / {:.1} MiB", idle.rss_mib, peak.peak_rss_mib),
            ));
        }
        if self.unfinished > 0 {
            rows.push(("UNFINISHED at timeout".into(), self.unfinished.to_string()));
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (key, value) in rows {
            let _ = writeln!(out, "{key:<width$}  {value}");
        }
        out
    }
}
