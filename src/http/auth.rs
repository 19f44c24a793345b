//! Bearer tokens: `tl_` + base64url of 32 random bytes, stored as SHA-256 only. Every
//! request looks its token up (no cache, so a revocation is immediate on every replica)
//! and compares the stored hash in constant time. 401 for a missing or unknown token,
//! 403 for a missing permission.
//!
//! Handlers take an [`Allowed<P>`] (e.g. `Allowed<perm::Submit>`) before any other
//! extractor: the permission is checked while extracting it, so a caller without it
//! gets 403 before the query string or body is parsed and learns nothing about them.

use std::marker::PhantomData;
use std::ops::Deref;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::error::ApiError;
use super::AppState;
use crate::store::query::Owner;
use crate::store::tokens;

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
}

impl Permission {
    pub const ALL: [Permission; 7] = [
        Permission::Submit,
        Permission::Read,
        Permission::Cancel,
        Permission::Release,
        Permission::Delete,
        Permission::Work,
        Permission::Admin,
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

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub token_id: Uuid,
    /// The app, and the scope for a scope token: every query is filtered by it.
    pub owner: Owner,
    permissions: Vec<String>,
}

impl Caller {
    /// Refuses with 403 unless the token has `permission`.
    pub fn require(&self, permission: Permission) -> Result<(), ApiError> {
        if self.permissions.iter().any(|p| p == permission.as_str()) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(permission.as_str()))
        }
    }

    /// Scope tokens (end users) get the redacted view.
    pub fn is_scoped(&self) -> bool {
        self.owner.scope_id.is_some()
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or(ApiError::Unauthorized)?;
        let secret = header
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, secret)| secret.trim())
            .filter(|s| s.starts_with("tl_") && s.len() <= 256)
            .ok_or(ApiError::Unauthorized)?;
        let hash = hash_secret(secret);
        let client = state.tasklane.pool.get().await?;
        let row = tokens::lookup(&client, &hash)
            .await?
            .ok_or(ApiError::Unauthorized)?;
        // The index found the row by hash; the comparison that decides is constant-time.
        if !bool::from(row.token_hash.as_slice().ct_eq(&hash)) {
            return Err(ApiError::Unauthorized);
        }
        Ok(Caller {
            token_id: row.id,
            owner: Owner {
                app: row.app,
                scope_id: row.scope_id,
            },
            permissions: row.permissions,
        })
    }
}

/// A caller whose token holds permission `P`, checked during extraction (401 without
/// a valid token, 403 without `P`), whose query string names only parameters the route
/// declares (422 `unknown_field` otherwise: checked here, after the permission, so a
/// caller without it learns nothing about the route). Derefs to the [`Caller`].
#[derive(Debug)]
pub struct Allowed<P> {
    caller: Caller,
    _permission: PhantomData<P>,
}

impl<P> Deref for Allowed<P> {
    type Target = Caller;

    fn deref(&self) -> &Caller {
        &self.caller
    }
}

impl<P: perm::Required> FromRequestParts<AppState> for Allowed<P> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        caller.require(P::PERMISSION)?;
        super::extract::known_query(parts)?;
        Ok(Allowed {
            caller,
            _permission: PhantomData,
        })
    }
}

/// Each [`Permission`] as a type, for [`Allowed`].
pub mod perm {
    use super::Permission;

    /// A permission a route requires.
    pub trait Required: Send + Sync + 'static {
        const PERMISSION: Permission;
    }

    macro_rules! permission_types {
        ($($name:ident),* $(,)?) => {$(
            #[doc = concat!("Requires [`Permission::", stringify!($name), "`].")]
            #[derive(Debug)]
            pub struct $name;

            impl Required for $name {
                const PERMISSION: Permission = Permission::$name;
            }
        )*};
    }

    permission_types!(Submit, Read, Cancel, Release, Delete, Work, Admin);
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
