//! The integration suite as one test binary, a module per concern.
//!
//! One binary, not one per file: each binary links the whole crate (seconds each) and
//! starts its own private PostgreSQL cluster (`initdb`, start, migrate the template:
//! seconds again), and cargo runs binaries one after the other, so a binary whose last
//! test is long left the second test thread idle. Here the cluster starts once and
//! every test of every concern shares the test threads. Tests share nothing else: each
//! gets its own database (`common::test_db`), nothing sets environment variables, and
//! replicas run in-process (`common::in_process`) or as child processes
//! (`common::serve`), each on its own database.
//!
//! To add a file: put it here as `tests/it/x.rs`, declare `mod x;` below, and write
//! `use crate::common;` where a file of its own would write `mod common;`. Run one
//! concern with `cargo test --test it x::`.

#[path = "../common/mod.rs"]
mod common;

mod admission_capacity;
mod admission_limits;
mod admission_replicas;
mod admission_support;
mod attempts;
mod batch;
mod batch_races;
mod black_hole;
mod budget_reserve;
mod call_start;
mod circuits;
mod circuits_admin;
mod cli;
mod cli_pipe;
mod cli_submit;
mod compatibility;
mod console;
mod dashboard;
mod database_restart;
mod docs_examples;
mod events_notify;
mod failover;
mod fair_turns;
mod group_commit;
mod horizon;
mod http_admin;
mod http_api;
mod http_auth;
mod http_cluster;
mod http_lifecycle;
mod idle_connections;
mod lifecycle;
mod load_report;
mod managed_postgres;
mod openai;
mod operations;
mod otlp_tls;
mod output;
mod pause;
mod pooler;
mod races;
mod references;
mod remote_output_batch;
mod remote_worker;
mod replicas;
mod resource_replicas;
mod resources;
mod restart_policy;
mod rolling_restart;
mod schema;
mod sql_api;
mod sql_statements;
mod statistics;
mod stop_hold;
mod task_queue;
mod telemetry;
mod tls;
mod token_lookups;
mod transitions;
mod vacuum;
mod webhooks;
mod worker_runtime;
