//! tasklane: a durable task platform on PostgreSQL. The contract is in docs/ (the HTTP
//! API and worker protocol in docs/api.md).
//!
//! Dependencies point one way, from the roles down to the pure domain: [`task`] <-
//! [`store`] (all SQL) <- [`admission`], [`webhooks`] <- [`service`] (the door of every
//! operation a caller asks for) <- [`worker`], [`maintenance`], [`http`] <- [`server`]
//! and the binary. The one map of the layers, with what each module owns and which
//! callers reach `store` around `service` (maintenance, webhooks, the load generator)
//! and why, is docs/architecture.md, "Module map".

pub mod admission;
pub mod cli;
pub mod config;
pub mod devdb;
pub mod gather;
pub mod http;
pub mod load;
pub mod maintenance;
pub mod mockllm;
pub mod server;
pub mod service;
pub mod store;
pub mod task;
pub mod telemetry;
pub mod view;
pub mod webhooks;
pub mod worker;
