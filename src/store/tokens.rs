//! API tokens at rest: only their SHA-256 is stored. Reads happen on every request with
//! no cache, so a revocation takes effect at once on every replica.

use crate::store::cached::Cached;
use crate::store::Statements;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::DbError;

/// A live token's row: who it speaks for and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub id: Uuid,
    pub app: String,
    /// Set for a scope token (it sees only this scope, redacted).
    pub scope_id: Option<String>,
    pub permissions: Vec<String>,
    pub token_hash: Vec<u8>,
}

/// What a new token is created with; the caller has hashed the secret.
#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    pub id: Uuid,
    pub app: &'a str,
    pub scope_id: Option<&'a str>,
    pub permissions: &'a [String],
    pub name: Option<&'a str>,
    pub token_hash: &'a [u8],
}

/// Stores a new token.
pub async fn insert<C: GenericClient + Sync>(
    client: &C,
    token: &NewToken<'_>,
) -> Result<(), DbError> {
    client
        .run(
            include_str!("../../sql/token_insert.sql"),
            &[
                &token.id,
                &token.app,
                &token.scope_id,
                &token.permissions,
                &token.name,
                &token.token_hash,
            ],
        )
        .await?;
    Ok(())
}

/// The live (unrevoked) token whose hash is `token_hash`. Every API request asks, so
/// the statement is prepared once per pooled connection (one round trip, no re-parse).
pub async fn lookup(
    client: &crate::store::Pooled,
    token_hash: &[u8],
) -> Result<Option<TokenRow>, DbError> {
    let row = client
        .cached_row_opt(include_str!("../../sql/token_lookup.sql"), &[&token_hash])
        .await?;
    row.as_ref().map(token_row).transpose()
}

/// The live (unrevoked) tokens whose hashes are in `token_hashes`, in no particular
/// order: one statement for the lookups of many requests (see
/// `service::token_lookups`).
pub async fn lookup_many(
    client: &crate::store::Pooled,
    token_hashes: &[&[u8]],
) -> Result<Vec<TokenRow>, DbError> {
    let rows = client
        .cached_rows(
            include_str!("../../sql/token_lookup_many.sql"),
            &[&token_hashes],
        )
        .await?;
    rows.iter().map(token_row).collect()
}

fn token_row(row: &tokio_postgres::Row) -> Result<TokenRow, DbError> {
    Ok(TokenRow {
        id: row.try_get("id")?,
        app: row.try_get("app")?,
        scope_id: row.try_get("scope_id")?,
        permissions: row.try_get("permissions")?,
        token_hash: row.try_get("token_hash")?,
    })
}

/// Revokes token `id`; false when there is no such token.
pub async fn revoke<C: GenericClient + Sync>(client: &C, id: Uuid) -> Result<bool, DbError> {
    Ok(client
        .row_opt(include_str!("../../sql/token_revoke.sql"), &[&id])
        .await?
        .is_some())
}
