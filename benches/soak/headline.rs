//! The soak's headline: what a task cost over the stretch after the warm-up, per task,
//! and the bill of where PostgreSQL's time went.

use std::fmt::Write as _;

use super::bill::Bill;
use super::record::Window;
use super::Plan;

/// The printed headline and its figures for the JSON.
pub struct Headline {
    pub text: String,
    pub figures: serde_json::Value,
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// The figures of the windows after the warm-up, weighted by their completions where
/// they are per task, and the bill.
pub fn headline(plan: &Plan, windows: &[Window], bill: &Bill) -> anyhow::Result<Headline> {
    let warm = (plan.warmup_minutes * 60.0 / crate::EVERY.as_secs_f64()).round() as usize;
    let measured: Vec<&Window> = windows.iter().skip(warm).collect();
    let done: f64 = measured.iter().map(|w| w.completed_per_second).sum::<f64>();
    let weighted = |f: fn(&Window) -> f64| {
        measured
            .iter()
            .map(|w| f(w) * w.completed_per_second)
            .sum::<f64>()
            / done.max(1e-9)
    };
    let plain = |f: fn(&Window) -> f64| mean(measured.iter().map(|w| f(w)));
    let some = |f: fn(&Window) -> Option<f64>| mean(measured.iter().filter_map(|w| f(w)));
    let per_retained = mean(
        measured
            .iter()
            .filter(|w| w.retained_tasks > 0)
            .map(|w| w.total_bytes as f64 / w.retained_tasks as f64),
    );
    let figures = serde_json::json!({
        "minutes_measured": measured.len() as f64 * crate::EVERY.as_secs_f64() / 60.0,
        "offered_per_second": plan.rate,
        "completed_per_second": plain(|w| w.completed_per_second),
        "submitted_per_second": plain(|w| w.submitted_per_second),
        "postgres_cpu_ms_per_task": weighted(|w| w.postgres_cpu_ms_per_task),
        "postgres_cores": plain(|w| w.postgres_cores),
        "wal_bytes_per_task": weighted(|w| w.wal_bytes_per_task),
        "commits_per_task": weighted(|w| w.commits_per_task),
        "bytes_per_retained_task": per_retained,
        "submit_p50_ms": plain(|w| w.submit_p50_ms),
        "submit_p99_ms": plain(|w| w.submit_p99_ms),
        "pickup_p50_ms": some(|w| w.pickup_p50_ms),
        "pickup_p99_ms": some(|w| w.pickup_p99_ms),
    });
    let f = |name: &str| figures[name].as_f64().unwrap_or(f64::NAN);
    let mut out = String::new();
    writeln!(
        out,
        "per task, the {:.1} minutes after the warm-up (means of 30-s windows; pickup on the database's clock, created to first claim):",
        f("minutes_measured")
    )?;
    writeln!(out)?;
    writeln!(out, "| offered/s | done/s | PostgreSQL CPU ms/task (cores) | WAL B/task | commits/task | table+index B per retained task | submit p50 / p99 ms | pickup p50 / p99 ms |")?;
    writeln!(out, "|---|---|---|---|---|---|---|---|")?;
    writeln!(
        out,
        "| {:.0} | {:.0} | {:.3} ({:.2}) | {:.0} | {:.2} | {:.0} | {:.1} / {:.1} | {:.1} / {:.1} |",
        f("offered_per_second"),
        f("completed_per_second"),
        f("postgres_cpu_ms_per_task"),
        f("postgres_cores"),
        f("wal_bytes_per_task"),
        f("commits_per_task"),
        f("bytes_per_retained_task"),
        f("submit_p50_ms"),
        f("submit_p99_ms"),
        f("pickup_p50_ms"),
        f("pickup_p99_ms"),
    )?;
    writeln!(out)?;
    bill_text(&mut out, bill, 25)?;
    Ok(Headline { text: out, figures })
}

/// The bill: PostgreSQL CPU by process, then execution time by statement (the first
/// `statements` of them).
pub fn bill_text(out: &mut String, bill: &Bill, statements: usize) -> anyhow::Result<()> {
    let cpu: f64 = bill.cpu_by_process.values().sum();
    writeln!(
        out,
        "PostgreSQL CPU by process over {:.0} s, {:.0} tasks ({:.3} ms a task in all):",
        bill.seconds,
        bill.tasks,
        cpu * 1000.0 / bill.tasks
    )?;
    writeln!(out)?;
    writeln!(out, "| process | ms/task | share |")?;
    writeln!(out, "|---|---|---|")?;
    let mut kinds: Vec<_> = bill.cpu_by_process.iter().collect();
    kinds.sort_by(|a, b| b.1.total_cmp(a.1));
    for (kind, seconds) in kinds {
        writeln!(
            out,
            "| {kind} | {:.3} | {:.1}% |",
            seconds * 1000.0 / bill.tasks,
            100.0 * seconds / cpu.max(1e-9)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "pages fetched (hit or read) by table, a task:")?;
    writeln!(out)?;
    writeln!(out, "| table | heap and TOAST | indexes |")?;
    writeln!(out, "|---|---|---|")?;
    for (table, heap, index) in bill.pages_by_table.iter().take(statements) {
        writeln!(out, "| {table} | {heap:.1} | {index:.1} |")?;
    }
    writeln!(out)?;
    if let Some(why) = &bill.statements_missing {
        writeln!(out, "no statement bill: {why}")?;
        return Ok(());
    }
    writeln!(
        out,
        "statements by execution time (pg_stat_statements; time in the executor, waits included; the client backends' CPU above is what they share):"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| statement | kind | share of time | ms/task | calls/task | rows/call | pages/call |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    for line in bill.statements.iter().take(statements) {
        writeln!(
            out,
            "| {} | {} | {:.1}% | {:.4} | {:.3} | {:.1} | {:.1} |",
            line.name.replace('|', "\\|"),
            line.kind,
            100.0 * line.exec_share,
            line.exec_ms_per_task,
            line.calls_per_task,
            line.rows_per_call,
            line.blocks_per_call,
        )?;
    }
    let mut by_kind = std::collections::BTreeMap::<&str, (f64, f64)>::new();
    for line in &bill.statements {
        let entry = by_kind.entry(line.kind).or_default();
        entry.0 += line.exec_share;
        entry.1 += line.calls_per_task;
    }
    writeln!(out)?;
    writeln!(out, "| kind | share of time | calls/task |")?;
    writeln!(out, "|---|---|---|")?;
    for (kind, (share, calls)) in by_kind {
        writeln!(out, "| {kind} | {:.1}% | {calls:.3} |", 100.0 * share)?;
    }
    Ok(())
}
