//! One delivery attempt over HTTP: `POST url` with the Standard Webhooks headers, no
//! redirects followed, no proxy (a proxy would reach what the guard refuses), a hard
//! timeout, and every address the host resolves to checked by the guard (an IP literal
//! in the URL is checked here, since the client resolves no literal).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};

use super::guard::{AddressGuard, GuardedResolver, Refused};

/// What the receiver answered, or why there was no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Status {
        status: u16,
        retry_after: Option<String>,
    },
    /// No answer: refused address, connection failure, timeout (the text names no
    /// secret and no URL).
    NoAnswer(String),
}

/// The HTTP client deliveries share.
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    guard: Arc<AddressGuard>,
    timeout: Duration,
}

/// A signed message ready to send.
pub struct Message<'a> {
    pub url: &'a str,
    pub id: &'a str,
    pub timestamp: i64,
    pub signature: &'a str,
    pub body: Vec<u8>,
}

impl Sender {
    /// A sender whose connections pass `guard` and whose attempts end after `timeout`.
    pub fn new(guard: AddressGuard, timeout: Duration) -> anyhow::Result<Self> {
        let guard = Arc::new(guard);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .dns_resolver(Arc::new(GuardedResolver(guard.clone())))
            .build()?;
        Ok(Sender {
            client,
            guard,
            timeout,
        })
    }

    /// Sends `message` once.
    pub async fn send(&self, message: Message<'_>) -> Answer {
        // Parsed once: the client takes the parsed URL as it is.
        let Ok(url) = reqwest::Url::parse(message.url) else {
            return Answer::NoAnswer("the URL does not parse".into());
        };
        let literal = url.host_str().and_then(|host| {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .ok()
        });
        if let Some(ip) = literal.filter(|ip| !self.guard.permits(*ip)) {
            return Answer::NoAnswer(Refused(ip).to_string());
        }
        let request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, HeaderValue::from_static("tasklane-webhooks/1"))
            .header("webhook-id", message.id)
            .header("webhook-timestamp", message.timestamp.to_string())
            .header("webhook-signature", message.signature)
            .body(message.body);
        match request.send().await {
            Ok(response) => Answer::Status {
                status: response.status().as_u16(),
                retry_after: response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            },
            Err(error) => Answer::NoAnswer(describe(&error, self.timeout)),
        }
    }
}

/// The cause of a failed request without its URL (reqwest's own text includes it).
fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return format!("no answer within {} s", timeout.as_secs_f64());
    }
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(error);
    while let Some(inner) = cause {
        if let Some(refused) = inner.downcast_ref::<Refused>() {
            return refused.to_string();
        }
        cause = inner.source();
    }
    let kind = if error.is_connect() {
        "connection failed"
    } else if error.is_request() {
        "request failed"
    } else {
        "no answer"
    };
    match std::error::Error::source(error) {
        Some(source) => format!("{kind}: {source}"),
        None => kind.to_owned(),
    }
}
