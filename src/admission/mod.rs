//! Admission across replicas (the checks a submit passes before its task is inserted)
//! and the admin settings behind it.
//!
//! Every check runs inside the submit statement (`tasklane.submit_task`), after the
//! owner lock, in the order emergency stop → capacity → rate → budget, as one call of
//! `tasklane.admit`. Limits
//! are reservation rows in PostgreSQL (one row per capacity slot or rate token, taken
//! with SKIP LOCKED), never process-local counters, so they hold exactly across any
//! number of replicas and no global counter row serializes submits. Capacity comes
//! back through triggers in the transaction that ends or deletes a task; rate tokens
//! and budgets never come back. A refusal gives back what earlier checks took, so it
//! leaves nothing behind; joins and replays never reach admission.
//!
//! This module holds the pure decisions (refusal codes and Retry-After in [`refusal`],
//! what an admin may set in [`limit`]) and the thin calls into `store` that apply them.

pub mod limit;
pub mod refusal;

use tokio_postgres::GenericClient;
use uuid::Uuid;

use crate::store::limits::LimitKey;
use crate::store::{self, DbError};
use crate::task::bounds::Invalid;

pub use limit::{EmergencyStopSpec, LimitKind, LimitSpec};
pub use refusal::{Refusal, RefusalCode};
pub use store::overview::Overview;

/// Why an admin write failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Admission for an existing terminal task about to be queued again (`POST
/// /v1/tasks/{id}/retry` goes "through admission"): call it in the transaction that
/// requeues the task, before the requeue; on `Ok(Ok(()))` the task holds its slots.
pub async fn readmit<C: GenericClient + Sync>(
    tx: &C,
    id: Uuid,
    app: &str,
    usage_subject: Option<&str>,
) -> Result<Result<(), Refusal>, DbError> {
    let report = store::admission::admit(tx, id, app, usage_subject, None).await?;
    let decision = decide(&report);
    if decision.is_ok() {
        store::admission::mark_readmitted(tx, id).await?;
    }
    Ok(decision)
}

/// Turns the database's report into the caller's answer.
pub fn decide(report: &store::admission::AdmitReport) -> Result<(), Refusal> {
    match report.refused {
        None => Ok(()),
        Some(_) => Err(refusal(report)),
    }
}

/// The refusal a refusing report stands for. `tasklane.admit` returns only the four
/// codes; an unknown one (a bug there) is refused conservatively as capacity.
pub fn refusal(report: &store::admission::AdmitReport) -> Refusal {
    let code = report
        .refused
        .as_deref()
        .and_then(RefusalCode::parse)
        .unwrap_or(RefusalCode::CapacityExhausted);
    Refusal::new(code, report.limit_id, report.at, report.free_at)
}

fn key(spec: &LimitSpec) -> LimitKey<'_> {
    LimitKey {
        kind: spec.kind.as_str(),
        app: spec.app.as_deref(),
        usage_subject: spec.usage_subject.as_deref(),
        window_seconds: spec.window_seconds.map(|w| w as i32),
    }
}

/// `PUT /v1/admin/limits`: creates or changes a limit; returns its id. Lowering a
/// capacity limit below what is held admits nothing until usage is under the new limit.
pub async fn set_limit<C: GenericClient + Sync>(
    client: &C,
    spec: &LimitSpec,
) -> Result<i64, AdminError> {
    spec.validate()?;
    Ok(store::limits::set_limit(client, key(spec), spec.limit).await?)
}

/// Removes a limit (its `limit` field is ignored); returns whether it existed.
pub async fn remove_limit<C: GenericClient + Sync>(
    client: &C,
    spec: &LimitSpec,
) -> Result<bool, AdminError> {
    spec.validate()?;
    Ok(store::limits::remove_limit(client, key(spec)).await?)
}

/// `PUT /v1/admin/emergency-stop`.
pub async fn set_emergency_stop<C: GenericClient + Sync>(
    client: &C,
    spec: &EmergencyStopSpec,
) -> Result<(), AdminError> {
    spec.validate()?;
    Ok(store::limits::set_emergency_stop(client, spec.app.as_deref(), spec.enabled).await?)
}

/// `PUT /v1/admin/resources/{name}` with `{"slots": n}`.
pub async fn set_resource<C: GenericClient + Sync>(
    client: &C,
    name: &str,
    slots: i64,
) -> Result<(), AdminError> {
    limit::validate_resource(name, slots)?;
    Ok(store::limits::set_resource(client, name, slots as i32).await?)
}

/// Removes a resource: its tasks run without a slot limit again.
pub async fn remove_resource<C: GenericClient + Sync>(
    client: &C,
    name: &str,
) -> Result<bool, AdminError> {
    crate::task::bounds::key("name", name)?;
    Ok(store::limits::remove_resource(client, name).await?)
}

/// `GET /v1/admin/overview`.
pub async fn overview<C: GenericClient + Sync>(client: &C) -> Result<Overview, DbError> {
    store::overview::overview(client).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::admission::AdmitReport;

    fn report(refused: Option<&str>, free_at: Option<&str>) -> AdmitReport {
        AdmitReport {
            refused: refused.map(str::to_owned),
            limit_id: refused.map(|_| 7),
            free_at: free_at.map(|t| t.parse().unwrap()),
            at: "2026-05-01T12:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn admitted_when_nothing_refused() {
        assert_eq!(decide(&report(None, None)), Ok(()));
    }

    #[test]
    fn each_code_becomes_its_refusal() {
        let rate = decide(&report(
            Some("rate_limited"),
            Some("2026-05-01T12:00:09.5Z"),
        ))
        .unwrap_err();
        assert_eq!(
            (rate.code, rate.retry_after_seconds(), rate.limit_id),
            (RefusalCode::RateLimited, 10, Some(7))
        );
        let budget = decide(&report(Some("budget_exhausted"), None)).unwrap_err();
        assert_eq!(budget.retry_after_seconds(), 12 * 3600);
        let stop = decide(&report(Some("emergency_stop"), None)).unwrap_err();
        assert_eq!(stop.code.http_status(), 503);
        // An unknown code from the database is still a refusal, never an admission.
        assert_eq!(
            decide(&report(Some("???"), None)).unwrap_err().code,
            RefusalCode::CapacityExhausted
        );
    }
}
