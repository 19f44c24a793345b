//! The route handlers, one file per group; `http::router` assembles them.

pub mod activity;
pub mod admin;
pub mod attempts;
pub mod batch;
pub mod events;
pub mod lifecycle;
pub mod ops;
pub mod tasks;
pub mod webhooks;
pub mod whoami;
pub mod worker;
pub mod worker_dto;
