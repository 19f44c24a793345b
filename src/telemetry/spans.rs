//! W3C trace context across processes: a submit's `traceparent` header is stored with
//! the task, and every later span of the task (claim, attempt, upstream call, settle,
//! on any replica or remote worker) continues that trace.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The longest `traceparent` kept (the W3C form is 55 characters).
pub const MAX_TRACEPARENT: usize = 128;

/// `value` if it is a valid W3C `traceparent` (version 00 form, non-zero ids).
pub fn valid_traceparent(value: &str) -> Option<&str> {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = value.len() <= MAX_TRACEPARENT
        && parts.len() == 4
        && hex(parts[0], 2)
        && parts[0] != "ff"
        && hex(parts[1], 32)
        && parts[1].bytes().any(|b| b != b'0')
        && hex(parts[2], 16)
        && parts[2].bytes().any(|b| b != b'0')
        && hex(parts[3], 2);
    ok.then_some(value)
}

/// Makes `span` a child of the remote span `traceparent` names (nothing when absent or
/// invalid: the span then starts a trace of its own).
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(traceparent) = traceparent.and_then(valid_traceparent) else {
        return;
    };
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let parent = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(parent);
}

/// The `traceparent` of `span`, to store with a task or hand to a remote worker;
/// `None` when no trace is being recorded (no collector configured).
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_traceparents_are_kept() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(valid_traceparent(good), Some(good));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert_eq!(valid_traceparent(bad), None, "{bad:?}");
        }
    }
}
