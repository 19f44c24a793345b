//! tasklane: a durable task platform on PostgreSQL. The contract is in docs/ (the HTTP
//! API and worker protocol in docs/api.md).
//!
//! Dependencies point one way: [`task`] (pure domain, and the types every layer above
//! passes around) <- [`store`] (all SQL) <- [`admission`] <- [`service`] (the one door of
//! every operation) <- [`worker`], [`maintenance`], [`webhooks`], [`http`] <- [`server`]
//! and the binary. [`view`] (the task as its owner sees it) sits below both `webhooks`
//! and `http`, which render it. [`load`] measures all of it from outside.

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
