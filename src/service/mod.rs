//! The application service: the one door of every operation a caller can ask for.
//!
//! [`Tasklane`] owns submit (single and in the caller's transaction), reads, cancel,
//! retry, the lifecycle (release, delete, fences, reconciliation), the worker protocol
//! (claim, heartbeat, complete, settle, hand back) and the admin settings. The HTTP
//! handlers, the CLI, the load generator and the in-process worker translate their
//! input into these calls and the answers back, nothing more: a rule that applies to an
//! operation (which backoff a settlement uses, when workers are woken, which owner may
//! touch a task) is written here once.
//!
//! Where this sits among the layers (below `worker`, `maintenance` and `http`; above
//! `admission`, `webhooks` and `store`), and which callers reach `store` around it, is
//! docs/architecture.md, "Module map".

mod activity;
mod admin;
mod budget;
pub mod circuits;
mod error;
mod groups;
mod lifecycle;
pub mod live_output;
pub mod liveness;
mod reconnect;
pub mod remote_output;
mod remote_work;
mod submit;
mod submit_coalesce;
mod tasks;
mod token_lookups;
pub mod tokens;
pub mod wakeup;
pub mod webhooks;
mod work;

/// Shared LISTEN connections: how a replica hears other replicas' notifications.
pub mod listen {
    pub use crate::store::listen::{listen, listen_all, Listener};
    pub use crate::store::live_output::OUTPUT_CHANNEL;
    pub use crate::store::EVENTS_CHANNEL;
}

use std::sync::Arc;

pub use crate::admission::{EmergencyStopSpec, LimitSpec, Overview, Refusal, RefusalCode};
pub use crate::task::attempt::{AttemptRecord, AttemptSummary};
pub use crate::task::claim::{Claimant, ClaimedTask, Slots};
pub use crate::task::event::Event;
pub use crate::task::lease::{Beat, BeatAnswer, Lease, LeaseStatus};
pub use crate::task::owner::Owner;
pub use crate::task::record::ListFilter;
pub use crate::task::record::SourceRef;
pub use crate::task::record::{SubmitOutcome, Submitted, TaskRecord};
pub use crate::task::remote::{BeatItem, OutputItem};
pub use crate::task::settlement::Completion;
pub use crate::task::settlement::{Reported, Success};
pub use activity::ActivityMinute;
pub use error::ServiceError;
pub use lifecycle::MAX_SOURCE_PAGE;
pub use liveness::Liveness;
pub use submit::{submit_in, MAX_BATCH};
pub use tasks::{TaskEvents, TaskList};
pub use wakeup::Wakeup;

use crate::task::catalog::TaskTypes;
use crate::telemetry::Instruments;

/// A handle on tasklane for one process: the pool, the task types it knows, and its
/// wake-up signal. Cloning shares all three.
#[derive(Clone)]
pub struct Tasklane {
    pool: crate::store::Pool,
    /// Where claims run ([`Tasklane::with_claim_pool`]); `pool` when none was given.
    claims: crate::store::Pool,
    task_types: Arc<TaskTypes>,
    wakeup: Wakeup,
    liveness: Liveness,
    instruments: Instruments,
    max_input_bytes: usize,
    /// Group commit of single submits, when started ([`Tasklane::with_submit_coalescing`]).
    coalescer: Option<submit_coalesce::Coalescer>,
    /// Gathered token lookups, when started ([`Tasklane::with_token_gathering`]).
    token_lookups: Option<token_lookups::TokenLookups>,
    /// This replica's deliverer, to which batch completes hand the notifications they
    /// claim ([`Tasklane::with_webhook_handoff`]).
    handoff: Option<crate::webhooks::handoff::Handoff>,
    /// This replica's live output publisher, when started ([`Tasklane::with_live_output`]).
    live_output: Option<live_output::LiveOutput>,
    /// Remote workers' streams, published through `live_output`.
    remote_output: Option<remote_output::RemoteOutput>,
}

impl Tasklane {
    /// A service on `pool` for `task_types`; submits larger than `max_input_bytes` of
    /// input are refused.
    pub fn new(
        pool: crate::store::Pool,
        task_types: Arc<TaskTypes>,
        wakeup: Wakeup,
        max_input_bytes: usize,
    ) -> Self {
        Tasklane {
            claims: pool.clone(),
            pool,
            task_types,
            wakeup,
            liveness: Liveness::default(),
            instruments: Instruments::noop(),
            max_input_bytes,
            coalescer: None,
            token_lookups: None,
            handoff: None,
            live_output: None,
            remote_output: None,
        }
    }

    /// The same service writing concurrent single submits in groups, at most `groups`
    /// at once (see `service::submit_coalesce`); starts its gathering loop on the
    /// current runtime.
    pub fn with_submit_coalescing(mut self, groups: usize) -> Self {
        self.coalescer = Some(submit_coalesce::Coalescer::start(self.pool.clone(), groups));
        self
    }

    /// The same service reading the token lookups of concurrent requests together, at
    /// most `readers` statements at once (see `service::token_lookups`); starts its
    /// gathering loop on the current runtime.
    pub fn with_token_gathering(mut self, readers: usize) -> Self {
        self.token_lookups = Some(token_lookups::TokenLookups::start(
            self.pool.clone(),
            readers,
        ));
        self
    }

    /// The same service handing the notifications its batch completes write to this
    /// replica's deliverer, claimed in the settle (see `webhooks::handoff`).
    pub fn with_webhook_handoff(mut self, handoff: crate::webhooks::handoff::Handoff) -> Self {
        self.handoff = Some(handoff);
        self
    }

    /// The same service publishing its model calls' live output (see
    /// `service::live_output`); starts the publishing loop on the current runtime.
    pub fn with_live_output(mut self) -> Self {
        let live = live_output::LiveOutput::start(self.pool.clone());
        self.remote_output = Some(remote_output::RemoteOutput::start(
            live.clone(),
            self.pool.clone(),
        ));
        self.live_output = Some(live);
        self
    }

    /// This replica's live output publisher, if it publishes.
    pub fn live_output(&self) -> Option<&live_output::LiveOutput> {
        self.live_output.as_ref()
    }

    /// The running attempt of task `id` and its text so far, if one is stored. The
    /// caller has checked that the task is the asker's.
    pub async fn output_so_far(
        &self,
        id: uuid::Uuid,
    ) -> Result<Option<(i32, String)>, ServiceError> {
        let client = self.connection().await?;
        Ok(crate::store::live_output::get(crate::store::client(&client), id).await?)
    }

    /// The same service running its claims on `claims` (see
    /// [`crate::store::connect::Database::claim_pool`]).
    pub fn with_claim_pool(mut self, claims: crate::store::Pool) -> Self {
        self.claims = claims;
        self
    }

    /// The same service recording into `instruments` (a process's telemetry).
    pub fn with_instruments(mut self, instruments: Instruments) -> Self {
        self.instruments = instruments;
        self
    }

    /// What this process records its metrics into.
    pub fn instruments(&self) -> &Instruments {
        &self.instruments
    }

    /// The task types this process knows.
    pub fn task_types(&self) -> &Arc<TaskTypes> {
        &self.task_types
    }

    /// The wake-up signal of this process's claim loops.
    pub fn wakeup(&self) -> &Wakeup {
        &self.wakeup
    }

    /// The claim loops of this process: each holds a guard while it runs.
    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    /// The connection pool, for the services of this process that run their own
    /// statements through `store` (maintenance, listeners).
    pub fn pool(&self) -> &crate::store::Pool {
        &self.pool
    }

    /// The pool claims run on.
    pub fn claim_pool(&self) -> &crate::store::Pool {
        &self.claims
    }

    async fn connection(&self) -> Result<crate::store::Pooled, ServiceError> {
        Ok(self.pool.get().await?)
    }

    /// A connection of the claim pool.
    async fn claim_connection(&self) -> Result<crate::store::Pooled, ServiceError> {
        Ok(self.claims.get().await?)
    }
}
