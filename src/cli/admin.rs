//! `tasklane admin overview|limits|stop|resources|pause|resume|weight|apps|circuits` (an
//! `admin` token).

use reqwest::Method;
use serde_json::{json, Value};

use super::client::{encode, Endpoint, Failure};
use super::output;
use super::table::{self, cell};

#[derive(Debug, clap::Subcommand)]
pub enum AdminCommand {
    /// Queue depth, replicas, resources, limits, stops, paused types, circuits,
    /// refusals, webhooks.
    Overview {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Set a capacity, rate or budget limit (no `--app`: global).
    Limits {
        #[arg(long, value_parser = ["capacity", "rate", "budget"])]
        kind: String,
        #[arg(long)]
        limit: i64,
        #[arg(long)]
        app: Option<String>,
        #[arg(long)]
        subject: Option<String>,
        /// For rate limits: the sliding window in seconds.
        #[arg(long)]
        window: Option<i64>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Turn the emergency stop on or off, globally or for one app.
    Stop {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        #[arg(long)]
        app: Option<String>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Set how many tasks of a resource may run at once across the cluster.
    Resources {
        name: String,
        slots: i64,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Pause a task type: no claim takes its tasks; submits still queue.
    Pause {
        task_type: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Resume a paused task type.
    Resume {
        task_type: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Set an app's weight (1..100): its share of the claims' turns against the other
    /// apps with claimable work in the same priority level (default 1).
    Weight {
        app: String,
        #[arg(allow_negative_numbers = true)]
        weight: i64,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// List the apps (each with a token or a weight) and their weights.
    Apps {
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// List the circuit breakers (`circuits`), or close one (`circuits reset NAME`).
    Circuits {
        /// `reset`: close the circuit of ROUTE_NAME now.
        #[arg(value_parser = ["reset"], requires = "route_name")]
        action: Option<String>,
        /// The route name whose circuit to reset.
        route_name: Option<String>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
}

impl AdminCommand {
    pub async fn run(self) -> Result<(), Failure> {
        match self {
            AdminCommand::Overview { endpoint } => {
                let overview = endpoint
                    .call(Method::GET, "/v1/admin/overview", None)
                    .await?;
                endpoint.print(&overview, print_overview);
            }
            AdminCommand::Limits {
                kind,
                limit,
                app,
                subject,
                window,
                endpoint,
            } => {
                let body = json!({"kind": kind, "limit": limit, "app": app,
                                  "usage_subject": subject, "window_seconds": window});
                let body = without_nulls(body);
                let set = endpoint
                    .call(Method::PUT, "/v1/admin/limits", Some(&body))
                    .await?;
                endpoint.print(&set, |set| {
                    output::line(format_args!("limit {} set", cell(&set["id"])))
                });
            }
            AdminCommand::Stop {
                state,
                app,
                endpoint,
            } => {
                let body = without_nulls(json!({"enabled": state == "on", "app": app}));
                let set = endpoint
                    .call(Method::PUT, "/v1/admin/emergency-stop", Some(&body))
                    .await?;
                endpoint.print(&set, |_| {
                    output::line(format_args!("emergency stop {state}"))
                });
            }
            AdminCommand::Resources {
                name,
                slots,
                endpoint,
            } => {
                let path = format!("/v1/admin/resources/{}", encode(&name));
                let set = endpoint
                    .call(Method::PUT, &path, Some(&json!({ "slots": slots })))
                    .await?;
                endpoint.print(&set, |_| {
                    output::line(format_args!("{name}: {slots} slots"))
                });
            }
            AdminCommand::Pause {
                task_type,
                endpoint,
            } => pause(&endpoint, &task_type, true).await?,
            AdminCommand::Resume {
                task_type,
                endpoint,
            } => pause(&endpoint, &task_type, false).await?,
            AdminCommand::Weight {
                app,
                weight,
                endpoint,
            } => {
                let path = format!("/v1/admin/apps/{}/weight", encode(&app));
                let set = endpoint
                    .call(Method::PUT, &path, Some(&json!({ "weight": weight })))
                    .await?;
                endpoint.print(&set, |set| {
                    output::line(format_args!("{app}: weight {}", cell(&set["weight"])))
                });
            }
            AdminCommand::Apps { endpoint } => {
                let list = endpoint.call(Method::GET, "/v1/admin/apps", None).await?;
                endpoint.print(&list, |list| {
                    let fields = &["app", "weight", "updated_at"];
                    table::print(fields, &items(&list["items"], fields));
                });
            }
            AdminCommand::Circuits {
                route_name,
                endpoint,
                ..
            } => circuits(&endpoint, route_name.as_deref()).await?,
        }
        Ok(())
    }
}

async fn pause(endpoint: &Endpoint, task_type: &str, paused: bool) -> Result<(), Failure> {
    let path = format!("/v1/admin/task-types/{}/pause", encode(task_type));
    let set = endpoint
        .call(Method::PUT, &path, Some(&json!({ "paused": paused })))
        .await?;
    endpoint.print(&set, |_| {
        output::line(format_args!(
            "{task_type}: {}",
            if paused { "paused" } else { "resumed" }
        ))
    });
    Ok(())
}

/// Lists the circuits, or resets `reset`'s.
async fn circuits(endpoint: &Endpoint, reset: Option<&str>) -> Result<(), Failure> {
    let Some(name) = reset else {
        let list = endpoint
            .call(Method::GET, "/v1/admin/circuits", None)
            .await?;
        endpoint.print(&list, |list| {
            let fields = CIRCUIT_FIELDS;
            table::print(fields, &items(&list["items"], fields));
        });
        return Ok(());
    };
    let path = format!("/v1/admin/circuits/{}/reset", encode(name));
    let reset = endpoint.call(Method::POST, &path, None).await?;
    endpoint.print(&reset, |_| {
        output::line(format_args!("{name}: circuit closed"))
    });
    Ok(())
}

/// The columns of a circuit table.
const CIRCUIT_FIELDS: &[&str] = &[
    "route_name",
    "state",
    "consecutive_failures",
    "opened_at",
    "retry_at",
];

/// The `fields` of each item of the array `list`, as table rows.
fn items(list: &Value, fields: &[&str]) -> Vec<Vec<String>> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| fields.iter().map(|f| cell(&item[*f])).collect())
        .collect()
}

/// The body without its null fields (absent means "none" to the API).
fn without_nulls(mut body: Value) -> Value {
    if let Some(object) = body.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
    body
}

fn print_overview(o: &Value) {
    let rows = |key: &str, fields: &[&str]| items(&o[key], fields);
    let sections: [(&str, &str, &[&str]); 8] = [
        ("Queue", "queue", &["task_type", "state", "count"]),
        (
            "Replicas",
            "replicas",
            &["name", "started_at", "heartbeat_at"],
        ),
        ("Resources", "resources", &["name", "slots", "in_use"]),
        (
            "Limits",
            "limits",
            &["id", "kind", "app", "usage_subject", "limit", "used"],
        ),
        ("Emergency stops", "emergency_stops", &["app", "enabled_at"]),
        (
            "Paused task types",
            "paused_task_types",
            &["task_type", "paused_at"],
        ),
        ("Circuits", "circuits", CIRCUIT_FIELDS),
        (
            "Refusals today",
            "refusals_today",
            &["code", "app", "count"],
        ),
    ];
    for (n, (title, key, fields)) in sections.into_iter().enumerate() {
        if n > 0 {
            output::line("");
        }
        output::line(title);
        table::print(fields, &rows(key, fields));
    }
    // One line, not a table: the webhooks figures are cluster-wide totals.
    let hooks = &o["webhooks"];
    if hooks.is_object() {
        output::line("");
        output::line("Webhooks");
        let fields = [
            "endpoints",
            "disabled_endpoints",
            "pending",
            "oldest_pending_seconds",
            "failed",
        ];
        let row = fields.iter().map(|f| cell(&hooks[*f])).collect();
        table::print(&fields, &[row]);
    }
}
