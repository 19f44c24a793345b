//! The API key of an `openai` route: read once, at start, from `api_key_env` or
//! `api_key_file`, into the `Authorization` header every call sends. Errors name the
//! variable or file, never the key.

use anyhow::Context as _;
use reqwest::header::HeaderValue;

use crate::task::routes::RouteSpec;
use crate::task::TaskType;

/// Checks that every `openai` route's key can be read, so a bad file is refused
/// before anything starts (the caller names the file).
pub fn check_keys<'a>(types: impl IntoIterator<Item = &'a TaskType>) -> anyhow::Result<()> {
    for task_type in types {
        for (i, spec) in task_type.routes.iter().enumerate() {
            api_key(spec)
                .with_context(|| format!("task type {:?}: routes[{i}]", task_type.name))?;
        }
    }
    Ok(())
}

/// The route's `Authorization: Bearer` header, from `api_key_env` or `api_key_file`.
/// Errors name the variable or file, never the key.
pub(super) fn api_key(spec: &RouteSpec) -> anyhow::Result<Option<HeaderValue>> {
    let key = if let Some(var) = &spec.api_key_env {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => key,
            _ => anyhow::bail!("api_key_env: the variable {var} is not set or empty"),
        }
    } else if let Some(path) = &spec.api_key_file {
        let key = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("api_key_file: cannot read {}: {e}", path.display()))?;
        if key.trim().is_empty() {
            anyhow::bail!("api_key_file: {} is empty", path.display());
        }
        key
    } else {
        return Ok(None);
    };
    let mut header = HeaderValue::try_from(format!("Bearer {}", key.trim()))
        .map_err(|_| anyhow::anyhow!("the API key holds characters a header cannot carry"))?;
    header.set_sensitive(true);
    Ok(Some(header))
}
