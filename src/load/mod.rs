//! The load generator and the instruments the benchmarks share: replica fleets started
//! as real `tasklane serve` processes ([`fleet`]), bulk queueing and drain measurement
//! ([`drain`]), the database's CPU time over a run ([`cpu`]), submit drivers
//! ([`submit`] through the Rust API, [`http_submit`] through the HTTP API), latency
//! summaries ([`stats`]), WAL and commits per task ([`wal`]), remote workers over the
//! worker protocol ([`remote`]) and the `tasklane load` run with its table/JSON report
//! ([`run`], [`report`]).
//!
//! It lives in the library, not only in `benches/`, so `tasklane load` can drive any
//! deployment with the same code the published figures come from.

pub mod cpu;
pub mod drain;
pub mod fleet;
pub mod http_submit;
pub mod remote;
pub mod report;
pub mod run;
pub mod stats;
pub mod store;
pub mod submit;
pub mod wal;

pub use run::{run, LoadConfig};
