//! Circuit breakers, one per route name, shared by every replica (state in
//! `tasklane.circuits`; the decisions in `task::circuit`).
//!
//! The executor asks for a [`Permit`] before each call to a route and reports how the
//! call ended with [`Tasklane::circuit_record`]. A permit costs one primary-key read
//! and no write while the circuit is closed; only failures, the probe and a success
//! after failures write. [`Tasklane::start_call`] asks for the permit and makes the
//! attempt's budget reservation in one round trip (one prepared statement), so a call
//! waits for one pooled statement before it goes, not two (four round trips if each
//! were prepared per use). There is deliberately no per-replica cache: a cached "closed"
//! would let a replica keep calling a route the cluster already opened, and the read
//! is cheap next to a model call.
//!
//! Fail safe: when the database cannot be read within [`DB_TIMEOUT`], the circuit
//! counts as closed (the task's attempt budget still bounds the calls), and a record
//! that cannot be written is dropped with a warning.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use super::{ClaimedTask, ServiceError, Tasklane};
use crate::store;
use crate::task::bounds::Invalid;
use crate::task::circuit::{decide, permit_at_start, write_for, Decision, Write};

pub use crate::store::circuits::Circuit;
pub use crate::task::circuit::{CircuitRow, CircuitSpec, Permit};

/// How long a permit or a record may wait for the database before it fails safe.
pub const DB_TIMEOUT: Duration = Duration::from_secs(3);

/// Seconds since the epoch of this process's last fail-safe warning: at most one per
/// [`WARN_EVERY`] seconds, so an outage does not log once per call.
static LAST_WARNING: AtomicI64 = AtomicI64::new(0);
const WARN_EVERY: i64 = 30;

fn warn_fail_safe(route_name: &str, what: &str, error: &dyn std::fmt::Display) {
    let now = chrono::Utc::now().timestamp();
    let last = LAST_WARNING.load(Ordering::Relaxed);
    if now - last >= WARN_EVERY
        && LAST_WARNING
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!(route_name, %error, "circuit breaker {what} failed; treating the circuit as closed (warned at most every {WARN_EVERY} s)");
    }
}

/// What a call's start decided ([`Tasklane::start_call`]).
#[derive(Debug)]
pub struct CallStart {
    /// May the call go.
    pub permit: Permit,
    /// The budget's answer (as [`Tasklane::reserve_budget`] gives it) when units were
    /// to be reserved; `None` when nothing was asked or the route is skipped
    /// ([`Permit::Open`]), which reserves nothing.
    pub reservation: Option<Result<(), ServiceError>>,
}

impl Tasklane {
    /// The start of one call of `task`'s attempt to `spec`'s route: its circuit permit
    /// (as [`Tasklane::circuit_permit`]) and, when `reserve` names units and the call
    /// may go, the attempt's budget reservation (as [`Tasklane::reserve_budget`]), in
    /// one statement. Fails safe as the permit does: when the database cannot be read
    /// the circuit counts as closed, and a reservation asked for is an error (do not
    /// call; retry the attempt).
    pub async fn start_call(
        &self,
        spec: &CircuitSpec<'_>,
        task: &ClaimedTask,
        reserve: Option<i64>,
    ) -> CallStart {
        if reserve.is_some_and(|units| units < 0) {
            let invalid = Invalid::new("units", "must be at least 0").into();
            return CallStart {
                permit: self.circuit_permit(spec).await,
                reservation: Some(Err(invalid)),
            };
        }
        let started = tokio::time::timeout(DB_TIMEOUT, self.try_start_call(spec, task, reserve));
        let error = match started.await {
            Ok(Ok(start)) => return start,
            Ok(Err(error)) => error,
            Err(_) => ServiceError::Pool(format!("no answer within {DB_TIMEOUT:?}")),
        };
        warn_fail_safe(spec.route_name, "read", &error);
        CallStart {
            permit: Permit::Call { failures: 0 },
            reservation: reserve.map(|_| Err(error)),
        }
    }

    async fn try_start_call(
        &self,
        spec: &CircuitSpec<'_>,
        task: &ClaimedTask,
        reserve: Option<i64>,
    ) -> Result<CallStart, ServiceError> {
        let start = {
            let object = self.connection().await?;
            store::circuits::start_call(
                &object,
                spec.route_name,
                spec.probe_seconds,
                task.id,
                task.lease_token,
                reserve,
            )
            .await?
        };
        let row = start.row.unwrap_or(CircuitRow::CLOSED);
        if start.probe_taken {
            self.probe_taken(spec.route_name);
        }
        let Some(permit) = permit_at_start(&row, start.now, start.probe_taken) else {
            // The probe was due but another caller took it (or closed the circuit)
            // first: decide again from the row as it is now, rare enough for two more
            // round trips.
            let permit = self.try_permit(spec).await?;
            let reservation = match (permit, reserve) {
                (Permit::Open { .. }, _) | (_, None) => None,
                (_, Some(units)) => Some(self.reserve_budget(task, units).await),
            };
            return Ok(CallStart {
                permit,
                reservation,
            });
        };
        Ok(CallStart {
            permit,
            reservation: start.reservation.map(super::budget::answer),
        })
    }

    fn probe_taken(&self, route_name: &str) {
        self.instruments.circuit_change(route_name, "probe");
        tracing::info!(route_name, "circuit half-open: this replica probes");
    }

    /// The permit for one call to `spec`'s route. Never fails: when the database cannot
    /// be read the circuit counts as closed (the attempt budget still bounds the calls).
    pub async fn circuit_permit(&self, spec: &CircuitSpec<'_>) -> Permit {
        match tokio::time::timeout(DB_TIMEOUT, self.try_permit(spec)).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(error)) => {
                warn_fail_safe(spec.route_name, "read", &error);
                Permit::Call { failures: 0 }
            }
            Err(_) => {
                warn_fail_safe(spec.route_name, "read", &"timed out");
                Permit::Call { failures: 0 }
            }
        }
    }

    async fn try_permit(&self, spec: &CircuitSpec<'_>) -> Result<Permit, ServiceError> {
        let object = self.connection().await?;
        let client = store::client(&object);
        let Some((row, now)) = store::circuits::read(client, spec.route_name).await? else {
            return Ok(Permit::Call { failures: 0 });
        };
        match decide(&row, now) {
            Decision::Call { failures } => Ok(Permit::Call { failures }),
            Decision::Skip { retry_at } => Ok(Permit::Open { retry_at }),
            Decision::TryProbe => {
                if store::circuits::take_probe(client, spec.route_name, spec.probe_seconds).await? {
                    self.probe_taken(spec.route_name);
                    return Ok(Permit::Probe);
                }
                // Another caller took the probe (or closed the circuit) meanwhile.
                Ok(
                    match store::circuits::read(client, spec.route_name).await? {
                        None => Permit::Call { failures: 0 },
                        Some((row, now)) => match decide(&row, now) {
                            Decision::Call { failures } => Permit::Call { failures },
                            Decision::Skip { retry_at } => Permit::Open { retry_at },
                            Decision::TryProbe => Permit::Open { retry_at: now },
                        },
                    },
                )
            }
        }
    }

    /// Records how a permitted call ended: `transient_failure` for a connection error,
    /// timeout, 408/409/429/5xx; anything else (a success or a permanent rejection)
    /// shows the route is up. A success through a closed circuit with no failures
    /// writes nothing.
    pub async fn circuit_record(
        &self,
        spec: &CircuitSpec<'_>,
        permit: Permit,
        transient_failure: bool,
    ) {
        let write = write_for(permit, transient_failure);
        if write == Write::Nothing {
            return;
        }
        match tokio::time::timeout(DB_TIMEOUT, self.try_record(spec, write)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => warn_fail_safe(spec.route_name, "record", &error),
            Err(_) => warn_fail_safe(spec.route_name, "record", &"timed out"),
        }
    }

    async fn try_record(&self, spec: &CircuitSpec<'_>, write: Write) -> Result<(), ServiceError> {
        let object = self.connection().await?;
        let client = store::client(&object);
        let name = spec.route_name;
        match write {
            Write::Nothing => {}
            Write::ResetFailures => store::circuits::reset_failures(client, name).await?,
            Write::CountFailure => {
                let opened =
                    store::circuits::count_failure(client, name, spec.failures, spec.open_seconds)
                        .await?;
                if opened {
                    self.instruments.circuit_change(name, "opened");
                    tracing::warn!(
                        route_name = name,
                        failures = spec.failures,
                        open_seconds = spec.open_seconds,
                        "circuit opened: the route is skipped until one probe succeeds"
                    );
                }
            }
            Write::ProbeEnded { succeeded } => {
                store::circuits::end_probe(client, name, succeeded, spec.open_seconds).await?;
                if succeeded {
                    self.instruments.circuit_change(name, "closed");
                    tracing::info!(route_name = name, "circuit closed: the probe succeeded");
                } else {
                    self.instruments.circuit_change(name, "reopened");
                    tracing::warn!(
                        route_name = name,
                        open_seconds = spec.open_seconds,
                        "circuit opened again: the probe failed"
                    );
                }
            }
        }
        Ok(())
    }

    /// Every circuit that counted a failure since it was last reset, by route name (a
    /// route without a row is closed).
    pub async fn circuits(&self) -> Result<Vec<Circuit>, ServiceError> {
        let client = self.connection().await?;
        Ok(store::circuits::list(store::client(&client)).await?)
    }

    /// Closes `route_name`'s circuit (an operator's reset): no failures counted, no
    /// probe. A route without a row is closed already and is not found, so a mistyped
    /// name is not silently accepted.
    pub async fn reset_circuit(&self, route_name: &str) -> Result<Circuit, ServiceError> {
        let client = self.connection().await?;
        if !store::circuits::reset(store::client(&client), route_name).await? {
            return Err(ServiceError::UnknownCircuit(route_name.to_owned()));
        }
        self.instruments.circuit_change(route_name, "reset");
        tracing::info!(route_name, "circuit reset by an operator");
        Ok(Circuit {
            route_name: route_name.to_owned(),
            state: "closed".to_owned(),
            consecutive_failures: 0,
            opened_at: None,
            retry_at: None,
        })
    }
}
