//! Operator settings behind admission (limits, emergency stops, resource slots) and
//! behind the claims' turns (app weights), the overview of the whole deployment, and
//! readiness.

use super::{EmergencyStopSpec, LimitSpec, Overview, ServiceError, Tasklane};
use crate::store;
use crate::store::app_weights::AppWeight;
use crate::task::app_weight;

impl Tasklane {
    /// Creates or changes a limit; returns its id.
    pub async fn set_limit(&self, spec: &LimitSpec) -> Result<i64, ServiceError> {
        let client = self.connection().await?;
        Ok(crate::admission::set_limit(store::client(&client), spec).await?)
    }

    /// Turns the emergency stop on or off, globally or for one app. While on, submits
    /// are refused and claims leave the stopped tasks waiting (running ones go on);
    /// lifting it wakes the workers, as resuming a type does.
    pub async fn set_emergency_stop(&self, spec: &EmergencyStopSpec) -> Result<(), ServiceError> {
        let client = self.connection().await?;
        crate::admission::set_emergency_stop(store::client(&client), spec).await?;
        if !spec.enabled {
            self.wakeup.wake_all();
        }
        Ok(())
    }

    /// Pauses or resumes task type `name` cluster-wide: while paused no replica and no
    /// remote worker claims its tasks; submits are still queued and queue deadlines
    /// still apply. Only a type this replica knows can be paused; any can be resumed (a
    /// type dropped from this replica's file, or not yet in it mid-rollout, must not
    /// stay paused for the replicas that run it). Resuming wakes the workers.
    pub async fn set_paused(&self, name: &str, paused: bool) -> Result<(), ServiceError> {
        if paused && self.task_types.get(name).is_none() {
            return Err(ServiceError::UnknownTaskType(name.to_owned()));
        }
        let client = self.connection().await?;
        crate::store::limits::set_paused(store::client(&client), name, paused).await?;
        if !paused {
            self.wakeup.wake_all();
        }
        Ok(())
    }

    /// Sets how many tasks of resource `name` may run at once across the cluster.
    pub async fn set_resource(&self, name: &str, slots: i64) -> Result<(), ServiceError> {
        let client = self.connection().await?;
        Ok(crate::admission::set_resource(store::client(&client), name, slots).await?)
    }

    /// Sets `app`'s weight in the claims' turns (1..=100); returns it as stored. It
    /// applies to the app's tasks that take their turn from now on (a task takes its
    /// turn when it becomes claimable), so nothing is woken: no task became claimable.
    pub async fn set_app_weight(&self, app: &str, weight: i64) -> Result<i16, ServiceError> {
        let weight = app_weight::validate(app, weight)?;
        let client = self.connection().await?;
        store::app_weights::set_weight(store::client(&client), app, weight).await?;
        Ok(weight)
    }

    /// Every app with an unrevoked token or a stored weight, by app, with its weight
    /// (1 when never set).
    pub async fn app_weights(&self) -> Result<Vec<AppWeight>, ServiceError> {
        let client = self.connection().await?;
        Ok(store::app_weights::list(store::client(&client)).await?)
    }

    /// Queue depth, live replicas, resources, limits, stops and today's refusals.
    pub async fn overview(&self) -> Result<Overview, ServiceError> {
        let client = self.connection().await?;
        Ok(crate::admission::overview(store::client(&client)).await?)
    }

    /// Whether this process can do its work: its claim loops (if any) run, the
    /// database answers, takes writes and has the schema this binary expects; why not
    /// otherwise.
    pub async fn readiness(&self) -> Result<(), String> {
        if !self.liveness.all_running() {
            return Err("a claim loop of this replica stopped".into());
        }
        let client =
            self.pool.get().await.map_err(|error| {
                format!("no database connection: {}", ServiceError::from(error))
            })?;
        store::migrate::check_writable_and_current(store::client(&client)).await
    }
}
