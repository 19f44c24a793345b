//! Bearer-token authentication of every request (tokens themselves, their format and
//! lookup, are `service::tokens`). 401 for a missing or unknown token, 403 for a
//! missing permission.
//!
//! Handlers take an [`Allowed<P>`] (e.g. `Allowed<perm::Submit>`) before any other
//! extractor: the permission is checked while extracting it, so a caller without it
//! gets 403 before the query string or body is parsed and learns nothing about them.

use std::marker::PhantomData;
use std::ops::Deref;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use uuid::Uuid;

use super::error::ApiError;
use super::AppState;
use crate::service::tokens::Permission;
use crate::service::Owner;

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

    /// The token's permissions, as stored.
    pub fn permissions(&self) -> &[String] {
        &self.permissions
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
        let holder = state
            .tasklane
            .authenticate(secret)
            .await?
            .ok_or(ApiError::Unauthorized)?;
        Ok(Caller {
            token_id: holder.token_id,
            owner: holder.owner,
            permissions: holder.permissions,
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

/// A caller with any valid token, whatever its permissions (401 without one), with
/// the query-string check of [`Allowed`]: for routes every token may use (`whoami`).
#[derive(Debug)]
pub struct AnyToken(pub Caller);

impl FromRequestParts<AppState> for AnyToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        super::extract::known_query(parts)?;
        Ok(AnyToken(caller))
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

    permission_types!(Submit, Read, Cancel, Release, Delete, Work, Admin, Webhooks);
}
