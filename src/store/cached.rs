//! Statements prepared once per pooled connection and kept there: on the hot path a
//! statement then costs one round trip and no parse or plan. deadpool keeps the cache on
//! each connection; [`Cached`] is what the statements that use it ask of their client,
//! so they run on a pooled connection or on a transaction of one.
//!
//! Behind a pooler in transaction mode a statement kept on a connection would be kept
//! on whichever server session the pooler lent it, so there these statements run
//! unnamed like every other ([`super::statement`]): see
//! [`super::connect::unnamed_statements_only`].

use std::future::Future;

use tokio_postgres::{GenericClient, Row, Statement};

use super::statement::{Params, Statements};
use super::{DbError, Pooled};

/// A client whose connection keeps prepared statements.
pub trait Cached: Sync {
    /// The plain client or transaction, for the statements run unnamed.
    type Plain: GenericClient + Sync;

    /// `sql` prepared on this connection, once.
    fn prepare_cached(&self, sql: &str) -> impl Future<Output = Result<Statement, DbError>> + Send;

    /// This connection as a plain client (or transaction).
    fn plain(&self) -> &Self::Plain;

    /// Every row of `sql`, prepared on this connection once where that is safe.
    fn cached_rows(
        &self,
        sql: &'static str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send {
        async move {
            if super::connect::unnamed_statements_only() {
                return self.plain().rows(sql, params).await;
            }
            let statement = self.prepare_cached(sql).await?;
            self.plain().query(&statement, params).await
        }
    }

    /// The one row of `sql`, prepared on this connection once where that is safe.
    fn cached_row(
        &self,
        sql: &'static str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Row, DbError>> + Send {
        async move {
            if super::connect::unnamed_statements_only() {
                return self.plain().row(sql, params).await;
            }
            let statement = self.prepare_cached(sql).await?;
            self.plain().query_one(&statement, params).await
        }
    }

    /// The row of `sql` if any, prepared on this connection once where that is safe.
    fn cached_row_opt(
        &self,
        sql: &'static str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Option<Row>, DbError>> + Send {
        async move {
            if super::connect::unnamed_statements_only() {
                return self.plain().row_opt(sql, params).await;
            }
            let statement = self.prepare_cached(sql).await?;
            self.plain().query_opt(&statement, params).await
        }
    }
}

impl Cached for deadpool_postgres::ClientWrapper {
    type Plain = tokio_postgres::Client;

    fn prepare_cached(&self, sql: &str) -> impl Future<Output = Result<Statement, DbError>> + Send {
        deadpool_postgres::ClientWrapper::prepare_cached(self, sql)
    }

    fn plain(&self) -> &tokio_postgres::Client {
        self
    }
}

/// A pooled connection is its client's.
impl Cached for Pooled {
    type Plain = tokio_postgres::Client;

    fn prepare_cached(&self, sql: &str) -> impl Future<Output = Result<Statement, DbError>> + Send {
        Cached::prepare_cached(&**self, sql)
    }

    fn plain(&self) -> &tokio_postgres::Client {
        self
    }
}

impl<'a> Cached for deadpool_postgres::Transaction<'a> {
    type Plain = tokio_postgres::Transaction<'a>;

    fn prepare_cached(&self, sql: &str) -> impl Future<Output = Result<Statement, DbError>> + Send {
        deadpool_postgres::Transaction::prepare_cached(self, sql)
    }

    fn plain(&self) -> &tokio_postgres::Transaction<'a> {
        self
    }
}
