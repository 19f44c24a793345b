//! The `tasklane` binary: parse the command line, start tracing, run the command.

use anyhow::Context;
use clap::{Parser, Subcommand};
use tasklane::cli::output::{banner, line};
use tasklane::config::ServeConfig;
use tasklane::http::starting::Starting;
use tasklane::http::{HttpConfig, HttpServer};
use tasklane::server;
use tasklane::task::types_file::{TaskTypesFile, DEMO_TASK_TYPES};
use tasklane::task::TaskType;
use tasklane::telemetry::Telemetry;

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
            hide_env_values = true,
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
    Dev(DevArgs),
    /// Tasks over the HTTP API: submit, list, get, events (--follow), attempts, cancel,
    /// retry.
    #[command(subcommand)]
    Tasks(tasklane::cli::TasksCommand),
    /// Operator settings over the HTTP API (an admin token): overview, limits, stop,
    /// resources, pause, resume.
    #[command(subcommand)]
    Admin(tasklane::cli::AdminCommand),
    /// Print the OpenAPI 3.1 document of the HTTP API (what `/openapi.json` serves, without
    /// a replica's task-type names), for client generators and validators.
    Openapi,
}

/// `tasklane dev`: `serve`'s settings, and the demo's own.
#[derive(clap::Args)]
struct DevArgs {
    #[command(flatten)]
    config: ServeConfig,
    /// Start an OpenAI-compatible mock in-process and point every route of the task
    /// types at it (the demo `openai` type: a local model that fails its first calls,
    /// an external one that answers).
    #[arg(long, env = "TASKLANE_MOCK_LLM")]
    mock_llm: bool,
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
        /// Permissions: submit, read, cancel, release, delete, work, admin, webhooks.
        #[arg(long, value_delimiter = ',', required = true)]
        perm: Vec<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(
            long,
            env = "DATABASE_URL",
            hide_env_values = true,
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
            hide_env_values = true,
            default_value = "postgres://postgres@127.0.0.1:5432/postgres"
        )]
        database_url: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    // The API's command-line clients say what went wrong themselves, with an exit code
    // scripts can test; their logs stay quiet.
    let outcome = match command {
        Command::Tasks(command) => command.run().await,
        Command::Admin(command) => command.run().await,
        Command::Openapi => {
            line(tasklane::http::openapi_json());
            return Ok(());
        }
        other => return run(other).await,
    };
    std::process::exit(tasklane::cli::exit_code(outcome));
}

async fn run(command: Command) -> anyhow::Result<()> {
    let telemetry = Telemetry::start()?;
    let result = match command {
        Command::Serve(config) => serve(config.resolve_env(), &telemetry).await,
        Command::Migrate { database_url } => tasklane::store::migrate::run(&database_url).await,
        Command::Dev(args) => dev(args.config.resolve_env(), args.mock_llm, &telemetry).await,
        Command::Load(config) => tasklane::load::run(config).await.map(drop),
        Command::Token(command) => token(command).await,
        Command::Tasks(_) | Command::Admin(_) | Command::Openapi => {
            unreachable!("answered before telemetry")
        }
    };
    telemetry.shutdown();
    result
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
            line(format_args!("token id: {}", created.id));
            line(&created.secret);
        }
        TokenCommand::Revoke { id, database_url } => {
            tokens::revoke(&database_url_of(database_url), id).await?;
            line(format_args!("revoked {id}"));
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

async fn serve(config: ServeConfig, telemetry: &Telemetry) -> anyhow::Result<()> {
    let types = server::load_task_types(&config)?;
    serve_types(config, types, telemetry).await
}

/// Serves `types` (read and checked by the caller, before anything touches the database).
async fn serve_types(
    config: ServeConfig,
    types: Vec<TaskType>,
    telemetry: &Telemetry,
) -> anyhow::Result<()> {
    let starting = Starting::start(&config.listen, telemetry.clone()).await?;
    let replica = tokio::select! {
        replica = server::start_when_the_database_takes_it(&config, types, telemetry, |why| {
            starting.waiting_for(why)
        }) => replica?,
        _ = server::terminated() => {
            tracing::info!("stopped while waiting for the database");
            return Ok(());
        }
    };
    // Every role answers /healthz, /readyz and /metrics; /v1/ only with role api.
    let http = HttpServer::start_on(
        starting.hand_over().await?,
        &HttpConfig::of(&config),
        replica.tasklane.clone(),
        telemetry.clone(),
    )?;
    server::terminated().await;
    tracing::info!("shutting down");
    let drain = std::time::Duration::from_millis(config.readiness_drain_ms);
    http.shutdown(
        drain,
        std::time::Duration::from_secs(config.shutdown_grace_seconds),
    )
    .await;
    replica.stop().await;
    Ok(())
}

/// `dev` uses `DATABASE_URL` / `TASKLANE_DATABASE_URL` only when one is set and answers;
/// otherwise (the flag's default included) a private throwaway cluster, so trying
/// tasklane never writes into a server the user did not name. The demo task types are
/// served from the binary itself (no file is written), unless `--task-types` names one.
async fn dev(mut config: ServeConfig, mock_llm: bool, telemetry: &Telemetry) -> anyhow::Result<()> {
    let mut types = match config.task_types {
        Some(_) => server::load_task_types(&config)?,
        None => TaskTypesFile::parse(DEMO_TASK_TYPES).context("the demo task types")?,
    };
    // Kept alive while the replica serves.
    let _mock = match mock_llm {
        true => {
            let mock = tasklane::mockllm::demo::start_for(&mut types).await?;
            banner(format_args!(
                "mock LLM at {} (every route of the task types points there)",
                mock.base_url()
            ));
            Some(mock)
        }
        false => None,
    };
    let named = std::env::var("TASKLANE_DATABASE_URL")
        .or_else(|_| std::env::var("DATABASE_URL"))
        .ok();
    let database = tasklane::devdb::resolve_server(named.as_deref()).await?;
    config.database_url = database.url().to_owned();
    let shown_url = tasklane::devdb::redacted_url(&config.database_url);
    tracing::info!(database = %shown_url, "dev database");
    tasklane::store::migrate::run(&config.database_url).await?;
    config.no_migrate = true; // done: the token below needs the schema first
                              // Receivers under development listen on this machine.
    for loopback in ["127.0.0.0/8", "::1/128"] {
        if !config.webhook_allow_cidrs.iter().any(|c| c == loopback) {
            config.webhook_allow_cidrs.push(loopback.into());
        }
    }
    let spec = tasklane::service::tokens::TokenSpec {
        app: "dev".into(),
        scope_id: None,
        permissions: [
            "submit", "read", "cancel", "release", "delete", "work", "admin", "webhooks",
        ]
        .map(String::from)
        .to_vec(),
        name: Some("dev".into()),
    };
    let token = tasklane::service::tokens::create(&config.database_url, &spec).await?;
    banner(format_args!(
        "admin token for app \"dev\" (http://{}):",
        config.listen
    ));
    banner(&token.secret);
    banner("For the command line (tasklane tasks, tasklane admin) in another terminal:");
    banner(format_args!(
        "  export TASKLANE_URL='{}'",
        cli_url(&config.listen)
    ));
    banner(format_args!("  export TASKLANE_TOKEN='{}'", token.secret));
    print_cli_hint(&config.database_url, &shown_url);
    serve_types(config, types, telemetry).await
}

/// The URL a client on this machine reaches `listen` at: a wildcard address (`0.0.0.0`,
/// `[::]`) is reached on loopback.
fn cli_url(listen: &str) -> String {
    let host_port = match listen.rsplit_once(':') {
        Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
        Some(("[::]", port)) => format!("[::1]:{port}"),
        _ => listen.to_owned(),
    };
    format!("http://{host_port}")
}

/// Tells the user how to point the CLI at the database `dev` serves (a private cluster
/// lives only as long as this process), without printing a password.
fn print_cli_hint(database_url: &str, shown_url: &str) {
    let binary = std::env::current_exe()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|_| "tasklane".into());
    banner("To create more tokens while this runs:");
    if std::env::var("TASKLANE_DATABASE_URL").is_ok_and(|url| url != database_url) {
        banner("  unset TASKLANE_DATABASE_URL");
    }
    if shown_url == database_url {
        banner(format_args!("  export DATABASE_URL='{database_url}'"));
    } else {
        banner(format_args!(
            "  export DATABASE_URL='{shown_url}'  # with your password for ***"
        ));
    }
    banner(format_args!(
        "  {binary} token create --app APP --perm submit,read"
    ));
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wildcard_listen_address_is_reached_on_loopback() {
        assert_eq!(super::cli_url("127.0.0.1:9090"), "http://127.0.0.1:9090");
        assert_eq!(super::cli_url("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(super::cli_url("[::]:8080"), "http://[::1]:8080");
    }
}
