//! `tasklane tasks list|get|events|attempts|cancel|retry` (and `submit`, in `submit.rs`).

use reqwest::Method;
use serde_json::Value;

use super::client::{encode, Endpoint, Failure};
use super::output;
use super::table::{self, cell};

#[derive(Debug, clap::Subcommand)]
pub enum TasksCommand {
    /// Submit a task (`POST /v1/tasks`), or with `--batch` one per stdin line.
    Submit(super::submit::SubmitArgs),
    /// The token's tasks, newest first (one page; `--cursor` for the next).
    List {
        #[arg(long)]
        scope: Option<String>,
        #[arg(long)]
        state: Option<String>,
        #[arg(long = "type")]
        task_type: Option<String>,
        /// 1..100.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// One task.
    Get {
        id: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// A task's events; with `--follow`, as they happen until the terminal one.
    Events {
        id: String,
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// A task's attempts, oldest first: route, provider, model, outcome, error, tokens.
    Attempts {
        id: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Cancel: a queued task now, a running one cooperatively.
    Cancel {
        id: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
    /// Queue a failed or cancelled task again with a fresh attempt budget.
    Retry {
        id: String,
        #[command(flatten)]
        endpoint: Endpoint,
    },
}

impl TasksCommand {
    pub async fn run(self) -> Result<(), Failure> {
        match self {
            TasksCommand::Submit(args) => args.run().await,
            TasksCommand::List {
                scope,
                state,
                task_type,
                limit,
                cursor,
                endpoint,
            } => {
                let mut query = format!("?limit={limit}");
                for (name, value) in [
                    ("scope_id", scope),
                    ("state", state),
                    ("task_type", task_type),
                    ("cursor", cursor),
                ] {
                    if let Some(value) = value {
                        query.push_str(&format!("&{name}={}", encode(&value)));
                    }
                }
                let page = endpoint
                    .call(Method::GET, &format!("/v1/tasks{query}"), None)
                    .await?;
                endpoint.print(&page, print_page);
                Ok(())
            }
            TasksCommand::Get { id, endpoint } => {
                let task = endpoint
                    .call(Method::GET, &task_path(&id, ""), None)
                    .await?;
                endpoint.print(&task, table::print_task);
                Ok(())
            }
            TasksCommand::Events {
                id,
                follow,
                endpoint,
            } => match follow {
                false => {
                    let page = endpoint
                        .call(Method::GET, &task_path(&id, "/events"), None)
                        .await?;
                    endpoint.print(&page, |page| {
                        for event in page["items"].as_array().into_iter().flatten() {
                            print_event(event, false);
                        }
                    });
                    Ok(())
                }
                true => follow_events(&endpoint, &id).await,
            },
            TasksCommand::Attempts { id, endpoint } => {
                let page = endpoint
                    .call(Method::GET, &task_path(&id, "/attempts"), None)
                    .await?;
                endpoint.print(&page, print_attempts);
                Ok(())
            }
            TasksCommand::Cancel { id, endpoint } => {
                let task = endpoint
                    .call(Method::POST, &task_path(&id, "/cancel"), None)
                    .await?;
                endpoint.print(&task, table::print_task);
                Ok(())
            }
            TasksCommand::Retry { id, endpoint } => {
                let task = endpoint
                    .call(Method::POST, &task_path(&id, "/retry"), None)
                    .await?;
                endpoint.print(&task, table::print_task);
                Ok(())
            }
        }
    }
}

fn task_path(id: &str, rest: &str) -> String {
    format!("/v1/tasks/{}{rest}", encode(id))
}

/// Streams the task's events (Server-Sent Events) and prints each as it arrives; the
/// stream ends after the terminal event.
async fn follow_events(endpoint: &Endpoint, id: &str) -> Result<(), Failure> {
    let mut response = endpoint
        .send(
            Method::GET,
            &task_path(id, "/events"),
            None,
            Some("text/event-stream"),
        )
        .await?;
    let mut buffer = String::new();
    let mut terminal = false;
    loop {
        let chunk = response.chunk().await.map_err(|e| Failure::Unavailable {
            url: endpoint.origin(),
            reason: e.without_url().to_string(),
        })?;
        let Some(chunk) = chunk else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let data: String = frame
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if let Ok(event) = serde_json::from_str::<Value>(&data) {
                print_event(&event, endpoint.json);
                terminal |= TERMINAL.contains(&event["type"].as_str().unwrap_or_default());
            }
        }
    }
    // The server also ends a stream when it shuts down or the task is deleted: done
    // only when the terminal event came.
    if terminal {
        Ok(())
    } else {
        Err(Failure::Unavailable {
            url: endpoint.origin(),
            reason: "the event stream ended before the task finished".into(),
        })
    }
}

/// The events that end a task's stream.
const TERMINAL: [&str; 3] = ["task.succeeded", "task.failed", "task.cancelled"];

fn print_event(event: &Value, json: bool) {
    if json {
        output::line(event);
    } else {
        output::line(format_args!(
            "{:>4}  {}  {:<32}  {}",
            cell(&event["seq"]),
            cell(&event["at"]),
            cell(&event["type"]),
            cell(&event["data"])
        ));
    }
}

fn print_page(page: &Value) {
    let rows: Vec<Vec<String>> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            vec![
                cell(&t["id"]),
                cell(&t["task_type"]),
                cell(&t["scope_id"]),
                cell(&t["state"]),
                format!("{}/{}", cell(&t["attempt"]), cell(&t["max_attempts"])),
                cell(&t["created_at"]),
            ]
        })
        .collect();
    table::print(
        &["id", "type", "scope", "state", "attempt", "created"],
        &rows,
    );
    if let Some(cursor) = page["next_cursor"].as_str() {
        output::line(format_args!("next page: --cursor {cursor}"));
    }
}

fn print_attempts(page: &Value) {
    let rows: Vec<Vec<String>> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            vec![
                cell(&a["attempt"]),
                cell(&a["outcome"]),
                cell(&a["route"]),
                cell(&a["route_name"]),
                cell(&a["provider"]),
                cell(&a["model"]),
                cell(&a["response_model"]),
                cell(&a["error"]["code"]),
                cell(&a["usage"]["total_tokens"]),
                cell(&a["started_at"]),
                cell(&a["finished_at"]),
            ]
        })
        .collect();
    table::print(
        &[
            "attempt",
            "outcome",
            "route",
            "route name",
            "provider",
            "model",
            "answered by",
            "error",
            "tokens",
            "started",
            "finished",
        ],
        &rows,
    );
}
