//! The circuit breaker's decisions, one circuit per route name (a task type's
//! `routes[].name`, docs/execution.md): closed → open after `failures` consecutive
//! transient failures → after `open_seconds`, half-open with ONE probe in the whole
//! cluster → the probe's success closes it, its failure opens it again.
//!
//! The state lives in `tasklane.circuits` and every change is one atomic statement
//! there (`sql/circuit_*.sql`), so replicas agree; this module decides, from a row
//! read with the database's clock, what a caller may do ([`decide`]), what
//! the admin view calls the state ([`CircuitRow::state`]) and what a call's ending must
//! write ([`write_for`]). A route that never failed has no row: it is closed, and the
//! success path of a closed circuit without failures writes nothing.

use chrono::{DateTime, Utc};

/// A route's breaker settings (task-types TOML route keys `circuit_failures`,
/// `circuit_open_seconds`) and the probe's lease.
#[derive(Debug, Clone, Copy)]
pub struct CircuitSpec<'a> {
    pub route_name: &'a str,
    /// Consecutive transient failures that open the circuit (default 5).
    pub failures: u32,
    /// How long an open circuit skips the route before one probe may go (default 30).
    pub open_seconds: u32,
    /// How long the probe may take before another caller may probe: the probe call's
    /// longest duration (the type's `attempt_timeout_seconds`). A prober that died
    /// mid-call holds the probe this long, no longer.
    pub probe_seconds: u32,
}

/// May a call go to the route now?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    /// The circuit is closed: call. `failures` is what it counted when read, so a
    /// success only writes when there is something to reset.
    Call { failures: u32 },
    /// The circuit was open past its time and this caller won the one probe.
    Probe,
    /// The circuit is open (or another caller holds the probe): skip the route.
    Open { retry_at: DateTime<Utc> },
}

/// A circuit's row as read (no row: [`CircuitRow::CLOSED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitRow {
    pub consecutive_failures: u32,
    /// When it opened (last); None while closed.
    pub opened_at: Option<DateTime<Utc>>,
    /// When its open time ends and a probe may go; None while closed.
    pub retry_at: Option<DateTime<Utc>>,
    /// The lease of the probe in flight, if any.
    pub probe_until: Option<DateTime<Utc>>,
}

/// The three states of the admin view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    Closed,
    Open,
    /// The open time is over: one probe may go (or is in flight).
    HalfOpen,
}

impl CircuitState {
    pub fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }
}

/// What a caller may do, read from a row; [`Decision::TryProbe`] still has to win the
/// probe's atomic claim (`sql/circuit_probe.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Call { failures: u32 },
    TryProbe,
    Skip { retry_at: DateTime<Utc> },
}

impl CircuitRow {
    /// A route without a row: closed, nothing counted.
    pub const CLOSED: CircuitRow = CircuitRow {
        consecutive_failures: 0,
        opened_at: None,
        retry_at: None,
        probe_until: None,
    };

    /// The state at `now` (the database's clock).
    pub fn state(&self, now: DateTime<Utc>) -> CircuitState {
        match (self.opened_at, self.retry_at) {
            (Some(_), Some(retry_at)) if now < retry_at => CircuitState::Open,
            (Some(_), _) => CircuitState::HalfOpen,
            (None, _) => CircuitState::Closed,
        }
    }

    /// When a call may next be let through: the end of the open time, or of the probe
    /// in flight; None while closed.
    pub fn next_try(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.state(now) {
            CircuitState::Closed => None,
            CircuitState::Open => self.retry_at,
            CircuitState::HalfOpen => match self.probe_until {
                Some(until) if until > now => Some(until),
                _ => self.retry_at,
            },
        }
    }
}

/// What a caller may do at `now`.
pub fn decide(row: &CircuitRow, now: DateTime<Utc>) -> Decision {
    match row.state(now) {
        CircuitState::Closed => Decision::Call {
            failures: row.consecutive_failures,
        },
        CircuitState::Open => Decision::Skip {
            retry_at: row.retry_at.unwrap_or(now),
        },
        CircuitState::HalfOpen => match row.probe_until {
            Some(until) if until > now => Decision::Skip { retry_at: until },
            _ => Decision::TryProbe,
        },
    }
}

/// The permit of a call's start (`sql/call_start.sql`), from the row as it read it
/// (no row: [`CircuitRow::CLOSED`]) and whether it took the probe. `None`: the probe
/// was due but another caller took it (or closed the circuit) first; read again.
pub fn permit_at_start(row: &CircuitRow, now: DateTime<Utc>, probe_taken: bool) -> Option<Permit> {
    if probe_taken {
        // Held by this caller: it must call, and its ending ends the probe.
        return Some(Permit::Probe);
    }
    match decide(row, now) {
        Decision::Call { failures } => Some(Permit::Call { failures }),
        Decision::Skip { retry_at } => Some(Permit::Open { retry_at }),
        Decision::TryProbe => None,
    }
}

/// What the end of a permitted call writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A success on a closed circuit with nothing counted, or no call at all: no write
    /// (the healthy path costs nothing).
    Nothing,
    /// A success after counted failures: the count starts again.
    ResetFailures,
    /// A transient failure of a call through a closed circuit: count it (and open the
    /// circuit when it reaches the threshold).
    CountFailure,
    /// The probe ended: close on success, open again on a transient failure.
    ProbeEnded { succeeded: bool },
}

/// The write for a call made under `permit` that ended with (or without) a transient
/// failure. Any ending but a transient failure (a success, a permanent rejection)
/// shows the route is up.
pub fn write_for(permit: Permit, transient_failure: bool) -> Write {
    match (permit, transient_failure) {
        (Permit::Call { failures: 0 }, false) => Write::Nothing,
        (Permit::Call { .. }, false) => Write::ResetFailures,
        (Permit::Call { .. }, true) => Write::CountFailure,
        (Permit::Probe, failed) => Write::ProbeEnded { succeeded: !failed },
        (Permit::Open { .. }, _) => Write::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
    }

    fn open(opened: i64, retry: i64, probe_until: Option<i64>) -> CircuitRow {
        CircuitRow {
            consecutive_failures: 5,
            opened_at: Some(at(opened)),
            retry_at: Some(at(retry)),
            probe_until: probe_until.map(at),
        }
    }

    #[test]
    fn no_row_is_closed_and_calls() {
        assert_eq!(CircuitRow::CLOSED.state(at(0)), CircuitState::Closed);
        assert_eq!(
            decide(&CircuitRow::CLOSED, at(0)),
            Decision::Call { failures: 0 }
        );
        assert_eq!(CircuitRow::CLOSED.next_try(at(0)), None);
    }

    #[test]
    fn closed_with_failures_calls_and_carries_the_count() {
        let row = CircuitRow {
            consecutive_failures: 3,
            ..CircuitRow::CLOSED
        };
        assert_eq!(decide(&row, at(0)), Decision::Call { failures: 3 });
    }

    #[test]
    fn open_skips_until_its_time() {
        let row = open(0, 30, None);
        assert_eq!(row.state(at(29)), CircuitState::Open);
        assert_eq!(decide(&row, at(29)), Decision::Skip { retry_at: at(30) });
        assert_eq!(row.next_try(at(29)), Some(at(30)));
    }

    #[test]
    fn at_its_time_one_probe_may_be_tried() {
        let row = open(0, 30, None);
        assert_eq!(row.state(at(30)), CircuitState::HalfOpen);
        assert_eq!(decide(&row, at(30)), Decision::TryProbe);
    }

    #[test]
    fn a_probe_in_flight_skips_until_its_lease_ends() {
        let row = open(0, 30, Some(150));
        assert_eq!(row.state(at(40)), CircuitState::HalfOpen);
        assert_eq!(decide(&row, at(40)), Decision::Skip { retry_at: at(150) });
        assert_eq!(row.next_try(at(40)), Some(at(150)));
    }

    #[test]
    fn an_expired_probe_lease_lets_the_next_caller_probe() {
        let row = open(0, 30, Some(150));
        assert_eq!(decide(&row, at(150)), Decision::TryProbe);
        assert_eq!(decide(&row, at(151)), Decision::TryProbe);
    }

    #[test]
    fn the_healthy_path_writes_nothing() {
        assert_eq!(
            write_for(Permit::Call { failures: 0 }, false),
            Write::Nothing
        );
        assert_eq!(
            write_for(Permit::Open { retry_at: at(0) }, true),
            Write::Nothing
        );
    }

    #[test]
    fn endings_write_what_they_change() {
        assert_eq!(
            write_for(Permit::Call { failures: 2 }, false),
            Write::ResetFailures
        );
        assert_eq!(
            write_for(Permit::Call { failures: 0 }, true),
            Write::CountFailure
        );
        assert_eq!(
            write_for(Permit::Probe, false),
            Write::ProbeEnded { succeeded: true }
        );
        assert_eq!(
            write_for(Permit::Probe, true),
            Write::ProbeEnded { succeeded: false }
        );
    }

    #[test]
    fn a_call_start_permits_what_it_read_and_the_probe_it_took() {
        let closed = CircuitRow {
            consecutive_failures: 2,
            ..CircuitRow::CLOSED
        };
        assert_eq!(
            permit_at_start(&closed, at(0), false),
            Some(Permit::Call { failures: 2 })
        );
        let row = open(0, 30, None);
        assert_eq!(
            permit_at_start(&row, at(10), false),
            Some(Permit::Open { retry_at: at(30) })
        );
        assert_eq!(permit_at_start(&row, at(30), true), Some(Permit::Probe));
        // Due, but another caller won the probe: read again.
        assert_eq!(permit_at_start(&row, at(30), false), None);
        let probing = open(0, 30, Some(150));
        assert_eq!(
            permit_at_start(&probing, at(40), false),
            Some(Permit::Open { retry_at: at(150) })
        );
    }

    #[test]
    fn state_names_are_the_contracts() {
        assert_eq!(CircuitState::Closed.as_str(), "closed");
        assert_eq!(CircuitState::Open.as_str(), "open");
        assert_eq!(CircuitState::HalfOpen.as_str(), "half_open");
    }
}
