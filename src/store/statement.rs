//! How every statement runs: as an unnamed statement, parsed, bound and executed in one
//! round trip, with its parameter types described once per process.
//!
//! A named prepared statement lives on its server session. Behind a pooler in
//! transaction mode (PgBouncer) the next transaction of the same client may run on
//! another server session, where the name is unknown ("prepared statement does not
//! exist") or already taken by another client ("already exists"). An unnamed statement
//! lives only until the next one, inside the one message batch that a pooler hands to a
//! single server, so it works behind any pooler and on a direct connection alike; it
//! also saves the prepare round trip (and the close) that tokio-postgres's `query` pays
//! for a statement given as text.
//!
//! tokio-postgres needs each parameter's type to encode it. Those come from PostgreSQL
//! itself: the first run of a statement text in this process describes it with
//! `PREPARE` and `pg_prepared_statements` in one simple query (one implicit
//! transaction, so a pooler keeps it on one server), under a name no other describe
//! uses, deallocated in the same batch. The types are kept for the life of the process.
//!
//! The few statements of the hot path that keep a plan per connection go through
//! [`super::cached`] instead, which falls back to this door behind a pooler.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row, SimpleQueryMessage};

use super::DbError;

/// A statement's parameters, as its callers write them.
pub type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Running a statement given as text, on a client or a transaction. The names say what
/// comes back: every row, exactly one row, at most one row, or the rows affected.
pub trait Statements: GenericClient + Sync {
    /// Every row `sql` returns.
    fn rows(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<Row>, DbError>> + Send {
        async move {
            self.query_typed(sql, &typed_params(self, sql, params).await?)
                .await
        }
    }

    /// The one row `sql` returns (an error when it returns none or several).
    fn row(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Row, DbError>> + Send {
        async move {
            self.query_typed_one(sql, &typed_params(self, sql, params).await?)
                .await
        }
    }

    /// The row `sql` returns, if any (an error when it returns several).
    fn row_opt(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Option<Row>, DbError>> + Send {
        async move {
            self.query_typed_opt(sql, &typed_params(self, sql, params).await?)
                .await
        }
    }

    /// How many rows `sql` inserted, updated or deleted.
    fn run(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<u64, DbError>> + Send {
        async move {
            self.execute_typed(sql, &typed_params(self, sql, params).await?)
                .await
        }
    }
}

impl<C: GenericClient + Sync> Statements for C {}

/// `params`, each beside its type as PostgreSQL infers it for `sql` (described on
/// `client` the first time this process runs `sql`).
pub async fn typed_params<'a, C: GenericClient + Sync + ?Sized>(
    client: &C,
    sql: &str,
    params: Params<'a>,
) -> Result<Vec<(&'a (dyn ToSql + Sync), Type)>, DbError> {
    let types = parameter_types(client, sql, params.len()).await?;
    Ok(params.iter().copied().zip(types.iter().cloned()).collect())
}

/// Statement text to the parameter types PostgreSQL described for it.
type Described = HashMap<Box<str>, Arc<[Type]>>;

/// Statement texts already described in this process, and their parameter types.
static DESCRIBED: LazyLock<RwLock<Described>> = LazyLock::new(Default::default);

/// Names the describes of this process apart from each other and from other processes'
/// (a describe interrupted between its PREPARE and its DEALLOCATE leaves its name on a
/// server session that other clients of a pooler share).
static DESCRIBE_SEQ: AtomicU64 = AtomicU64::new(0);

/// The parameter types of `sql` (of `count` parameters), described on `client` the
/// first time this process runs it.
pub async fn parameter_types<C: GenericClient + Sync + ?Sized>(
    client: &C,
    sql: &str,
    count: usize,
) -> Result<Arc<[Type]>, DbError> {
    if count == 0 {
        return Ok(Arc::from([]));
    }
    if let Some(types) = DESCRIBED.read().expect("describe cache").get(sql) {
        return Ok(types.clone());
    }
    let types: Arc<[Type]> = describe(client, sql).await?.into();
    DESCRIBED
        .write()
        .expect("describe cache")
        .insert(sql.into(), types.clone());
    Ok(types)
}

/// The parameter types PostgreSQL infers for `sql`, by preparing it under a fresh name,
/// reading `pg_prepared_statements` and deallocating it, in one simple query.
async fn describe<C: GenericClient + Sync + ?Sized>(
    client: &C,
    sql: &str,
) -> Result<Vec<Type>, DbError> {
    let name = format!(
        "tasklane_describe_{}_{}",
        std::process::id(),
        DESCRIBE_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    // The newline ends a trailing comment of the statement's file before the `;`.
    let batch = format!(
        "PREPARE {name} AS {sql}\n;\
         SELECT parameter_types::oid[]::text FROM pg_prepared_statements WHERE name = '{name}';\
         DEALLOCATE {name}"
    );
    let messages = client.simple_query(&batch).await?;
    let oids = messages
        .iter()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_default();
    Ok(parse_oids(&oids)
        .into_iter()
        .map(|oid| Type::from_oid(oid).unwrap_or(Type::UNKNOWN))
        .collect())
}

/// `{20,25}` (an `oid[]` as text) as its numbers.
fn parse_oids(text: &str) -> Vec<u32> {
    text.trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .filter_map(|oid| oid.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_oids;

    #[test]
    fn oid_arrays_read_as_numbers() {
        assert_eq!(parse_oids("{20,25,2950}"), vec![20, 25, 2950]);
        assert_eq!(parse_oids("{}"), Vec::<u32>::new());
        assert_eq!(parse_oids(""), Vec::<u32>::new());
    }
}
