//! The attempts of a task (`tasklane.task_attempts`): one row per ended attempt, written
//! by the statement that ends it (`complete*.sql`, `settle.sql`, `recover.sql`); the
//! running attempt lives on the task row until then. This module reads them (the
//! attempts route, the task view's usage and provenance), binds an attempt's facts to
//! those statements, and finds attempts past their server-side deadline.

use crate::store::Statements;
use std::collections::HashMap;

use tokio_postgres::{GenericClient, Row};
use uuid::Uuid;

use super::DbError;
use crate::task::attempt::{AttemptRecord, AttemptSummary};
use crate::task::attempt::{Facts, Usage};
use crate::task::outcome::Outcome;

/// An attempt's facts as the settle statements bind them (`$route, $route_name,
/// $provider, $model, $input_tokens, $output_tokens, $total_tokens, $response_model,
/// $system_fingerprint`). The route the
/// claim recorded wins over the handler's: it is the server's record of the privacy
/// boundary the attempt ran behind.
pub(crate) struct FactColumns<'a> {
    pub route: Option<&'static str>,
    pub route_name: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub response_model: Option<&'a str>,
    pub system_fingerprint: Option<&'a str>,
}

impl<'a> FactColumns<'a> {
    /// The columns of `facts`; an empty name is no name (NULL).
    pub fn of(facts: &'a Facts) -> Self {
        let provenance = facts.provenance.as_ref();
        let name = |s: &'a String| Some(s.as_str()).filter(|s| !s.is_empty());
        let reported = |s: &'a Option<String>| s.as_ref().and_then(name);
        FactColumns {
            route: provenance.map(|p| p.locality.as_str()),
            route_name: provenance.and_then(|p| name(&p.route_name)),
            provider: provenance.and_then(|p| name(&p.provider)),
            model: provenance.and_then(|p| name(&p.model)),
            input_tokens: facts.usage.map(|u| u.input_tokens),
            output_tokens: facts.usage.map(|u| u.output_tokens),
            total_tokens: facts.usage.map(|u| u.total_tokens),
            response_model: provenance.and_then(|p| reported(&p.response_model)),
            system_fingerprint: provenance.and_then(|p| reported(&p.system_fingerprint)),
        }
    }
}

/// The attempts of task `id`, oldest first, the running one last. The caller checks
/// the task is the owner's.
pub async fn list<C: GenericClient + Sync>(
    client: &C,
    id: Uuid,
) -> Result<Vec<AttemptRecord>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/attempts_list.sql"), &[&id])
        .await?;
    rows.iter().map(attempt_of).collect()
}

fn attempt_of(row: &Row) -> Result<AttemptRecord, DbError> {
    let outcome: &str = row.try_get("outcome")?;
    Ok(AttemptRecord {
        attempt: row.try_get("attempt")?,
        route: row.try_get("route")?,
        route_name: row.try_get("route_name")?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        response_model: row.try_get("response_model")?,
        system_fingerprint: row.try_get("system_fingerprint")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
        // The CHECK constraint on task_attempts.outcome admits only our names.
        outcome: Outcome::parse(outcome).expect("task_attempts.outcome holds a known outcome"),
        error_code: row.try_get("error_code")?,
        error_message: row.try_get("error_message")?,
        usage: usage_of(row)?,
    })
}

/// The three token columns as a usage, `None` when all are NULL.
fn usage_of(row: &Row) -> Result<Option<Usage>, DbError> {
    let input: Option<i64> = row.try_get("input_tokens")?;
    let output: Option<i64> = row.try_get("output_tokens")?;
    let total: Option<i64> = row.try_get("total_tokens")?;
    if input.is_none() && output.is_none() && total.is_none() {
        return Ok(None);
    }
    Ok(Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        total_tokens: total.unwrap_or(0),
    }))
}

/// The attempt summaries of those of `ids` that have attempt rows, in one query.
pub async fn summaries<C: GenericClient + Sync>(
    client: &C,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, AttemptSummary>, DbError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = client
        .rows(include_str!("../../sql/attempt_summaries.sql"), &[&ids])
        .await?;
    rows.iter()
        .map(|row| {
            let summary = AttemptSummary {
                usage: usage_of(row)?,
                usage_units: row.try_get("usage_units")?,
                provider: row.try_get("provider")?,
                model: row.try_get("model")?,
                route: row.try_get("route")?,
                route_name: row.try_get("route_name")?,
                response_model: row.try_get("response_model")?,
                system_fingerprint: row.try_get("system_fingerprint")?,
            };
            Ok((row.try_get("task_id")?, summary))
        })
        .collect()
}

/// A leased attempt past its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overdue {
    pub id: Uuid,
    pub lease_token: Uuid,
    pub task_type: String,
}

/// Up to `limit` leased attempts past their deadline; those of replica processes only
/// `grace_seconds` after it (their own timer ends them first, with the handler's facts).
/// With `from` (the clock of a sweep that found nothing more), only leases that ended
/// at most a grace before it.
pub async fn overdue<C: GenericClient + Sync>(
    client: &C,
    limit: i64,
    grace_seconds: f64,
    from: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Vec<Overdue>, DbError> {
    let rows = client
        .rows(
            include_str!("../../sql/attempt_overdue.sql"),
            &[&limit, &grace_seconds, &from],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Overdue {
                id: row.try_get("id")?,
                lease_token: row.try_get("lease_token")?,
                task_type: row.try_get("task_type")?,
            })
        })
        .collect()
}
