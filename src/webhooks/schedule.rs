//! What happens after an attempt: the retry schedule (about 5 s, 5 min, 30 min, 2 h,
//! 5 h, 10 h, 14 h, 20 h, 24 h, with jitter), `Retry-After` on 429/503, 410 disabling
//! the endpoint. Pure: the deliverer passes in what it saw and a random fraction.

use std::time::Duration;

/// The contract's schedule, as `--webhook-retry-schedule` defaults to it.
pub const DEFAULT_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,14h,20h,24h";

/// Jitter: a delay is moved by up to this fraction either way, so receivers that came
/// back together are not hit by every retry at once.
pub const JITTER: f64 = 0.1;

/// The longest `Retry-After` of a webhook receiver honoured (a receiver cannot park a
/// notification forever).
pub const MAX_RECEIVER_RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// The waits between attempts: after attempt `n` (1-based) fails, the next one is due
/// `steps[n-1]` later; after the last step's attempt fails, the notification failed.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySchedule {
    steps: Vec<Duration>,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        RetrySchedule::parse(DEFAULT_SCHEDULE).expect("the default schedule parses")
    }
}

impl RetrySchedule {
    /// Parses `5s,5m,30m,2h` (units `ms`, `s`, `m`, `h`; at most 20 steps, each ≤ 7 days).
    pub fn parse(text: &str) -> Result<Self, String> {
        let steps = text
            .split(',')
            .map(|step| parse_duration(step.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if steps.is_empty() || steps.len() > 20 {
            return Err("1..20 steps are needed, e.g. 5s,5m,30m".into());
        }
        Ok(RetrySchedule { steps })
    }

    /// Attempts in all: the first and one per step.
    pub fn attempts(&self) -> i32 {
        self.steps.len() as i32 + 1
    }

    /// After attempt `attempts` (1-based) failed: the wait before the next one, or
    /// `None` when it was the last. `retry_after` (429/503) is a floor; `random` in
    /// 0..1 places the jitter.
    pub fn next(
        &self,
        attempts: i32,
        retry_after: Option<Duration>,
        random: f64,
    ) -> Option<Duration> {
        let step = *self.steps.get(usize::try_from(attempts - 1).ok()?)?;
        let jittered = step.mul_f64(1.0 + JITTER * (2.0 * random.clamp(0.0, 1.0) - 1.0));
        Some(match retry_after {
            Some(floor) => jittered.max(floor.min(MAX_RECEIVER_RETRY_AFTER)),
            None => jittered,
        })
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} has no unit (ms, s, m, h)"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a number with a unit"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("{text:?}: the unit must be ms, s, m or h")),
    };
    if duration > Duration::from_secs(7 * 24 * 3600) {
        return Err(format!("{text:?} is longer than 7 days"));
    }
    Ok(duration)
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// 2xx.
    Delivered,
    /// 410: the receiver is gone for good; the endpoint is disabled.
    Gone,
    /// Anything else: try again later (not before `retry_after`, when given).
    Retry { retry_after: Option<Duration> },
}

/// The verdict on an answer with `status` and its `Retry-After` header, if any.
pub fn verdict(status: u16, retry_after: Option<&str>) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        410 => Verdict::Gone,
        429 | 503 => Verdict::Retry {
            retry_after: retry_after.and_then(parse_retry_after),
        },
        _ => Verdict::Retry { retry_after: None },
    }
}

/// `Retry-After` in delay-seconds form, or as an HTTP date (wait until then).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.signed_duration_since(chrono::Utc::now());
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_is_the_contracts() {
        let schedule = RetrySchedule::default();
        assert_eq!(schedule.attempts(), 10);
        let middle: Vec<u64> = (1..=9)
            .map(|n| schedule.next(n, None, 0.5).unwrap().as_secs())
            .collect();
        assert_eq!(
            middle,
            [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
        );
        assert_eq!(schedule.next(10, None, 0.5), None);
        assert_eq!(schedule.next(0, None, 0.5), None);
    }

    #[test]
    fn jitter_stays_within_a_tenth() {
        let schedule = RetrySchedule::parse("100s").unwrap();
        assert_eq!(schedule.next(1, None, 0.0), Some(Duration::from_secs(90)));
        assert_eq!(schedule.next(1, None, 1.0), Some(Duration::from_secs(110)));
    }

    #[test]
    fn retry_after_is_a_floor() {
        let schedule = RetrySchedule::parse("100ms,5m").unwrap();
        let two = Some(Duration::from_secs(2));
        assert_eq!(schedule.next(1, two, 0.5), Some(Duration::from_secs(2)));
        assert_eq!(schedule.next(2, two, 0.5), Some(Duration::from_secs(300)));
        let huge = Some(Duration::from_secs(10 * 86400));
        assert_eq!(schedule.next(1, huge, 0.5), Some(MAX_RECEIVER_RETRY_AFTER));
    }

    #[test]
    fn bad_schedules_are_refused() {
        for bad in ["", "5", "5x", "-5s", "8d", "s", &"1s,".repeat(21)] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad:?}");
        }
        assert!(RetrySchedule::parse(" 1s, 250ms ").is_ok());
    }

    #[test]
    fn answers_are_judged() {
        assert_eq!(verdict(204, None), Verdict::Delivered);
        assert_eq!(verdict(410, Some("5")), Verdict::Gone);
        assert_eq!(
            verdict(429, Some("2")),
            Verdict::Retry {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        assert_eq!(
            verdict(500, Some("2")),
            Verdict::Retry { retry_after: None }
        );
        assert_eq!(verdict(302, None), Verdict::Retry { retry_after: None });
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
