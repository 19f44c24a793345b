//! The soak's curves, drawn as PNG.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tasklane::load::store::Relation;

use super::record::Window;
use crate::common::plot::{self, Chart, Series};

/// Draws the soak's curves; returns the files written.
pub fn plot(dir: &Path, windows: &[Window]) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let x = |w: &Window| w.end_minutes;
    let curve = |name: &str, f: &dyn Fn(&Window) -> Option<f64>| {
        Series::new(
            name,
            windows.iter().filter_map(|w| Some((x(w), f(w)?))).collect(),
        )
    };
    let mut chart = |file: &str,
                     title: &str,
                     y: &str,
                     log_y: bool,
                     series: Vec<Series>|
     -> anyhow::Result<()> {
        let path = dir.join(file);
        plot::lines(
            &path,
            &Chart {
                title,
                x_label: "minutes",
                y_label: y,
                log_y,
            },
            &series,
        )?;
        written.push(path);
        Ok(())
    };
    chart(
        "soak-throughput.png",
        "Tasks a second, every 30 s",
        "tasks/s",
        false,
        vec![
            curve("completed", &|w| Some(w.completed_per_second)),
            curve("submitted", &|w| Some(w.submitted_per_second)),
            curve("notified", &|w| Some(w.notified_per_second)),
            curve("released", &|w| Some(w.released_per_second)),
            curve("pruned", &|w| Some(w.pruned_per_second)),
        ],
    )?;
    chart(
        "soak-latency.png",
        "Pickup (commit to claim) and submit latency",
        "ms (log)",
        true,
        vec![
            curve("pickup p50", &|w| w.pickup_p50_ms),
            curve("pickup p99", &|w| w.pickup_p99_ms),
            curve("submit p50", &|w| Some(w.submit_p50_ms)),
            curve("submit p99", &|w| Some(w.submit_p99_ms)),
        ],
    )?;
    chart(
        "soak-cpu.png",
        "PostgreSQL CPU a completed task (whole server), and commits a task",
        "ms of CPU / commits",
        false,
        vec![
            curve("PostgreSQL ms/task", &|w| Some(w.postgres_cpu_ms_per_task)),
            curve("commits/task", &|w| Some(w.commits_per_task)),
            curve("PostgreSQL cores", &|w| Some(w.postgres_cores)),
            curve("replica cores (both)", &|w| Some(w.replica_cores)),
        ],
    )?;
    let names = busiest(windows);
    let per_table = |f: fn(&Relation) -> f64| -> Vec<Series> {
        names
            .iter()
            .map(|name| {
                curve(name, &|w| {
                    w.relations.iter().find(|r| &r.name == name).map(f)
                })
            })
            .collect()
    };
    let mut sizes = per_table(|r| r.total_bytes() as f64 / 1048576.0);
    sizes.push(curve("all tables", &|w| {
        Some(w.total_bytes as f64 / 1048576.0)
    }));
    chart(
        "soak-sizes.png",
        "Heap + indexes + TOAST of each table",
        "MiB",
        false,
        sizes,
    )?;
    chart(
        "soak-indexes.png",
        "Indexes of each table",
        "MiB",
        false,
        per_table(|r| r.index_bytes as f64 / 1048576.0),
    )?;
    chart(
        "soak-dead-tuples.png",
        "Dead tuples of each table (as the statistics last counted)",
        "dead tuples",
        false,
        per_table(|r| r.dead_tuples as f64),
    )?;
    chart(
        "soak-autovacuum.png",
        "Autovacuum runs of each table since the start",
        "runs",
        false,
        per_table(|r| r.autovacuums as f64),
    )?;
    chart(
        "soak-vacuum.png",
        "tasklane's own vacuums of each table since the start",
        "runs",
        false,
        per_table(|r| r.vacuums as f64),
    )?;
    Ok(written)
}

/// The tables that were ever the largest, at most 6, and the queue's mirror (small, and
/// the one whose dead rows every claim walks).
fn busiest(windows: &[Window]) -> Vec<String> {
    let mut peak: BTreeMap<String, i64> = BTreeMap::new();
    for r in windows.iter().flat_map(|w| &w.relations) {
        let e = peak.entry(r.name.clone()).or_default();
        *e = (*e).max(r.total_bytes());
    }
    let mut names: Vec<(String, i64)> = peak.into_iter().collect();
    names.sort_by_key(|(_, bytes)| -bytes);
    let mut names: Vec<String> = names.into_iter().take(6).map(|(n, _)| n).collect();
    if !names.iter().any(|n| n == "task_queue") {
        names.push("task_queue".to_owned());
    }
    names
}
