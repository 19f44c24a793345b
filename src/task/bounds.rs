//! Validation bounds of every field a caller can set. Each bound is a named constant so
//! the HTTP layer, the store and the tests all check the same edge.

use std::ops::RangeInclusive;

/// Keys (scope, effect key, source, usage subject, app): 1..=200 bytes.
pub const KEY_BYTES: RangeInclusive<usize> = 1..=200;
/// Most items one batch submit takes.
pub const MAX_BATCH: usize = 1000;
pub const PRIORITY: RangeInclusive<i32> = -100..=100;
/// An app's weight in the claims' turns (see `task::app_weight`).
pub const APP_WEIGHT: RangeInclusive<i64> = 1..=100;
pub const MAX_ATTEMPTS: RangeInclusive<i32> = 1..=25;
pub const PROGRESS: RangeInclusive<i32> = 0..=100;
pub const LEASE_SECONDS: RangeInclusive<i64> = 1..=3600;
/// Queue deadline of one task: up to a week.
pub const DEADLINE_SECONDS: RangeInclusive<i64> = 1..=604_800;
/// Attempt timeout: up to a day.
pub const ATTEMPT_TIMEOUT_SECONDS: RangeInclusive<i64> = 1..=86_400;
/// Error messages are cut to this many bytes (on a character boundary).
pub const ERROR_MESSAGE_BYTES: usize = 1024;
/// Error codes reported by workers.
pub const ERROR_CODE_BYTES: RangeInclusive<usize> = 1..=64;
/// Default bound of a task's input (configurable per deployment).
pub const DEFAULT_INPUT_BYTES: usize = 1024 * 1024;
/// Results, snapshots: generous, but bounded.
pub const RESULT_BYTES: usize = 4 * 1024 * 1024;
pub const SNAPSHOT_BYTES: usize = 1024 * 1024;
/// Worker-emitted events in one heartbeat, and the size of each one's data.
pub const EVENTS_PER_HEARTBEAT: usize = 100;
pub const EVENT_DATA_BYTES: usize = 64 * 1024;
/// Page sizes of every listing.
pub const PAGE_SIZE: RangeInclusive<i64> = 1..=100;
/// Tasks one claim of a remote worker may take (the worker protocol's `max`).
pub const CLAIM_BATCH: RangeInclusive<i64> = 1..=100;
/// Tasks one claim of a replica's own workers may take (`--claim-batch`). Larger than a
/// remote worker's: a claim statement's fixed cost and its settle's are shared by the
/// tasks it takes, so one claim of 200 costs the database less a task than two of 100.
pub const IN_PROCESS_CLAIM_BATCH: RangeInclusive<i64> = 1..=256;

/// A field outside its bound: the field's name and what is wrong, for a 422.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Checks a key's length in bytes (and that PostgreSQL can store it).
pub fn key(field: &str, value: &str) -> Result<(), Invalid> {
    if !KEY_BYTES.contains(&value.len()) {
        return Err(Invalid::new(
            field,
            format!("must be 1 to {} bytes", KEY_BYTES.end()),
        ));
    }
    text(field, value)
}

/// PostgreSQL `text` and `jsonb` cannot hold U+0000: refused up front, by field.
pub fn text(field: &str, value: &str) -> Result<(), Invalid> {
    if value.contains('\0') {
        return Err(Invalid::new(field, "must not contain U+0000"));
    }
    Ok(())
}

/// The largest magnitude of a JSON number. `jsonb` keeps numbers as exact decimals, and
/// one next to `f64::MAX` written out in full can read back as out of range, which would
/// make the row unreadable (and its claim fail).
pub const JSON_NUMBER_MAGNITUDE: f64 = 1e300;

/// Checks that PostgreSQL can store a JSON value and hand it back: every string and
/// object key with [`text`], every number within [`JSON_NUMBER_MAGNITUDE`].
pub fn json(field: &str, value: &serde_json::Value) -> Result<(), Invalid> {
    match value {
        serde_json::Value::String(s) => text(field, s),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.abs() > JSON_NUMBER_MAGNITUDE => Err(Invalid::new(
                field,
                format!("numbers must be within ±{JSON_NUMBER_MAGNITUDE:e}"),
            )),
            _ => Ok(()),
        },
        serde_json::Value::Array(items) => items.iter().try_for_each(|item| json(field, item)),
        serde_json::Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| text(field, k).and_then(|_| json(field, v))),
        _ => Ok(()),
    }
}

/// Checks an integer against an inclusive range.
pub fn within<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: T,
    range: &RangeInclusive<T>,
) -> Result<(), Invalid> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(Invalid::new(
            field,
            format!("must be between {} and {}", range.start(), range.end()),
        ))
    }
}

/// Cuts `text` to at most `max` bytes without splitting a character.
pub fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_in_bytes_at_both_edges() {
        assert!(key("scope_id", "").is_err());
        assert!(key("scope_id", "a").is_ok());
        assert!(key("scope_id", &"a".repeat(200)).is_ok());
        assert!(key("scope_id", &"a".repeat(201)).is_err());
        // 100 two-byte characters are 200 bytes; one more is over.
        assert!(key("scope_id", &"é".repeat(100)).is_ok());
        assert!(key("scope_id", &format!("{}a", "é".repeat(100))).is_err());
    }

    #[test]
    fn ranges_include_their_edges() {
        assert!(within("priority", -100, &PRIORITY).is_ok());
        assert!(within("priority", 100, &PRIORITY).is_ok());
        assert!(within("priority", 101, &PRIORITY).is_err());
        assert!(within("priority", -101, &PRIORITY).is_err());
        assert!(within("max_attempts", 0, &MAX_ATTEMPTS).is_err());
        assert!(within("max_attempts", 25, &MAX_ATTEMPTS).is_ok());
        assert!(within("max_attempts", 26, &MAX_ATTEMPTS).is_err());
        let err = within("progress", 101, &PROGRESS).unwrap_err();
        assert_eq!(err.field, "progress");
    }

    #[test]
    fn nul_characters_are_refused_in_keys_and_json() {
        assert!(key("scope_id", "a\0b").is_err());
        assert!(json("input", &serde_json::json!({"a": ["ok", {"b\0": 1}]})).is_err());
        assert!(json("input", &serde_json::json!({"a": ["ok", "x\0"]})).is_err());
        assert!(json(
            "input",
            &serde_json::json!({"a": ["ok", {"b": 1}], "n": null})
        )
        .is_ok());
        assert!(json("input", &serde_json::json!([1.7976931348623157e308])).is_err());
        assert!(json("input", &serde_json::json!([-1e301])).is_err());
        assert!(json(
            "input",
            &serde_json::json!([1e300, u64::MAX, i64::MIN, 1e-320])
        )
        .is_ok());
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("abc", 10), "abc");
        assert_eq!(truncate("ééé", 5), "éé");
        assert_eq!(truncate(&"x".repeat(2000), ERROR_MESSAGE_BYTES).len(), 1024);
    }
}
