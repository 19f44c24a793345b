//! The soak's summary: the tables printed for RESULTS, and the comparison of the last 5
//! minutes with the first 5 after the warm-up.

use std::collections::BTreeMap;

use super::record::{Tail, Window};
use super::Plan;

/// The comparison of the run's two ends and the tables printed for RESULTS.
pub struct Outcome {
    pub text: String,
    pub goals: serde_json::Value,
}

/// Windows ending in (from, to] minutes, each placed at its nominal end (the n-th at n
/// times the recording interval): a window recorded a little late still counts in
/// its stretch.
fn between(windows: &[Window], from: f64, to: f64) -> Vec<&Window> {
    windows
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let end = nominal_end(*i);
            end > from + 1e-6 && end <= to + 1e-6
        })
        .map(|(_, w)| w)
        .collect()
}

/// Where the `i`-th window ends, in minutes.
fn nominal_end(i: usize) -> f64 {
    (i + 1) as f64 * crate::EVERY.as_secs_f64() / 60.0
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// The figures compared between the two ends, each a mean over the stretch's windows.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Stretch {
    completed_per_second: f64,
    pickup_p99_ms: f64,
    postgres_cpu_ms_per_task: f64,
    total_mib: f64,
}

fn stretch(windows: &[&Window]) -> Stretch {
    Stretch {
        completed_per_second: mean(windows.iter().map(|w| w.completed_per_second)),
        pickup_p99_ms: mean(windows.iter().filter_map(|w| w.pickup_p99_ms)),
        postgres_cpu_ms_per_task: mean(windows.iter().map(|w| w.postgres_cpu_ms_per_task)),
        total_mib: mean(windows.iter().map(|w| w.total_bytes as f64 / 1048576.0)),
    }
}

pub fn summarize(
    plan: &Plan,
    windows: &[Window],
    submitted: u64,
    errors: &BTreeMap<String, u64>,
    tail: &Tail,
) -> anyhow::Result<Outcome> {
    let end = windows.len().checked_sub(1).map_or(0.0, nominal_end);
    let first = stretch(&between(
        windows,
        plan.warmup_minutes,
        plan.warmup_minutes + 5.0,
    ));
    let last = stretch(&between(windows, end - 5.0, end));
    let mut out = String::new();
    use std::fmt::Write as _;
    writeln!(
        out,
        "accepted {submitted} submits; refused {errors:?}; releases that found no task {}",
        tail.release_misses
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| minutes | completions/s | submits/s | pickup p50 / p99 ms (worst p99) | submit p99 ms | PostgreSQL ms/task (cores) | replica cores | WAL B/task | commits/task | unfinished max | pruned/s | tables MiB at end | dead tuples at end | autovacuums |"
    )?;
    writeln!(out, "|{}", "---|".repeat(14))?;
    let mut from = 0.0;
    while from < end - 1e-6 {
        let part = between(windows, from, from + 5.0);
        let m = |f: fn(&Window) -> f64| mean(part.iter().map(|w| f(w)));
        let p = |f: fn(&Window) -> Option<f64>| mean(part.iter().filter_map(|w| f(w)));
        let worst = part
            .iter()
            .filter_map(|w| w.pickup_p99_ms)
            .fold(f64::NAN, f64::max);
        let last_window = part.last().copied().cloned().unwrap_or_default();
        writeln!(
            out,
            "| {:.0}–{:.0} | {:.0} | {:.0} | {:.1} / {:.1} ({:.1}) | {:.1} | {:.3} ({:.2}) | {:.2} | {:.0} | {:.3} | {} | {:.0} | {:.1} | {} | {} |",
            from,
            (from + 5.0).min(end),
            m(|w| w.completed_per_second),
            m(|w| w.submitted_per_second),
            p(|w| w.pickup_p50_ms),
            p(|w| w.pickup_p99_ms),
            worst,
            m(|w| w.submit_p99_ms),
            m(|w| w.postgres_cpu_ms_per_task),
            m(|w| w.postgres_cores),
            m(|w| w.replica_cores),
            m(|w| w.wal_bytes_per_task),
            m(|w| w.commits_per_task),
            part.iter().map(|w| w.unfinished).max().unwrap_or(0),
            m(|w| w.pruned_per_second),
            last_window.total_bytes as f64 / 1048576.0,
            last_window.dead_tuples,
            part.iter().map(|w| w.autovacuums).sum::<i64>(),
        )?;
        from += 5.0;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| table | heap / indexes / TOAST MiB, end of warm-up | the same, end of run | dead tuples at the end | autovacuums / tasklane's vacuums in the run |"
    )?;
    writeln!(out, "|---|---|---|---|---|")?;
    let at_warmup = between(windows, 0.0, plan.warmup_minutes)
        .last()
        .map(|w| w.relations.clone())
        .unwrap_or_default();
    let at_end = windows
        .last()
        .map(|w| w.relations.clone())
        .unwrap_or_default();
    let mib = |b: i64| b as f64 / 1048576.0;
    for r in &at_end {
        let before = at_warmup
            .iter()
            .find(|b| b.name == r.name)
            .cloned()
            .unwrap_or_default();
        if r.total_bytes() < 64 * 1024 && before.total_bytes() < 64 * 1024 {
            continue;
        }
        writeln!(
            out,
            "| {} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} / {:.2} | {} | {} / {} |",
            r.name,
            mib(before.heap_bytes),
            mib(before.index_bytes),
            mib(before.toast_bytes),
            mib(r.heap_bytes),
            mib(r.index_bytes),
            mib(r.toast_bytes),
            r.dead_tuples,
            r.autovacuums,
            r.vacuums,
        )?;
    }
    let ratio = |a: f64, b: f64| a / b;
    let within = |r: f64| (0.9..=1.1).contains(&r);
    let met = |ok: bool| if ok { "met" } else { "missed" };
    let throughput = ratio(last.completed_per_second, first.completed_per_second);
    let pickup = ratio(last.pickup_p99_ms, first.pickup_p99_ms);
    let cpu = ratio(
        last.postgres_cpu_ms_per_task,
        first.postgres_cpu_ms_per_task,
    );
    let size = ratio(last.total_mib, first.total_mib);
    writeln!(out)?;
    writeln!(
        out,
        "last 5 minutes ÷ first 5 after the {:.0}-minute warm-up: completions/s {throughput:.3} ({}), pickup p99 {pickup:.3} ({}), PostgreSQL CPU a task {cpu:.3} ({}), tables and indexes {size:.3} ({})",
        plan.warmup_minutes,
        met(within(throughput)),
        met(pickup <= 1.1),
        met(cpu <= 1.1),
        met(size <= 1.1),
    )?;
    Ok(Outcome {
        text: out,
        goals: serde_json::json!({
            "first": first, "last": last,
            "completions_ratio": throughput, "pickup_p99_ratio": pickup,
            "postgres_cpu_per_task_ratio": cpu, "size_ratio": size,
        }),
    })
}
