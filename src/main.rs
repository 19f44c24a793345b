//! The `tasklane` binary: parse the command line, start tracing, run the command.

use clap::{Parser, Subcommand};
use tasklane::config::ServeConfig;
use tasklane::server::{self, Replica};

#[derive(Parser)]
#[command(name = "tasklane", version, about = "A durable task platform on PostgreSQL")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a replica: HTTP API, workers and maintenance (each role switchable).
    Serve(ServeConfig),
    /// Apply pending migrations and exit.
    Migrate {
        #[arg(long, env = "DATABASE_URL", default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
        database_url: String,
    },
    /// Generate load: start (or target) replicas, submit tasks, report throughput,
    /// latencies, errors and memory (see `tasklane load --help`).
    Load(tasklane::load::LoadConfig),
    /// Serve with demo task types, on a private throwaway database when none is reachable.
    Dev(ServeConfig),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TASKLANE_LOG").unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(config) => serve(config.resolve_env()).await,
        Command::Migrate { database_url } => tasklane::store::migrate::run(&database_url).await,
        Command::Dev(config) => dev(config.resolve_env()).await,
        Command::Load(config) => tasklane::load::run(config).await.map(drop),
    }
}

async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let replica = Replica::start(&config, Default::default()).await?;
    server::terminated().await;
    tracing::info!("shutting down");
    replica.stop().await;
    Ok(())
}

/// `dev` uses `DATABASE_URL` / `TASKLANE_DATABASE_URL` only when one is set and answers;
/// otherwise (the flag's default included) a private throwaway cluster, so trying
/// tasklane never writes into a server the user did not name.
async fn dev(mut config: ServeConfig) -> anyhow::Result<()> {
    let named = std::env::var("TASKLANE_DATABASE_URL").or_else(|_| std::env::var("DATABASE_URL")).ok();
    let database = tasklane::devdb::resolve_server(named.as_deref()).await?;
    config.database_url = database.url().to_owned();
    if config.task_types.is_none() {
        let path = std::env::temp_dir().join(format!("tasklane-dev-types-{}.toml", std::process::id()));
        std::fs::write(&path, DEV_TASK_TYPES)?;
        config.task_types = Some(path);
    }
    tracing::info!(database = %config.database_url, "dev database");
    serve(config).await
}

/// Demo task types of `tasklane dev`.
const DEV_TASK_TYPES: &str = r#"
[[task_type]]
name = "noop"
executor = "noop"

[[task_type]]
name = "sleep"
executor = "sleep"
lease_seconds = 10
"#;
