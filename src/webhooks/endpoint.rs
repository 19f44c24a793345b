//! What an app may register as an endpoint: a name usable in a path, an http(s) URL,
//! a non-empty subset of the terminal events, and optionally its own secret. Pure
//! validation; each refusal names its field (422 `validation_failed`) and never
//! echoes a secret.

use crate::task::bounds::Invalid;

use super::signature::{self, SecretError};

/// The terminal events an endpoint can subscribe to.
pub const EVENTS: [&str; 3] = ["task.succeeded", "task.failed", "task.cancelled"];

/// Most bytes of an endpoint's name.
pub const MAX_NAME: usize = 100;
/// Most bytes of an endpoint's URL.
pub const MAX_URL: usize = 2048;

/// A name: 1..100 of `A-Z a-z 0-9 . _ -` (it is a path segment of every route).
pub fn name(value: &str) -> Result<(), Invalid> {
    let ok = (1..=MAX_NAME).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(
            "name",
            format!("must be 1 to {MAX_NAME} of A-Z, a-z, 0-9, '.', '_', '-'"),
        ))
    }
}

/// An absolute `http` or `https` URL with a host and no credentials, ≤ 2048 bytes.
/// Where it points is checked at delivery time (`guard`), not here: DNS can change.
pub fn url(value: &str) -> Result<(), Invalid> {
    let invalid = |message: &str| Err(Invalid::new("url", message));
    if value.len() > MAX_URL {
        return invalid("must be at most 2048 bytes");
    }
    let Ok(parsed) = reqwest::Url::parse(value) else {
        return invalid("must be an absolute http or https URL");
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return invalid("the scheme must be http or https");
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return invalid("must name a host");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return invalid("must not carry credentials");
    }
    Ok(())
}

/// 1..3 distinct terminal events; returned in the canonical order.
pub fn events(value: &[String]) -> Result<Vec<String>, Invalid> {
    if value.is_empty() {
        return Err(Invalid::new("events", "at least one event is needed"));
    }
    if let Some(unknown) = value.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        return Err(Invalid::new(
            "events",
            format!(
                "unknown event {:?}; known: {}",
                crate::task::bounds::truncate(unknown, 64),
                EVENTS.join(", ")
            ),
        ));
    }
    Ok(EVENTS
        .iter()
        .filter(|e| value.iter().any(|v| v == *e))
        .map(|e| (*e).to_owned())
        .collect())
}

/// A secret given by the app: `whsec_` + base64 of 24..64 bytes.
pub fn secret(value: &str) -> Result<(), Invalid> {
    signature::key_of(value).map(drop).map_err(|error| {
        Invalid::new(
            "secret",
            match error {
                SecretError::Format => "must be whsec_ followed by base64 of 24 to 64 bytes",
                SecretError::Length => "the base64 after whsec_ must be of 24 to 64 bytes",
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_path_segments() {
        assert!(name("billing-prod_1.v2").is_ok());
        for bad in ["", "a/b", "a b", "é", &"x".repeat(101)] {
            assert_eq!(name(bad).unwrap_err().field, "name", "{bad:?}");
        }
    }

    #[test]
    fn urls_must_be_http_with_a_host() {
        assert!(url("https://hooks.example.com/tasklane?x=1").is_ok());
        assert!(url("http://127.0.0.1:9000/").is_ok());
        for bad in [
            "ftp://example.com/",
            "example.com/hook",
            "http://",
            "https://user:pw@example.com/",
            "file:///etc/passwd",
            &format!("https://example.com/{}", "a".repeat(2048)),
        ] {
            assert_eq!(url(bad).unwrap_err().field, "url", "{bad:?}");
        }
    }

    #[test]
    fn events_are_a_subset_in_order() {
        let given = vec!["task.failed".to_owned(), "task.succeeded".to_owned()];
        assert_eq!(events(&given).unwrap(), ["task.succeeded", "task.failed"]);
        assert!(events(&[]).is_err());
        assert!(events(&["task.running".to_owned()]).is_err());
        let twice = vec!["task.failed".to_owned(), "task.failed".to_owned()];
        assert_eq!(events(&twice).unwrap(), ["task.failed"]);
    }

    #[test]
    fn secrets_are_checked_without_echo() {
        assert!(secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
        let refused = secret("whsec_c2hvcnQ=").unwrap_err();
        assert_eq!(refused.field, "secret");
        assert!(!refused.message.contains("c2hvcnQ"));
        assert!(secret("sk_live_nope").is_err());
    }
}
