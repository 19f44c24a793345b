//! `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` checked at start. The SDK reads
//! them itself when the tracer provider is built, but falls back to sampling everything
//! on a value it does not know (with a warning nobody reads): a ratio meant to cut a
//! hosted backend's bill would silently be 100 %. Refused here instead, naming the
//! variable.

pub const SAMPLER: &str = "OTEL_TRACES_SAMPLER";
pub const SAMPLER_ARG: &str = "OTEL_TRACES_SAMPLER_ARG";

/// The samplers this SDK implements.
const KNOWN: &[&str] = &[
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
];

/// Checks the sampler and its argument (`None` = unset).
pub fn check(sampler: Option<&str>, arg: Option<&str>) -> anyhow::Result<()> {
    let Some(sampler) = sampler.filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    anyhow::ensure!(
        KNOWN.contains(&sampler),
        "{SAMPLER}={sampler} is not a sampler this build has; use one of {}",
        KNOWN.join(", ")
    );
    if sampler.ends_with("traceidratio") {
        let ratio = arg.map(str::trim).and_then(|a| a.parse::<f64>().ok());
        anyhow::ensure!(
            ratio.is_some_and(|r| (0.0..=1.0).contains(&r)),
            "{SAMPLER_ARG} must be a ratio from 0 to 1 with {SAMPLER}={sampler} (e.g. 0.1 \
             keeps one trace in ten)"
        );
    }
    Ok(())
}

/// Checks the process's environment.
pub fn check_env() -> anyhow::Result<()> {
    check(
        std::env::var(SAMPLER).ok().as_deref(),
        std::env::var(SAMPLER_ARG).ok().as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_samplers_and_ratios_pass() {
        check(None, None).unwrap();
        check(Some("parentbased_traceidratio"), Some("0.25")).unwrap();
        check(Some("traceidratio"), Some("1")).unwrap();
        check(Some("always_off"), None).unwrap();
    }

    #[test]
    fn unknown_samplers_and_bad_ratios_are_refused_naming_the_variable() {
        let error = check(Some("ratio"), Some("0.1")).unwrap_err().to_string();
        assert!(error.starts_with("OTEL_TRACES_SAMPLER=ratio"), "{error}");
        for arg in [None, Some("1.5"), Some("ten percent"), Some("-0.1")] {
            let error = check(Some("parentbased_traceidratio"), arg)
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with("OTEL_TRACES_SAMPLER_ARG"),
                "{arg:?}: {error}"
            );
        }
    }
}
