//! The HTTP operations: one handler per operation, one file per group of them;
//! `http::router` assembles them under their paths.

pub mod activity;
pub mod admin;
pub mod attempts;
pub mod batch;
pub mod events;
pub mod lifecycle;
pub mod ops;
pub mod output;
pub mod tasks;
pub mod webhooks;
pub mod whoami;
pub mod worker;
pub mod worker_batch;
pub mod worker_batch_dto;
pub mod worker_dto;
