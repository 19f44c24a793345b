//! tasklane: a durable task platform on PostgreSQL. See DESIGN.md for the contract.
//!
//! Dependencies point one way: [`task`] (pure domain) <- [`store`] (all SQL) <-
//! [`admission`], [`worker`], [`maintenance`] <- the binary. [`load`] measures all of it
//! from outside.

pub mod task;
pub mod devdb;
pub mod store;
pub mod admission;
pub mod worker;
pub mod maintenance;
pub mod client;
pub mod config;
pub mod server;
pub mod load;
pub mod http;
