//! The application lifecycle against a real PostgreSQL: release, the
//! pruning sweep, owner deletion with its fence, reconciliation of unreleased sources,
//! the grants of the SQL API, and the races between them and submit/worker traffic.

mod delete;
mod grants;
mod prune;
mod races;
mod reconcile;
mod release;
mod support;
