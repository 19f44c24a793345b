//! HTTP submit throughput and latency through the load generator: one `tasklane serve`
//! replica (api, worker, maintenance; the submitted noop tasks are worked off as they
//! come) driven over `POST /v1/tasks` by 1, 16 and 64 clients flat out, then by 64
//! clients at a fixed 1,000 submits/s for the p99 at that rate.
//!
//! `cargo bench --bench http_load` (env: `BENCH_RUNS`, `BENCH_SERVE_ARGS`,
//! `BENCH_DATABASE_URL`, `BENCH_ONLY` (e.g. `64` or `64@1000`: only those rows),
//! `BENCH_BASELINE_BIN`: another `tasklane` binary, e.g. of the commit before a change,
//! measured in each round right before this one, on a fresh database of the same
//! server, for a before/after under the same machine load).

mod common;

use tasklane::load::stats::Repeated;
use tasklane::load::LoadConfig;

async fn load(
    bench: &common::Bench,
    bin: &std::path::Path,
    clients: usize,
    tasks: u64,
    rate: f64,
) -> anyhow::Result<tasklane::load::report::Report> {
    let (name, url) = bench.fresh_db_for(bin).await?;
    let token = common::create_token(bin, &url, "load", "submit")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let config = LoadConfig {
        database_url: url,
        replicas: 1,
        bin: Some(bin.to_path_buf()),
        serve_args: common::serve_args(),
        tasks,
        rate,
        clients,
        task_type: "noop".into(),
        sleep_ms: 0,
        submit: "http".into(),
        http_url: Vec::new(),
        http_base_port: port,
        token: Some(token),
        app: "load".into(),
        json: None,
        timeout_seconds: 300,
        no_migrate: true,
    };
    let report = tasklane::load::run(config).await?;
    bench.drop_db(&name).await?;
    anyhow::ensure!(
        report.errors.is_empty(),
        "submit errors: {:?}",
        report.errors
    );
    Ok(report)
}

/// A CPU figure, or `n/a` when the database is not on this machine.
fn ms(value: Option<f64>) -> String {
    value.map_or("n/a".into(), |v| format!("{v:.3}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bench = common::Bench::start().await?;
    println!("machine: {}", common::machine());
    println!("postgres: {}", bench.settings().await?);
    let mut binaries = Vec::new();
    if let Ok(baseline) = std::env::var("BENCH_BASELINE_BIN") {
        binaries.push(("baseline", std::path::PathBuf::from(baseline)));
    }
    binaries.push(("this build", bench.bin.clone()));
    let only = std::env::var("BENCH_ONLY").ok();
    let mut rows = Vec::new();
    let mut details = Vec::new();
    for (clients, tasks, rate) in [
        (1usize, 3_000u64, 0.0),
        (16, 20_000, 0.0),
        (64, 30_000, 0.0),
        (64, 20_000, 1_000.0),
    ] {
        let name = if rate > 0.0 {
            format!("{clients}@{rate}")
        } else {
            clients.to_string()
        };
        if only
            .as_deref()
            .is_some_and(|only| !only.split(',').any(|o| o == name))
        {
            continue;
        }
        let mut figures = vec![(Vec::new(), Vec::new(), Vec::new(), Vec::new()); binaries.len()];
        for run in 1..=common::runs() {
            for (b, (label, bin)) in binaries.iter().enumerate() {
                let r = load(&bench, bin, clients, tasks, rate).await?;
                println!(
                    "run {run} ({label}): {clients} clients{}: {:.0} submits/s, submit {}, cpu ms/task postgres {} replica {} load {:.3}; {}",
                    if rate > 0.0 {
                        format!(" at {rate}/s")
                    } else {
                        String::new()
                    },
                    r.submits_per_second,
                    r.submit_latency.cell(),
                    ms(r.postgres_cpu_ms_per_task),
                    ms(r.replica_cpu_ms_per_task),
                    r.load_cpu_ms_per_task,
                    common::machine(),
                );
                let (rates, p50, p99, cpu) = &mut figures[b];
                rates.push(r.submits_per_second);
                cpu.extend(r.postgres_cpu_ms_per_task);
                p50.push(r.submit_latency.p50_ms);
                p99.push(r.submit_latency.p99_ms);
                details.push(serde_json::json!({"run": run, "binary": label,
                    "clients": clients, "rate": rate, "report": r}));
            }
        }
        for ((label, _), (rates, p50, p99, cpu)) in binaries.iter().zip(figures) {
            rows.push((
                *label,
                clients,
                rate,
                Repeated::of(rates, true),
                Repeated::of(p50, false),
                Repeated::of(p99, false),
                Repeated::of(cpu, false),
            ));
        }
    }
    println!();
    println!("| HTTP submit | binary | submits/s best (spread) | p50 best | p99 best (worst) | PostgreSQL CPU a task, best (worst) |");
    println!("|---|---|---|---|---|---|");
    for (binary, clients, rate, rates, p50, p99, cpu) in &rows {
        let label = if *rate > 0.0 {
            format!("{clients} clients at {rate}/s")
        } else {
            format!("{clients} clients, flat out")
        };
        println!(
            "| {label} | {binary} | {:.0} ({:.0}%) | {:.2} ms | {:.2} ms ({:.2}) | {} |",
            rates.best,
            rates.spread() * 100.0,
            p50.best,
            p99.best,
            p99.worst,
            if cpu.runs.is_empty() {
                "n/a".to_owned()
            } else {
                format!("{:.3} ms ({:.3})", cpu.best, cpu.worst)
            }
        );
    }
    let summary: Vec<_> = rows
        .iter()
        .map(|(binary, c, r, rates, p50, p99, cpu)| serde_json::json!({"binary": binary, "clients": c, "rate": r, "submits_per_second": rates, "p50_ms": p50, "p99_ms": p99, "postgres_cpu_ms_per_task": cpu}))
        .collect();
    common::write_json(
        "http_load",
        &serde_json::json!({"machine": common::machine(), "summary": summary, "runs": details}),
    )?;
    bench.stop().await;
    Ok(())
}
