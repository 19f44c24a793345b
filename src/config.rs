//! Configuration of `tasklane serve`, from flags or `TASKLANE_*` environment variables.
//! Every field says its default; the Helm chart's values map onto these one to one. The
//! table below and `docs/api.md`'s flag table are held to the definitions by a test
//! (`tests/it/docs_examples/flags.rs`).
//!
//! | variable | default |
//! |---|---|
//! | `DATABASE_URL` / `TASKLANE_DATABASE_URL` | `postgres://postgres@127.0.0.1:5432/postgres` |
//! | `TASKLANE_DIRECT_DATABASE_URL` | none (the database URL serves for everything) |
//! | `TASKLANE_LISTEN` | `127.0.0.1:8080` |
//! | `TASKLANE_TASK_TYPES` | none (no task types) |
//! | `TASKLANE_ROLES` | `api,worker,maintenance` |
//! | `TASKLANE_NO_MIGRATE` | false |
//! | `TASKLANE_REPLICA_NAME` | host name + pid |
//! | `TASKLANE_POOL_SIZE` | 16 |
//! | `TASKLANE_STATEMENT_TIMEOUT_MS` | 10000 |
//! | `TASKLANE_SUBMIT_GROUPS` | 2 (the pool size if smaller) |
//! | `TASKLANE_CLAIMERS` | 1 |
//! | `TASKLANE_CONCURRENCY` | 16 |
//! | `TASKLANE_CLAIM_BATCH` | 16 |
//! | `TASKLANE_ROUTE` | `local` |
//! | `TASKLANE_POLL_INTERVAL_MS` | 1000 |
//! | `TASKLANE_LISTEN_NOTIFY` | true |
//! | `TASKLANE_NOTIFY_DEBOUNCE_MS` | 5 |
//! | `TASKLANE_RESCUE_INTERVAL_MS` | 1000 |
//! | `TASKLANE_DEADLINE_INTERVAL_MS` | 1000 |
//! | `TASKLANE_PRUNE_INTERVAL_MS` | 10000 |
//! | `TASKLANE_PRUNE_BATCH` | 100 |
//! | `TASKLANE_RETENTION_SECONDS` | 86400 |
//! | `TASKLANE_REPLICA_TTL_SECONDS` | 15 |
//! | `TASKLANE_SHUTDOWN_GRACE_SECONDS` | 10 |
//! | `TASKLANE_MAX_INPUT_BYTES` | 1048576 |
//! | `TASKLANE_MAX_BODY_BYTES` | max input bytes + 65536 |
//! | `TASKLANE_READINESS_DRAIN_MS` | 1000 |
//! | `TASKLANE_MAX_WAIT_SECONDS` | 60 |
//! | `TASKLANE_WEBHOOK_ALLOW_CIDRS` | none (internal addresses refused) |
//! | `TASKLANE_WEBHOOK_RETRY_SCHEDULE` | `5s,5m,30m,2h,5h,10h,14h,20h,24h` |
//! | `TASKLANE_WEBHOOK_CONCURRENCY` | 128 |
//! | `TASKLANE_WEBHOOK_ENDPOINT_CONCURRENCY` | 8 |
//! | `TASKLANE_WEBHOOK_TIMEOUT_SECONDS` | 15 |
//! | `TASKLANE_WEBHOOK_CLAIM_SECONDS` | 60 |
//! | `TASKLANE_CA_FILE` | empty: none (the compiled-in Mozilla roots only) |
//! | `TASKLANE_UPSTREAM_CONNECT_TIMEOUT_MS` | 10000 |

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

mod connections;
pub use connections::Connections;

use crate::task::Locality;

/// Settings of a serving replica.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// The database. `TASKLANE_DATABASE_URL` is read too. TLS as libpq's `sslmode`
    /// (default prefer) and `sslrootcert` in the URL say (src/store/connect).
    #[arg(
        long,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pub database_url: String,

    /// A URL of the same database that bypasses a connection pooler. With it, the
    /// database URL is taken to reach PostgreSQL through a pooler in transaction mode
    /// (PgBouncer): migrations, every LISTEN and the sessions that hold advisory locks
    /// use this one, and pooled connections set nothing on their session. Without it
    /// the database URL serves for everything.
    #[arg(long, env = "TASKLANE_DIRECT_DATABASE_URL", hide_env_values = true)]
    pub direct_database_url: Option<String>,

    /// HTTP listen address.
    #[arg(long, env = "TASKLANE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// The task-types TOML file (format: docs/api.md, "Task types"); without one no
    /// type is registered.
    #[arg(long, env = "TASKLANE_TASK_TYPES")]
    pub task_types: Option<PathBuf>,

    /// Roles of this replica: any of api, worker, maintenance.
    #[arg(
        long,
        env = "TASKLANE_ROLES",
        value_delimiter = ',',
        default_value = "api,worker,maintenance"
    )]
    pub roles: Vec<Role>,

    /// Skip migrations at start (another process runs `tasklane migrate`).
    #[arg(long, env = "TASKLANE_NO_MIGRATE")]
    pub no_migrate: bool,

    /// Name shown in the replica registry; defaults to host name and pid.
    #[arg(long, env = "TASKLANE_REPLICA_NAME")]
    pub replica_name: Option<String>,

    /// Database connections of this replica. More connections than a few per database
    /// core only add contention (many HTTP clients on a small server submit faster
    /// through 16 than through 32), and three replicas at 16 stay under PostgreSQL's
    /// default `max_connections` of 100. Claims run on `2 × claimers + 2` connections of
    /// their own (see `Database::claim_pool`).
    #[arg(long, env = "TASKLANE_POOL_SIZE", default_value_t = 16)]
    pub pool_size: usize,

    /// The longest a statement of this replica may run, in ms (0: no bound). PostgreSQL
    /// cancels one that runs longer (`statement_timeout` on every pooled connection),
    /// and a connection that then still sends nothing while a statement waits for its
    /// answer (a black-holed network path, a hung server) is closed 2 s later and
    /// replaced. A request waits for a free connection at most twice this long. Behind
    /// a pooler in transaction mode (a direct URL set, or `--listen-notify false`)
    /// nothing is set on the session (set `statement_timeout` on the database role
    /// instead): the connection watchdog still applies.
    #[arg(long, env = "TASKLANE_STATEMENT_TIMEOUT_MS", default_value_t = 10_000)]
    pub statement_timeout_ms: u64,

    /// Submit groups this replica writes at once (group commit): concurrent `POST
    /// /v1/tasks` queue while that many groups are being written and go in the next one,
    /// each answered as alone; a submit that finds a group free goes at once. 0 writes
    /// every submit alone. Default 2 (1 with a pool of one): fewer, larger groups cost
    /// the database less per submit, so a couple of groups submit faster than many; at
    /// most the pool size (each group being written holds a connection).
    #[arg(long, env = "TASKLANE_SUBMIT_GROUPS")]
    pub submit_groups: Option<usize>,

    /// Independent claim loops in this replica.
    #[arg(long, env = "TASKLANE_CLAIMERS", default_value_t = 1)]
    pub claimers: usize,

    /// Attempts running at once per claim loop.
    #[arg(long, env = "TASKLANE_CONCURRENCY", default_value_t = 16)]
    pub concurrency: usize,

    /// Most tasks one claim statement takes (1..=256; a remote worker's claim takes
    /// at most 100).
    #[arg(long, env = "TASKLANE_CLAIM_BATCH", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub claim_batch: u16,

    /// Locality served by this replica's in-process workers: `local` (the operator's own
    /// model servers) or `external` (outside providers).
    #[arg(
        long = "route",
        env = "TASKLANE_ROUTE",
        value_enum,
        default_value = "local"
    )]
    pub locality: LocalityArg,

    /// How often an idle claim loop polls when no wake-up arrives, in ms. This and the
    /// other intervals are at least 1: a loop with a zero interval never waits.
    #[arg(long, env = "TASKLANE_POLL_INTERVAL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub poll_interval_ms: u64,

    /// LISTEN for other replicas' wake-ups, task events and live output (on the direct
    /// URL when one is set). Turn it off behind a pooler in transaction mode without a
    /// direct URL: claim loops, deliverers and waiters then poll.
    #[arg(long, env = "TASKLANE_LISTEN_NOTIFY", default_value_t = true, action = clap::ArgAction::Set)]
    pub listen_notify: bool,

    /// At most one NOTIFY per this many ms.
    #[arg(long, env = "TASKLANE_NOTIFY_DEBOUNCE_MS", default_value_t = 5)]
    pub notify_debounce_ms: u64,

    /// How often the cluster looks for expired leases, in ms: each replica with the
    /// maintenance role looks every this × the live replicas with that role.
    #[arg(long, env = "TASKLANE_RESCUE_INTERVAL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub rescue_interval_ms: u64,

    /// How often the cluster sweeps queue deadlines, in ms (spread over the maintaining
    /// replicas, as the rescuer).
    #[arg(long, env = "TASKLANE_DEADLINE_INTERVAL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub deadline_interval_ms: u64,

    /// How often the cluster's pruning sweep looks for released tasks past their
    /// retention, in ms (spread over the maintaining replicas, as the rescuer; a replica
    /// runs it again at once while passes come back full).
    #[arg(long, env = "TASKLANE_PRUNE_INTERVAL_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub prune_interval_ms: u64,

    /// Most tasks one pruning pass deletes (1..=10000).
    #[arg(long, env = "TASKLANE_PRUNE_BATCH", default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=10_000))]
    pub prune_batch: i64,

    /// How long a terminal task is kept after both its release and its finish, in seconds.
    #[arg(long, env = "TASKLANE_RETENTION_SECONDS", default_value_t = 86_400)]
    pub retention_seconds: u64,

    /// A replica is presumed dead this long after its last registry heartbeat.
    #[arg(long, env = "TASKLANE_REPLICA_TTL_SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub replica_ttl_seconds: u64,

    /// On SIGTERM, how long running attempts may finish before their leases are handed back.
    #[arg(long, env = "TASKLANE_SHUTDOWN_GRACE_SECONDS", default_value_t = 10)]
    pub shutdown_grace_seconds: u64,

    /// The largest task input accepted, in bytes.
    #[arg(long, env = "TASKLANE_MAX_INPUT_BYTES", default_value_t = crate::task::bounds::DEFAULT_INPUT_BYTES)]
    pub max_input_bytes: usize,

    /// The largest HTTP request body on any route, in bytes (413 beyond); defaults to
    /// the input bound plus 64 KiB for the rest of a submit body.
    #[arg(long, env = "TASKLANE_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,

    /// On SIGTERM, how long `/readyz` answers 503 while requests are still served, so
    /// load balancers stop routing here before the listener closes, in ms.
    #[arg(long, env = "TASKLANE_READINESS_DRAIN_MS", default_value_t = 1000)]
    pub readiness_drain_ms: u64,

    /// The longest this replica holds a long poll (a submit's `?wait=`, a worker claim's
    /// `wait_seconds`) before answering with what there is, in seconds (0..=60). Set it
    /// under the idle timeout of a proxy in front of the API, which would otherwise cut
    /// the waiting request; a client asking for longer is answered at this bound.
    #[arg(long, env = "TASKLANE_MAX_WAIT_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(0..=60))]
    pub max_wait_seconds: u64,

    /// Address ranges webhook deliveries may reach although they are loopback, private,
    /// link-local or unique-local (comma-separated CIDRs, e.g. `10.0.0.0/8,::1/128`);
    /// every other internal address is refused at delivery time (SSRF guard).
    #[arg(long, env = "TASKLANE_WEBHOOK_ALLOW_CIDRS", value_delimiter = ',')]
    pub webhook_allow_cidrs: Vec<String>,

    /// The waits between webhook attempts (`ms`, `s`, `m`, `h`); after the last, a
    /// notification has failed. Jittered by ±10%; `Retry-After` on 429/503 is a floor.
    #[arg(long, env = "TASKLANE_WEBHOOK_RETRY_SCHEDULE", default_value = crate::webhooks::schedule::DEFAULT_SCHEDULE)]
    pub webhook_retry_schedule: String,

    /// Webhook notifications this replica holds at once, in flight or waiting for their
    /// endpoint's turn in a round (maintenance role).
    #[arg(long, env = "TASKLANE_WEBHOOK_CONCURRENCY", default_value_t = 128, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub webhook_concurrency: u16,

    /// Webhook attempts in flight at once per endpoint in this replica.
    #[arg(long, env = "TASKLANE_WEBHOOK_ENDPOINT_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub webhook_endpoint_concurrency: u16,

    /// How long a receiver may take to answer a webhook, in seconds.
    #[arg(long, env = "TASKLANE_WEBHOOK_TIMEOUT_SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub webhook_timeout_seconds: u64,

    /// How long a claimed notification stays with the replica sending it before another
    /// replica may send it (what a killed replica's notifications wait), in seconds.
    /// Must be above the timeout (refused at start otherwise); a row whose turn comes
    /// too late to be answered within its claim is released unsent, so keep it above
    /// three timeouts, or slow receivers wait for released rows to be claimed again.
    #[arg(long, env = "TASKLANE_WEBHOOK_CLAIM_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub webhook_claim_seconds: u64,

    /// A PEM bundle of extra CA certificates the `openai` and `http` executors trust
    /// besides the compiled-in Mozilla roots (a private CA in front of a local model).
    /// Refused at start when unreadable or empty. Empty (the default): none.
    #[arg(long, env = "TASKLANE_CA_FILE", default_value = "")]
    pub ca_file: String,

    /// How long a connection (TCP and TLS) to a model upstream may take, in ms.
    #[arg(
        long,
        env = "TASKLANE_UPSTREAM_CONNECT_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub upstream_connect_timeout_ms: u64,
}

/// `--submit-groups` when not given (lowered to the pool size).
pub const DEFAULT_SUBMIT_GROUPS: usize = 2;

/// What a replica does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    Api,
    Worker,
    Maintenance,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LocalityArg {
    Local,
    External,
}

impl ServeConfig {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    pub fn locality(&self) -> Locality {
        match self.locality {
            LocalityArg::Local => Locality::Local,
            LocalityArg::External => Locality::External,
        }
    }

    pub fn replica_name(&self) -> String {
        self.replica_name.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        })
    }

    /// The HTTP body limit in force.
    pub fn body_limit(&self) -> usize {
        self.max_body_bytes
            .unwrap_or(self.max_input_bytes + 64 * 1024)
    }

    /// The upstream executors' client settings.
    pub fn client_options(&self) -> crate::worker::executors::ClientOptions {
        crate::worker::executors::ClientOptions {
            ca_file: (!self.ca_file.is_empty()).then(|| PathBuf::from(&self.ca_file)),
            connect_timeout: Duration::from_millis(self.upstream_connect_timeout_ms),
        }
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }

    /// The statement bound of the pools (none: unbounded).
    pub fn statement_timeout(&self) -> Option<Duration> {
        Some(Duration::from_millis(self.statement_timeout_ms)).filter(|t| !t.is_zero())
    }

    /// The submit groups in force (0: every submit alone); more than the pool holds is
    /// refused naming the flags, since each group written holds a connection and the
    /// excess would only wait for the pool with the rest.
    pub fn submit_groups(&self) -> anyhow::Result<usize> {
        let Some(groups) = self.submit_groups else {
            return Ok(DEFAULT_SUBMIT_GROUPS.min(self.pool_size));
        };
        anyhow::ensure!(
            groups <= self.pool_size,
            "--submit-groups (TASKLANE_SUBMIT_GROUPS) is {}: at most --pool-size \
             (TASKLANE_POOL_SIZE, {}), since each group being written holds a connection",
            groups,
            self.pool_size
        );
        Ok(groups)
    }

    /// The webhook deliverer's settings; a bad CIDR or schedule, or a claim no longer
    /// than an attempt's timeout (no claimed row could ever be sent in time: each would
    /// be released unsent), is refused naming its flag and variable.
    pub fn delivery(&self) -> anyhow::Result<crate::webhooks::DeliveryConfig> {
        anyhow::ensure!(
            self.webhook_claim_seconds > self.webhook_timeout_seconds,
            "--webhook-claim-seconds (TASKLANE_WEBHOOK_CLAIM_SECONDS) is {} s: it must be \
             above --webhook-timeout-seconds (TASKLANE_WEBHOOK_TIMEOUT_SECONDS, {} s), so a \
             claimed notification can be sent and answered before its claim runs out",
            self.webhook_claim_seconds,
            self.webhook_timeout_seconds
        );
        let allowed = self
            .webhook_allow_cidrs
            .iter()
            .filter(|c| !c.trim().is_empty())
            .map(|c| c.parse::<crate::webhooks::Cidr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                anyhow::anyhow!("--webhook-allow-cidrs (TASKLANE_WEBHOOK_ALLOW_CIDRS): {e}")
            })?;
        let schedule = crate::webhooks::RetrySchedule::parse(&self.webhook_retry_schedule)
            .map_err(|e| {
                anyhow::anyhow!("--webhook-retry-schedule (TASKLANE_WEBHOOK_RETRY_SCHEDULE): {e}")
            })?;
        Ok(crate::webhooks::DeliveryConfig {
            concurrency: self.webhook_concurrency as usize,
            per_endpoint: self.webhook_endpoint_concurrency as usize,
            claim_for: Duration::from_secs(self.webhook_claim_seconds),
            timeout: Duration::from_secs(self.webhook_timeout_seconds),
            schedule,
            guard: crate::webhooks::AddressGuard::new(allowed),
            poll_interval: self.poll_interval(),
            listen_url: self.listen_notify.then(|| self.session_url().to_owned()),
        })
    }

    /// Applies `TASKLANE_DATABASE_URL`, which wins over `DATABASE_URL` when both are set.
    pub fn resolve_env(mut self) -> Self {
        if let Ok(url) = std::env::var("TASKLANE_DATABASE_URL") {
            if !url.is_empty() {
                self.database_url = url;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        config: super::ServeConfig,
    }

    /// A loop with a zero interval never waits: every interval flag takes 1 and refuses
    /// 0, naming the flag.
    #[test]
    fn every_interval_is_at_least_one() {
        for flag in [
            "--poll-interval-ms",
            "--rescue-interval-ms",
            "--deadline-interval-ms",
            "--prune-interval-ms",
            "--replica-ttl-seconds",
        ] {
            assert!(
                Serve::try_parse_from(["serve", flag, "1"]).is_ok(),
                "{flag} 1"
            );
            let refused = match Serve::try_parse_from(["serve", flag, "0"]) {
                Ok(_) => panic!("{flag} 0 was taken"),
                Err(error) => error.to_string(),
            };
            assert!(
                refused.contains(flag),
                "the error does not name {flag}: {refused}"
            );
        }
    }
}
