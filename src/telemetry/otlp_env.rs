//! Which signals go over OTLP, and where, from the standard variables, checked at start.
//! The exporter resolves endpoints (`OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT` as
//! given, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` or `/v1/metrics`) and
//! headers itself; this module decides whether a signal is exported at all (only when
//! one of its endpoints is set: an unset collector is no export, not localhost), and
//! refuses what the exporter would silently ignore or fail on later. Messages show at
//! most a URL's origin and never a header value: both can carry credentials.

use std::time::Duration;

use anyhow::Context as _;

use super::{headers, otlp_client};

pub const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
pub const HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
pub const CERTIFICATE: &str = "OTEL_EXPORTER_OTLP_CERTIFICATE";
pub const PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
pub const METRIC_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";
pub const TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// One export request's timeout unless `OTEL_EXPORTER_OTLP_[SIGNAL_]TIMEOUT` says
/// otherwise (the specification's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Client certificates (mutual TLS) are not implemented; set, they are refused rather
/// than ignored.
const CLIENT_AUTH: &[&str] = &[
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
];
/// Metrics are pushed this often unless `OTEL_METRIC_EXPORT_INTERVAL` says otherwise
/// (the specification's default is 60 s; 15 s matches a usual scrape interval).
pub const DEFAULT_METRIC_INTERVAL: Duration = Duration::from_secs(15);

/// An OTLP signal and its variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    fn var(self, suffix: &str) -> String {
        format!("OTEL_EXPORTER_OTLP_{}_{suffix}", self.name())
    }
}

/// One exported signal: where it goes (the origin, for the log), the extra CA its
/// collector's certificate may be signed by, and how long one export request may take.
#[derive(Debug, Clone)]
pub struct Export {
    pub origin: String,
    pub ca_pem: Option<Vec<u8>>,
    pub timeout: Duration,
}

/// `signal`'s export from the environment: `None` when neither its endpoint nor the
/// base endpoint is set; an error naming the variable when one is wrong.
pub fn signal(signal: Signal) -> anyhow::Result<Option<Export>> {
    refuse_client_auth()?;
    if !exporter_chosen(signal)? {
        return Ok(None);
    }
    let specific = signal.var("ENDPOINT");
    let endpoint = [specific.as_str(), ENDPOINT]
        .into_iter()
        .find_map(|var| non_empty(var).map(|value| (var, value)));
    let Some((var, endpoint)) = endpoint else {
        return Ok(None);
    };
    let origin = check_endpoint(var, &endpoint)?;
    for var in [signal.var("HEADERS"), HEADERS.to_owned()] {
        if let Some(value) = non_empty(&var) {
            headers::check(&var, &value)?;
        }
    }
    for var in [signal.var("PROTOCOL"), PROTOCOL.to_owned()] {
        if let Some(value) = non_empty(&var) {
            anyhow::ensure!(
                value == "http/protobuf",
                "{var}={value}: this build exports OTLP over HTTP with protobuf only \
                 (http/protobuf)"
            );
        }
    }
    let certificate = signal.var("CERTIFICATE");
    let ca_pem = match [certificate.as_str(), CERTIFICATE]
        .into_iter()
        .find_map(|var| non_empty(var).map(|value| (var, value)))
    {
        Some((var, path)) => Some(read_ca(var, &path)?),
        None => None,
    };
    let timeout = match [signal.var("TIMEOUT"), TIMEOUT.to_owned()]
        .into_iter()
        .find_map(|var| non_empty(&var).map(|value| (var, value)))
    {
        Some((var, value)) => millis(&var, &value)?,
        None => DEFAULT_TIMEOUT,
    };
    Ok(Some(Export {
        origin,
        ca_pem,
        timeout,
    }))
}

/// Whether `OTEL_{TRACES,METRICS}_EXPORTER` and `OTEL_SDK_DISABLED` leave `signal` to
/// OTLP: `otlp` (or unset) does, `none` or a disabled SDK does not; any other exporter
/// is not built in, so it is refused rather than ignored.
fn exporter_chosen(signal: Signal) -> anyhow::Result<bool> {
    if non_empty("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    let var = format!("OTEL_{}_EXPORTER", signal.name());
    match non_empty(&var).as_deref().map(str::trim) {
        None | Some("otlp") => Ok(true),
        Some("none") => Ok(false),
        Some(other) => {
            anyhow::bail!("{var}={other}: this build exports over OTLP only (otlp or none)")
        }
    }
}

/// A positive number of milliseconds, the unit of every OTLP duration variable.
fn millis(var: &str, value: &str) -> anyhow::Result<Duration> {
    let millis = value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms > 0)
        .with_context(|| format!("{var}={value} is not a positive number of milliseconds"))?;
    Ok(Duration::from_millis(millis))
}

/// `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds, > 0), or tasklane's default.
pub fn metric_interval() -> anyhow::Result<Duration> {
    let Some(value) = non_empty(METRIC_INTERVAL) else {
        return Ok(DEFAULT_METRIC_INTERVAL);
    };
    millis(METRIC_INTERVAL, &value)
}

/// The origin of `value` (the variable `var`'s), or why it is not an http(s) URL with a
/// host. Only the origin is ever shown: a path or user info may be a secret.
pub fn check_endpoint(var: &str, value: &str) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(value.trim())
        .ok()
        .filter(|url| url.host_str().is_some())
        .with_context(|| {
            format!("{var} is not a URL with a host (e.g. https://otel-collector:4318)")
        })?;
    anyhow::ensure!(
        matches!(url.scheme(), "http" | "https"),
        "{var} must be an http:// or https:// URL (OTLP over HTTP); {} is not",
        url.origin().ascii_serialization()
    );
    // The exporter parses the raw value as an `http::Uri`, which is stricter than a URL
    // (no surrounding whitespace, no characters a URL would percent-encode), and its
    // error quotes the whole value: refuse here, showing the origin only.
    anyhow::ensure!(
        value.parse::<axum::http::Uri>().is_ok(),
        "{var} is not a valid URI as written (whitespace, or characters that must be \
         percent-encoded?); its origin is {}",
        url.origin().ascii_serialization()
    );
    Ok(url.origin().ascii_serialization())
}

/// The PEM certificates in the file `path` names, checked to hold at least one.
fn read_ca(var: &str, path: &str) -> anyhow::Result<Vec<u8>> {
    let pem = std::fs::read(path).with_context(|| format!("{var}: read {path}"))?;
    otlp_client::certificates(&pem).with_context(|| format!("{var}: {path}"))?;
    Ok(pem)
}

fn refuse_client_auth() -> anyhow::Result<()> {
    if let Some(var) = CLIENT_AUTH.iter().find(|var| non_empty(var).is_some()) {
        anyhow::bail!(
            "{var} is set, but client certificates (mutual TLS) to the collector are not \
             supported; authenticate with a header (OTEL_EXPORTER_OTLP_HEADERS) instead"
        );
    }
    Ok(())
}

fn non_empty(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_or_https_urls_and_only_their_origin_is_shown() {
        assert_eq!(
            check_endpoint(ENDPOINT, "https://otel.example:4318/otlp").unwrap(),
            "https://otel.example:4318"
        );
        let error = check_endpoint(ENDPOINT, "collector:4318")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("OTEL_EXPORTER_OTLP_ENDPOINT is not a URL"),
            "{error}"
        );
        let error = check_endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://u:SECRET@x/y")
            .unwrap_err()
            .to_string();
        assert!(error.contains("TRACES_ENDPOINT must be"), "{error}");
        assert!(!error.contains("SECRET"), "{error}");
        // A mounted secret's trailing newline: a URL once trimmed, not a URI as written.
        let error = check_endpoint(ENDPOINT, "https://u:SECRET@collector:4318\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a valid URI as written"), "{error}");
        assert!(!error.contains("SECRET"), "{error}");
    }
}
