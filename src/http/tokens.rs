//! `tasklane token create|revoke`: the command-line side of API tokens.

use anyhow::Context;
use uuid::Uuid;

use super::auth::{self, Permission};
use crate::store::tokens::{self, NewToken};
use crate::task::bounds;

/// What `token create` is given.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    pub app: String,
    pub scope_id: Option<String>,
    pub permissions: Vec<String>,
    pub name: Option<String>,
}

/// A token just created: its id (for revocation) and its secret (shown once).
#[derive(Debug, Clone)]
pub struct CreatedToken {
    pub id: Uuid,
    pub secret: String,
}

/// Validates `spec`, stores the new token's hash and returns the secret.
pub async fn create(database_url: &str, spec: &TokenSpec) -> anyhow::Result<CreatedToken> {
    bounds::key("app", &spec.app)?;
    if let Some(scope) = &spec.scope_id {
        bounds::key("scope", scope)?;
    }
    if spec.permissions.is_empty() {
        anyhow::bail!("at least one permission is needed (--perm submit,read,...)");
    }
    for permission in &spec.permissions {
        if Permission::parse(permission).is_none() {
            let known: Vec<_> = Permission::ALL.iter().map(|p| p.as_str()).collect();
            anyhow::bail!(
                "unknown permission {permission:?}; known: {}",
                known.join(", ")
            );
        }
    }
    let secret = auth::generate_secret();
    let hash = auth::hash_secret(&secret);
    let id = Uuid::now_v7();
    let client = connect(database_url).await?;
    let token = NewToken {
        id,
        app: &spec.app,
        scope_id: spec.scope_id.as_deref(),
        permissions: &spec.permissions,
        name: spec.name.as_deref(),
        token_hash: &hash,
    };
    tokens::insert(&client, &token)
        .await
        .context("store the token")?;
    Ok(CreatedToken { id, secret })
}

/// Revokes token `id`; an unknown id is an error.
pub async fn revoke(database_url: &str, id: Uuid) -> anyhow::Result<()> {
    let client = connect(database_url).await?;
    if !tokens::revoke(&client, id)
        .await
        .context("revoke the token")?
    {
        anyhow::bail!("no token with id {id}");
    }
    Ok(())
}

async fn connect(database_url: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls)
        .await
        .context("connect to the database")?;
    tokio::spawn(connection);
    Ok(client)
}
