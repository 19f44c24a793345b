//! `tasklane tasks submit`: one task from flags (`POST /v1/tasks`, optionally waiting for
//! it), or many from stdin with `--batch` (`POST /v1/tasks/batch`, in chunks the server
//! takes). Every input is read and parsed before anything is sent, so bad input sends
//! nothing.

use std::io::BufRead;

use reqwest::Method;
use serde_json::{json, Map, Value};

use super::client::{Endpoint, Failure};
use super::output;
use super::table::{self, cell};

/// The most items one `POST /v1/tasks/batch` takes.
const BATCH_LIMIT: usize = crate::task::bounds::MAX_BATCH;

#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// The task type (a name `GET /v1/whoami` lists); not with `--batch`.
    #[arg(required_unless_present = "batch")]
    task_type: Option<String>,
    /// The owner inside the app.
    #[arg(long, required_unless_present = "batch")]
    scope: Option<String>,
    /// The effect key: the same key again joins or replays the same task.
    #[arg(long, required_unless_present = "batch")]
    key: Option<String>,
    /// The input: JSON, or `@FILE` to read it from a file; default `{}`.
    #[arg(long)]
    input: Option<String>,
    /// Wait up to this many seconds (0..60) for the task to finish before answering.
    #[arg(long, value_name = "SECONDS")]
    wait: Option<u32>,
    #[arg(long, value_parser = ["local_only", "external_allowed"])]
    privacy: Option<String>,
    /// -100..100; higher is claimed first.
    #[arg(long, allow_negative_numbers = true)]
    priority: Option<i32>,
    /// Who pays: the account whose limits and budget the task counts against.
    #[arg(long)]
    usage_subject: Option<String>,
    /// The object the task is about (`source_id`).
    #[arg(long)]
    source: Option<String>,
    /// Read one submit body (JSON, as `POST /v1/tasks` takes) per line on stdin and
    /// send them through the batch route; one line of output per item.
    #[arg(
        long,
        conflicts_with_all = ["task_type", "scope", "key", "input", "wait", "privacy",
            "priority", "usage_subject", "source"]
    )]
    batch: bool,
    #[command(flatten)]
    pub endpoint: Endpoint,
}

impl SubmitArgs {
    pub async fn run(self) -> Result<(), Failure> {
        self.endpoint.token()?;
        match self.batch {
            true => {
                let bodies = read_lines(std::io::stdin().lock())?;
                submit_batch(&self.endpoint, bodies).await
            }
            false => self.submit_one().await,
        }
    }

    async fn submit_one(self) -> Result<(), Failure> {
        let mut body = Map::new();
        let required = [
            ("task_type", self.task_type),
            ("scope_id", self.scope),
            ("effect_key", self.key),
        ];
        let optional = [
            ("usage_subject", self.usage_subject),
            ("source_id", self.source),
            ("privacy", self.privacy),
        ];
        for (name, value) in required.into_iter().chain(optional) {
            if let Some(value) = value {
                body.insert(name.into(), Value::String(value));
            }
        }
        body.insert("input".into(), input_of(self.input.as_deref())?);
        if let Some(priority) = self.priority {
            body.insert("priority".into(), json!(priority));
        }
        let path = match self.wait {
            Some(seconds) => format!("/v1/tasks?wait={seconds}"),
            None => "/v1/tasks".to_owned(),
        };
        let task = self
            .endpoint
            .call(Method::POST, &path, Some(&Value::Object(body)))
            .await?;
        self.endpoint.print(&task, table::print_task);
        Ok(())
    }
}

/// `--input`: inline JSON, or `@FILE`; none is `{}`.
fn input_of(input: Option<&str>) -> Result<Value, Failure> {
    let Some(input) = input else {
        return Ok(json!({}));
    };
    let (text, from) = match input.strip_prefix('@') {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Usage(format!("--input @{path}: cannot read it: {e}")))?;
            (text, format!("--input @{path}"))
        }
        None => (input.to_owned(), "--input".to_owned()),
    };
    serde_json::from_str(&text).map_err(|e| Failure::Usage(format!("{from}: not JSON: {e}")))
}

/// Every non-blank line as JSON, with its line number (what the result rows name); the
/// first that is not JSON names its line number.
fn read_lines(reader: impl BufRead) -> Result<Vec<(usize, Value)>, Failure> {
    let mut bodies = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| Failure::Usage(format!("stdin: cannot read it: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let body = serde_json::from_str(&line)
            .map_err(|e| Failure::Usage(format!("stdin line {}: not JSON: {e}", index + 1)))?;
        bodies.push((index + 1, body));
    }
    if bodies.is_empty() {
        return Err(Failure::Usage("--batch: no submit bodies on stdin".into()));
    }
    Ok(bodies)
}

/// Sends `bodies` in chunks of [`BATCH_LIMIT`], prints one row per item (a chunk's rows
/// before a later chunk fails), and fails with 1 when any item was refused.
async fn submit_batch(endpoint: &Endpoint, bodies: Vec<(usize, Value)>) -> Result<(), Failure> {
    let total = bodies.len();
    let mut refused = 0;
    if !endpoint.json {
        output::line(format_args!("{:<4}  {:<6}  ID OR CODE", "LINE", "STATUS"));
    }
    for chunk in bodies.chunks(BATCH_LIMIT) {
        let tasks: Vec<&Value> = chunk.iter().map(|(_, body)| body).collect();
        let answer = endpoint
            .call(
                Method::POST,
                "/v1/tasks/batch",
                Some(&json!({ "tasks": tasks })),
            )
            .await?;
        // One item per task sent, in order; anything else cannot be reported per line.
        let items = match answer["items"].as_array() {
            Some(items) if items.len() == chunk.len() => items,
            _ => {
                return Err(Failure::Unavailable {
                    url: endpoint.url.clone(),
                    reason: format!("the batch answer does not hold {} items", chunk.len()),
                })
            }
        };
        for ((number, _), item) in chunk.iter().zip(items) {
            let accepted = matches!(item["status"].as_u64(), Some(200 | 202));
            refused += usize::from(!accepted);
            match endpoint.json {
                true => output::line(item),
                false => output::line(format_args!(
                    "{number:<4}  {:<6}  {}",
                    cell(&item["status"]),
                    cell(if accepted { &item["id"] } else { &item["code"] })
                )),
            }
        }
    }
    match refused {
        0 => Ok(()),
        refused => Err(Failure::ItemsRefused { refused, total }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_input_is_json_and_a_bad_one_is_a_usage_error_naming_the_flag() {
        assert_eq!(input_of(None).unwrap(), json!({}));
        assert_eq!(input_of(Some("[1,2]")).unwrap(), json!([1, 2]));
        let bad = input_of(Some("{nope")).unwrap_err();
        assert!(matches!(&bad, Failure::Usage(m) if m.starts_with("--input: not JSON")));
        let missing = input_of(Some("@/nonexistent/input.json")).unwrap_err();
        assert!(
            matches!(&missing, Failure::Usage(m) if m.contains("@/nonexistent/input.json")),
            "{missing}"
        );
    }

    #[test]
    fn batch_lines_skip_blanks_and_a_bad_line_is_named_by_number() {
        let good = read_lines("{\"a\":1}\n\n{\"b\":2}\n".as_bytes()).unwrap();
        assert_eq!(good, [(1, json!({"a": 1})), (3, json!({"b": 2}))]);
        let bad = read_lines("{\"a\":1}\n{oops\n".as_bytes()).unwrap_err();
        assert!(
            matches!(&bad, Failure::Usage(m) if m.starts_with("stdin line 2: not JSON")),
            "{bad}"
        );
        assert!(matches!(
            read_lines("\n".as_bytes()),
            Err(Failure::Usage(_))
        ));
    }
}
