//! Statements prepared once per pooled connection and kept there: on the hot path a
//! statement then costs one round trip, not a parse and a round trip more. deadpool
//! keeps the cache on each connection; [`Cached`] is what the statements that use it
//! ask of their client, so they run on a pooled connection or on a transaction of one.

use std::future::Future;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use super::{DbError, Pooled};

/// A client whose connection keeps prepared statements.
pub trait Cached: Sync {
    /// `query` prepared on this connection, once.
    fn prepare_cached(
        &self,
        query: &str,
    ) -> impl Future<Output = Result<Statement, DbError>> + Send;

    /// The rows of a prepared statement.
    fn query(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send;

    /// The one row of a prepared statement.
    fn query_one(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Row, DbError>> + Send;
}

impl Cached for deadpool_postgres::ClientWrapper {
    fn prepare_cached(
        &self,
        query: &str,
    ) -> impl Future<Output = Result<Statement, DbError>> + Send {
        deadpool_postgres::ClientWrapper::prepare_cached(self, query)
    }

    fn query(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send {
        tokio_postgres::Client::query(self, statement, params)
    }

    fn query_one(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Row, DbError>> + Send {
        tokio_postgres::Client::query_one(self, statement, params)
    }
}

/// A pooled connection is its client's.
impl Cached for Pooled {
    fn prepare_cached(
        &self,
        query: &str,
    ) -> impl Future<Output = Result<Statement, DbError>> + Send {
        Cached::prepare_cached(&**self, query)
    }

    fn query(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send {
        Cached::query(&**self, statement, params)
    }

    fn query_one(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Row, DbError>> + Send {
        Cached::query_one(&**self, statement, params)
    }
}

impl Cached for deadpool_postgres::Transaction<'_> {
    fn prepare_cached(
        &self,
        query: &str,
    ) -> impl Future<Output = Result<Statement, DbError>> + Send {
        deadpool_postgres::Transaction::prepare_cached(self, query)
    }

    fn query(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send {
        tokio_postgres::Transaction::query(self, statement, params)
    }

    fn query_one(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Row, DbError>> + Send {
        tokio_postgres::Transaction::query_one(self, statement, params)
    }
}
