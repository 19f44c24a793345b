//! Circuit breakers, one per route name, shared by every replica.
//!
//! INTERFACE STUB (this round's skeleton): the executor asks for a [`Permit`] before a
//! call and reports the call's end; the PostgreSQL-backed breaker replaces the bodies
//! below without changing these signatures (beyond what the two sides agree on).

use chrono::{DateTime, Utc};

use super::Tasklane;

/// A route's breaker settings (task-types TOML keys `circuit_failures`,
/// `circuit_open_seconds`).
#[derive(Debug, Clone, Copy)]
pub struct CircuitSpec<'a> {
    pub route_name: &'a str,
    pub failures: u32,
    pub open_seconds: u32,
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

impl Tasklane {
    /// The permit for one call to `spec`'s route. Never fails: when the database cannot
    /// be read the circuit counts as closed (the attempt budget still bounds the calls).
    pub async fn circuit_permit(&self, spec: &CircuitSpec<'_>) -> Permit {
        let _ = spec;
        Permit::Call { failures: 0 }
    }

    /// Records how a permitted call ended: `transient_failure` for a connection error,
    /// timeout, 408/409/429/5xx; anything else (a success or a permanent rejection)
    /// shows the route is up.
    pub async fn circuit_record(
        &self,
        spec: &CircuitSpec<'_>,
        permit: Permit,
        transient_failure: bool,
    ) {
        let _ = (spec, permit, transient_failure);
    }
}
