//! The resource every signal carries: the SDK's detectors read `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` (e.g. `deployment.environment.name=prod,k8s.pod.name=...`)
//! themselves; tasklane adds its default service name and refuses, at start, an
//! attributes list the SDK would partly drop without a word.

use opentelemetry::Key;
use opentelemetry_sdk::Resource;

pub const RESOURCE_ATTRIBUTES: &str = "OTEL_RESOURCE_ATTRIBUTES";

/// Why `value` is not a list of `key=value` attributes, or `Ok`. Messages name the
/// entry's position, not its text.
pub fn check(value: &str) -> anyhow::Result<()> {
    for (index, entry) in value.split_terminator(',').enumerate() {
        let ok = entry
            .split_once('=')
            .is_some_and(|(key, _)| !key.trim().is_empty());
        anyhow::ensure!(
            ok,
            "{RESOURCE_ATTRIBUTES}: entry {} is not key=value (a comma-separated list, \
             e.g. deployment.environment.name=prod)",
            index + 1
        );
    }
    Ok(())
}

/// The process's resource: what the environment says, with `service.name` `tasklane`
/// when neither `OTEL_SERVICE_NAME` nor the attributes name one.
pub fn from_env() -> anyhow::Result<Resource> {
    if let Ok(value) = std::env::var(RESOURCE_ATTRIBUTES) {
        check(&value)?;
    }
    let detected = Resource::builder().build();
    let named = detected
        .get(&Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    Ok(if named {
        detected
    } else {
        Resource::builder().with_service_name("tasklane").build()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_lists_pass_and_malformed_entries_are_refused() {
        check("deployment.environment.name=prod,team=core").unwrap();
        check("").unwrap();
        let error = check("team=core,prod").unwrap_err().to_string();
        assert!(
            error.starts_with("OTEL_RESOURCE_ATTRIBUTES: entry 2"),
            "{error}"
        );
        assert!(check("=prod").is_err());
    }
}
