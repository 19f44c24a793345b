//! Why a submit was refused by admission, with the stable code, the HTTP status and an
//! honest `Retry-After`. The estimate is a pure function of what the database reported
//! (the time it decided at and, for rate limits, when the oldest admission leaves the
//! window), so it is unit-tested here without a database.

use std::time::Duration;

use chrono::{DateTime, Days, NaiveTime, Utc};

/// The stable refusal codes of admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    EmergencyStop,
    CapacityExhausted,
    RateLimited,
    BudgetExhausted,
}

/// Retry-After of a capacity refusal: tasks finish at unknown times, so a short constant.
pub const CAPACITY_RETRY_AFTER: Duration = Duration::from_secs(2);
/// Retry-After of an emergency stop: an operator has to act; a minute.
pub const EMERGENCY_RETRY_AFTER: Duration = Duration::from_secs(60);

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::EmergencyStop => "emergency_stop",
            RefusalCode::CapacityExhausted => "capacity_exhausted",
            RefusalCode::RateLimited => "rate_limited",
            RefusalCode::BudgetExhausted => "budget_exhausted",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        [
            Self::EmergencyStop,
            Self::CapacityExhausted,
            Self::RateLimited,
            Self::BudgetExhausted,
        ]
        .into_iter()
        .find(|c| c.as_str() == code)
    }

    /// 503 for an emergency stop, 429 for every limit.
    pub fn http_status(self) -> u16 {
        match self {
            RefusalCode::EmergencyStop => 503,
            _ => 429,
        }
    }
}

/// A refusal by admission. Nothing of the refused submit is left in the database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: retry after {}s", code.as_str(), retry_after.as_secs())]
pub struct Refusal {
    pub code: RefusalCode,
    /// Whole seconds, at least one.
    pub retry_after: Duration,
    /// The limit that refused (`tasklane.limits.id`); none for an emergency stop.
    pub limit_id: Option<i64>,
}

impl Refusal {
    /// Builds the refusal the database decided at `at`. `free_at` is, for a rate limit,
    /// when its oldest admission leaves the window.
    pub fn new(
        code: RefusalCode,
        limit_id: Option<i64>,
        at: DateTime<Utc>,
        free_at: Option<DateTime<Utc>>,
    ) -> Self {
        Refusal {
            code,
            retry_after: retry_after(code, at, free_at),
            limit_id,
        }
    }

    /// The `Retry-After` header value in seconds.
    pub fn retry_after_seconds(&self) -> u64 {
        self.retry_after.as_secs()
    }
}

/// The honest wait: rate, until the window frees a token; budget, until the next UTC
/// day; capacity and emergency stop, a constant. Rounded up to whole seconds, at least 1.
pub fn retry_after(
    code: RefusalCode,
    at: DateTime<Utc>,
    free_at: Option<DateTime<Utc>>,
) -> Duration {
    let until = |t: DateTime<Utc>| ceil_seconds((t - at).to_std().unwrap_or_default());
    match code {
        RefusalCode::EmergencyStop => EMERGENCY_RETRY_AFTER,
        RefusalCode::CapacityExhausted => CAPACITY_RETRY_AFTER,
        RefusalCode::RateLimited => free_at.map(until).unwrap_or(CAPACITY_RETRY_AFTER),
        RefusalCode::BudgetExhausted => until(next_utc_day(at)),
    }
}

/// The first instant of the UTC day after `at`.
pub fn next_utc_day(at: DateTime<Utc>) -> DateTime<Utc> {
    let day = at
        .date_naive()
        .checked_add_days(Days::new(1))
        .expect("a date before the year 262143");
    day.and_time(NaiveTime::MIN).and_utc()
}

fn ceil_seconds(d: Duration) -> Duration {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    Duration::from_secs(secs.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn codes_round_trip_with_their_status() {
        for code in [
            RefusalCode::EmergencyStop,
            RefusalCode::CapacityExhausted,
            RefusalCode::RateLimited,
            RefusalCode::BudgetExhausted,
        ] {
            assert_eq!(RefusalCode::parse(code.as_str()), Some(code));
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::json!(code.as_str()));
        }
        assert_eq!(RefusalCode::EmergencyStop.http_status(), 503);
        assert_eq!(RefusalCode::RateLimited.http_status(), 429);
        assert_eq!(RefusalCode::parse("nope"), None);
    }

    #[test]
    fn rate_waits_until_the_oldest_admission_leaves_the_window() {
        let at = t("2026-01-01T10:00:00Z");
        let free = t("2026-01-01T10:00:41.200Z");
        assert_eq!(
            retry_after(RefusalCode::RateLimited, at, Some(free)),
            Duration::from_secs(42)
        );
        // Already free (a token held by an in-flight submit): retry soon, not at once.
        assert_eq!(
            retry_after(
                RefusalCode::RateLimited,
                at,
                Some(t("2026-01-01T09:59:00Z"))
            ),
            Duration::from_secs(1)
        );
        assert_eq!(
            retry_after(RefusalCode::RateLimited, at, None),
            CAPACITY_RETRY_AFTER
        );
    }

    #[test]
    fn budget_waits_for_the_next_utc_day() {
        let at = t("2026-03-31T23:59:30.5Z");
        assert_eq!(next_utc_day(at), t("2026-04-01T00:00:00Z"));
        assert_eq!(
            retry_after(RefusalCode::BudgetExhausted, at, None),
            Duration::from_secs(30)
        );
        let midnight = t("2026-04-01T00:00:00Z");
        assert_eq!(
            retry_after(RefusalCode::BudgetExhausted, midnight, None),
            Duration::from_secs(86_400)
        );
    }

    #[test]
    fn constants_for_capacity_and_stop() {
        let at = t("2026-01-01T00:00:00Z");
        let refusal = Refusal::new(RefusalCode::CapacityExhausted, Some(3), at, None);
        assert_eq!(refusal.retry_after_seconds(), 2);
        assert_eq!(refusal.to_string(), "capacity_exhausted: retry after 2s");
        // A stop waits a minute (a number, not EMERGENCY_RETRY_AFTER, which would make
        // the test agree with any value), whatever the time and the reported free slot.
        for (at, free_at) in [(at, None), (t("2026-03-31T23:59:30.5Z"), Some(at))] {
            let stop = Refusal::new(RefusalCode::EmergencyStop, None, at, free_at);
            assert_eq!(stop.retry_after_seconds(), 60);
            assert_eq!(stop.to_string(), "emergency_stop: retry after 60s");
        }
    }
}
