//! API tokens: `tl_` + base64url of 32 random bytes, stored as SHA-256 only, each with
//! an app, an optional scope and permissions. Creation and revocation (the `tasklane
//! token` commands) and the lookup every request makes (no cache, so a revocation is
//! immediate on every replica; the stored hash is compared in constant time).

use anyhow::Context;
use uuid::Uuid;

use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Owner, ServiceError, Tasklane};
use crate::store::tokens::{self, NewToken};
use crate::task::bounds;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    Submit,
    Read,
    Cancel,
    Release,
    Delete,
    Work,
    Admin,
    /// Manage the app's webhook endpoints (terminal notifications).
    Webhooks,
}

impl Permission {
    pub const ALL: [Permission; 8] = [
        Permission::Submit,
        Permission::Read,
        Permission::Cancel,
        Permission::Release,
        Permission::Delete,
        Permission::Work,
        Permission::Admin,
        Permission::Webhooks,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Submit => "submit",
            Permission::Read => "read",
            Permission::Cancel => "cancel",
            Permission::Release => "release",
            Permission::Delete => "delete",
            Permission::Work => "work",
            Permission::Admin => "admin",
            Permission::Webhooks => "webhooks",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Permission::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// A new token's secret: `tl_` + base64url (no padding) of 32 random bytes.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "tl_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// The SHA-256 a token is stored and looked up by.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

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
    let secret = generate_secret();
    let hash = hash_secret(&secret);
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
    crate::store::connect::connect(database_url)
        .await
        .context("connect to the database")
}

/// Who a valid token speaks for.
#[derive(Debug, Clone)]
pub struct TokenHolder {
    pub token_id: Uuid,
    /// The app, and the scope for a scope token.
    pub owner: Owner,
    pub permissions: Vec<String>,
}

impl Tasklane {
    /// The live token whose secret is `secret`, or `None` (unknown or revoked). The index
    /// finds the row by hash; the comparison that decides is constant-time.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<TokenHolder>, ServiceError> {
        let hash = hash_secret(secret);
        // Every request asks this first: a read, safe to run again on a fresh connection.
        let found = self
            .again_on_fresh_connection("authenticate", || async {
                if let Some(lookups) = &self.token_lookups {
                    return lookups.lookup(hash).await;
                }
                let client = self.connection().await?;
                Ok(tokens::lookup(&client, &hash).await?)
            })
            .await?;
        let Some(row) = found else {
            return Ok(None);
        };
        if !bool::from(row.token_hash.as_slice().ct_eq(&hash)) {
            return Ok(None);
        }
        Ok(Some(TokenHolder {
            token_id: row.id,
            owner: Owner {
                app: row.app,
                scope_id: row.scope_id,
            },
            permissions: row.permissions,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_random_and_hash_stably() {
        let a = generate_secret();
        let b = generate_secret();
        assert!(a.starts_with("tl_") && a.len() == 3 + 43);
        assert_ne!(a, b);
        assert_eq!(hash_secret(&a), hash_secret(&a));
        assert_ne!(hash_secret(&a), hash_secret(&b));
    }

    #[test]
    fn permissions_round_trip() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()), Some(p));
        }
        assert_eq!(Permission::parse("root"), None);
    }
}
