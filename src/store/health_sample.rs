//! The cluster's health as the metrics sampler reports it: live replicas, emergency
//! stops in force and circuits not closed. Read by the one elected sampler (see
//! `maintenance::cluster_sampler`), so dashboards and alerts see one value per cluster
//! whatever the number of replicas.

use crate::store::Statements;
use tokio_postgres::Client;

use super::DbError;

/// Live replicas and emergency stops, one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Health {
    pub replicas: i64,
    /// 1 when the global stop is on.
    pub global_stops: i64,
    /// Apps with a stop of their own.
    pub app_stops: i64,
}

/// A circuit that is open or half-open, with seconds since it opened.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenCircuit {
    pub route_name: String,
    pub seconds: f64,
}

pub async fn health(client: &Client) -> Result<Health, DbError> {
    let row = client
        .row(include_str!("../../sql/health_sample.sql"), &[])
        .await?;
    Ok(Health {
        replicas: row.try_get("replicas")?,
        global_stops: row.try_get("global_stops")?,
        app_stops: row.try_get("app_stops")?,
    })
}

pub async fn open_circuits(client: &Client) -> Result<Vec<OpenCircuit>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/circuits_open.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(OpenCircuit {
                route_name: row.try_get("route_name")?,
                seconds: row.try_get("seconds")?,
            })
        })
        .collect()
}

/// One holder of the vacuum horizon (`sql/snapshot_holders.sql`): a backend, a prepared
/// transaction or a replication slot, the transaction id it holds, and its age in
/// seconds when PostgreSQL knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HorizonHolder {
    pub holder: String,
    pub xmin: String,
    pub seconds: Option<f64>,
}

pub async fn snapshot_holders(client: &Client) -> Result<Vec<HorizonHolder>, DbError> {
    let rows = client
        .rows(include_str!("../../sql/snapshot_holders.sql"), &[])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(HorizonHolder {
                holder: row.try_get("holder")?,
                xmin: row.try_get("xmin")?,
                seconds: row.try_get("seconds")?,
            })
        })
        .collect()
}
