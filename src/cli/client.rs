//! The HTTP side of the CLI: where the API is, its token, and what a failed call means.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::output;

/// Where the API is and the token to call it with (shared flags of every command).
#[derive(Debug, Clone, clap::Args)]
pub struct Endpoint {
    /// Base URL of a replica with the `api` role.
    #[arg(long, env = "TASKLANE_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// API token (`tl_...`); never printed. Checked by the command, not by clap, so that
    /// its absence names both ways to give it.
    #[arg(long, env = "TASKLANE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The API answered 4xx: what the caller asked was refused.
    #[error("refused ({status}): {code}: {detail}")]
    Refused {
        status: u16,
        code: String,
        detail: String,
    },
    /// The API could not be reached, or answered 5xx.
    #[error("tasklane at {url} unavailable: {reason}")]
    Unavailable { url: String, reason: String },
    /// A batch was answered, but some of its items were refused (each printed).
    #[error("{refused} of {total} items refused")]
    ItemsRefused { refused: usize, total: usize },
    /// The command line or its input is wrong (no token, an `--input` that is not
    /// JSON, an unreadable file): nothing was sent.
    #[error("{0}")]
    Usage(String),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Refused { .. } | Failure::ItemsRefused { .. } => 1,
            Failure::Unavailable { .. } => 3,
            Failure::Usage(_) => 2,
        }
    }
}

impl Endpoint {
    /// Calls `method path` with `body`; the JSON answer of a 2xx (null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
        let response = self.send(method, path, body, None).await?;
        let bytes = response.bytes().await.map_err(|e| self.unavailable(e))?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// Sends a request and turns a non-2xx answer into a [`Failure`]; the response of a
    /// 2xx, unread (a stream can be read as it arrives).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        accept: Option<&str>,
    ) -> Result<reqwest::Response, Failure> {
        let token = self.token()?;
        let url = format!("{}{path}", self.url.trim_end_matches('/'));
        let mut request = reqwest::Client::new()
            .request(method, &url)
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        let response = request.send().await.map_err(|e| self.unavailable(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let problem: Value = response.json().await.unwrap_or(Value::Null);
        let text = |key: &str| problem[key].as_str().unwrap_or_default().to_owned();
        if status.is_server_error() {
            return Err(Failure::Unavailable {
                url: self.origin(),
                reason: format!("{status}: {}", text("detail")),
            });
        }
        Err(Failure::Refused {
            status: status.as_u16(),
            code: match text("code") {
                code if code.is_empty() => status_code_name(status),
                code => code,
            },
            detail: text("detail"),
        })
    }

    /// The token, or the usage error that says how to give one.
    pub fn token(&self) -> Result<&str, Failure> {
        match self.token.as_deref() {
            Some(token) if !token.is_empty() => Ok(token),
            _ => Err(Failure::Usage(
                "no API token: pass --token tl_... or set TASKLANE_TOKEN".into(),
            )),
        }
    }

    fn unavailable(&self, error: reqwest::Error) -> Failure {
        Failure::Unavailable {
            url: self.origin(),
            reason: error.without_url().to_string(),
        }
    }

    /// What may be printed of `--url`: its origin (user info and path may be secrets).
    pub fn origin(&self) -> String {
        reqwest::Url::parse(&self.url)
            .map(|url| url.origin().ascii_serialization())
            .unwrap_or_else(|_| "the given --url".to_owned())
    }

    /// Prints `value` as JSON when `--json` was given; else runs `table`.
    pub fn print(&self, value: &Value, table: impl FnOnce(&Value)) {
        if self.json {
            output::line(serde_json::to_string_pretty(value).unwrap_or_default());
        } else {
            table(value);
        }
    }
}

fn status_code_name(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("error")
        .to_lowercase()
        .replace(' ', "_")
}

/// `value` made safe for a query string or one path segment (a space is `%20`, which
/// both read as a space; form encoding's `+` would be a literal plus in a path).
pub fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}
