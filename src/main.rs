//! The `tasklane` binary: parse the command line, start tracing, run the command.

use clap::{Parser, Subcommand};
use tasklane::config::{Role, ServeConfig};
use tasklane::http::{HttpConfig, HttpServer};
use tasklane::server::{self, Replica};

#[derive(Parser)]
#[command(
    name = "tasklane",
    version,
    about = "A durable task platform on PostgreSQL"
)]
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
        #[arg(
            long,
            env = "DATABASE_URL",
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        database_url: String,
    },
    /// Generate load: start (or target) replicas, submit tasks, report throughput,
    /// latencies, errors and memory (see `tasklane load --help`).
    Load(tasklane::load::LoadConfig),
    /// Create or revoke API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Serve with demo task types, on a private throwaway database when none is reachable.
    Dev(ServeConfig),
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print it (alone, on the last line of stdout).
    Create {
        #[arg(long)]
        app: String,
        /// Bind the token to one scope (redacted view of that scope only).
        #[arg(long)]
        scope: Option<String>,
        /// Permissions: submit, read, cancel, release, delete, work, admin.
        #[arg(long, value_delimiter = ',', required = true)]
        perm: Vec<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(
            long,
            env = "DATABASE_URL",
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        database_url: String,
    },
    /// Revoke a token by its id: it stops working at once on every replica.
    Revoke {
        id: uuid::Uuid,
        #[arg(
            long,
            env = "DATABASE_URL",
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        database_url: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TASKLANE_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(config) => serve(config.resolve_env()).await,
        Command::Migrate { database_url } => tasklane::store::migrate::run(&database_url).await,
        Command::Dev(config) => dev(config.resolve_env()).await,
        Command::Load(config) => tasklane::load::run(config).await.map(drop),
        Command::Token(command) => token(command).await,
    }
}

async fn token(command: TokenCommand) -> anyhow::Result<()> {
    use tasklane::service::tokens;
    match command {
        TokenCommand::Create {
            app,
            scope,
            perm,
            name,
            database_url,
        } => {
            let spec = tokens::TokenSpec {
                app,
                scope_id: scope,
                permissions: perm,
                name,
            };
            let created = tokens::create(&database_url_of(database_url), &spec).await?;
            println!("token id: {}", created.id);
            println!("{}", created.secret);
        }
        TokenCommand::Revoke { id, database_url } => {
            tokens::revoke(&database_url_of(database_url), id).await?;
            println!("revoked {id}");
        }
    }
    Ok(())
}

/// `TASKLANE_DATABASE_URL` wins over `DATABASE_URL`, as for `serve`.
fn database_url_of(url: String) -> String {
    std::env::var("TASKLANE_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or(url)
}

async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let replica = Replica::start(&config, Default::default()).await?;
    let http = match config.has(Role::Api) {
        true => Some(HttpServer::start(&HttpConfig::of(&config), replica.tasklane.clone()).await?),
        false => None,
    };
    server::terminated().await;
    tracing::info!("shutting down");
    if let Some(http) = http {
        let drain = std::time::Duration::from_millis(config.readiness_drain_ms);
        http.shutdown(
            drain,
            std::time::Duration::from_secs(config.shutdown_grace_seconds),
        )
        .await;
    }
    replica.stop().await;
    Ok(())
}

/// `dev` uses `DATABASE_URL` / `TASKLANE_DATABASE_URL` only when one is set and answers;
/// otherwise (the flag's default included) a private throwaway cluster, so trying
/// tasklane never writes into a server the user did not name.
async fn dev(mut config: ServeConfig) -> anyhow::Result<()> {
    let named = std::env::var("TASKLANE_DATABASE_URL")
        .or_else(|_| std::env::var("DATABASE_URL"))
        .ok();
    let database = tasklane::devdb::resolve_server(named.as_deref()).await?;
    config.database_url = database.url().to_owned();
    if config.task_types.is_none() {
        let path =
            std::env::temp_dir().join(format!("tasklane-dev-types-{}.toml", std::process::id()));
        std::fs::write(&path, tasklane::task::task_type::DEMO_TASK_TYPES)?;
        config.task_types = Some(path);
    }
    // A named server's URL may hold a password; only the private cluster's is logged.
    match &database {
        tasklane::devdb::Server::Private(cluster) => {
            tracing::info!(database = %cluster.url(), "dev database: a private cluster")
        }
        tasklane::devdb::Server::External { .. } => {
            tracing::info!("dev database: DATABASE_URL")
        }
    }
    tasklane::store::migrate::run(&config.database_url).await?;
    let spec = tasklane::service::tokens::TokenSpec {
        app: "dev".into(),
        scope_id: None,
        permissions: [
            "submit", "read", "cancel", "release", "delete", "work", "admin",
        ]
        .map(String::from)
        .to_vec(),
        name: Some("dev".into()),
    };
    let token = tasklane::service::tokens::create(&config.database_url, &spec).await?;
    println!("admin token for app \"dev\" (http://{}):", config.listen);
    println!("{}", token.secret);
    serve(config).await
}
