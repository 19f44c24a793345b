//! Request extractors that answer with the API's own errors: a JSON body (malformed 400,
//! unknown field 422 `unknown_field`, missing or mistyped field 422 `validation_failed`,
//! over the limit 413), a query string (a parameter the route does not declare is a 422
//! `unknown_field`), and a task id from the path.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::error::ApiError;

/// A JSON request body of type `T`, whatever the content type says.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::TooLarge(None)
                } else {
                    ApiError::BadRequest(rejection.body_text())
                }
            })?;
        parse_json(&bytes).map(Body)
    }
}

/// Parses `bytes` as `T`, classifying serde's errors into the API's codes.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        classify(error.into_inner(), &path)
    })?;
    deserializer.end().map_err(|error| classify(error, ""))?;
    Ok(value)
}

fn classify(error: serde_json::Error, path: &str) -> ApiError {
    use serde_json::error::Category;
    let message = error.to_string();
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => ApiError::MalformedJson(message),
        Category::Data => {
            let text = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_owned();
            if let Some(rest) = text.strip_prefix("unknown field `") {
                // The path already ends at the unknown key.
                let field = rest.split('`').next().unwrap_or_default();
                let named = if path.is_empty() || path == "." {
                    field.to_owned()
                } else {
                    path.to_owned()
                };
                return ApiError::UnknownField(named);
            }
            if let Some(rest) = text.strip_prefix("missing field `") {
                let field = rest.split('`').next().unwrap_or_default();
                return ApiError::invalid(join(path, field), "is required");
            }
            let field = if path == "." || path.is_empty() {
                "body".to_owned()
            } else {
                path.to_owned()
            };
            ApiError::invalid(field, text)
        }
    }
}

/// `parent.field`, or `field` at the top level.
fn join(path: &str, field: &str) -> String {
    if path.is_empty() || path == "." {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// A query string of type `T`; a bad value is a 422 naming what is wrong.
pub struct QueryOf<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryOf<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let deserializer =
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(QueryOf)
            .map_err(|error| {
                let field = error.path().to_string();
                let field = if field == "." || field.is_empty() {
                    "query".to_owned()
                } else {
                    field
                };
                ApiError::invalid(field, error.into_inner().to_string())
            })
    }
}

/// Refuses a query parameter that the matched route does not declare in the OpenAPI
/// document (422 `unknown_field` naming it), as unknown body fields are refused: a
/// misspelt or misplaced parameter (`GET /v1/tasks/{id}?wait=10`) would otherwise be
/// ignored in silence. Called once the caller is authorized (see `auth::Allowed`), so
/// the `/v1/` routes check it and the operations routes (probes, scrapers) stay lenient.
pub fn known_query(parts: &Parts) -> Result<(), ApiError> {
    let Some(query) = parts.uri.query() else {
        return Ok(());
    };
    let Some(route) = parts.extensions.get::<MatchedPath>() else {
        return Ok(());
    };
    let key = (
        parts.method.as_str().to_ascii_lowercase(),
        route.as_str().to_owned(),
    );
    let Some(declared) = declared_query_parameters().get(&key) else {
        return Ok(());
    };
    match form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| !declared.contains(name.as_ref()))
    {
        Some((name, _)) => Err(ApiError::UnknownParameter(name.chars().take(64).collect())),
        None => Ok(()),
    }
}

/// `(method, route) -> query parameter names` of every operation of the document.
type DeclaredQueries = HashMap<(String, String), HashSet<String>>;

/// The query parameters of every route, read once from the OpenAPI document the
/// handlers generate, so the check and the document cannot disagree.
fn declared_query_parameters() -> &'static DeclaredQueries {
    static DECLARED: OnceLock<DeclaredQueries> = OnceLock::new();
    DECLARED.get_or_init(|| {
        let doc = serde_json::to_value(super::api().1).unwrap_or_default();
        let mut declared = DeclaredQueries::new();
        let paths = doc["paths"].as_object().into_iter().flatten();
        for (path, operations) in paths {
            for (method, operation) in operations.as_object().into_iter().flatten() {
                let names = operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str().map(str::to_owned))
                    .collect();
                declared.insert((method.clone(), path.clone()), names);
            }
        }
        declared
    })
}

/// Parses a task id from the path: not a UUID is a 400.
pub fn task_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::InvalidId(raw.chars().take(64).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        name: String,
        n: Option<i32>,
    }

    fn code(bytes: &str) -> &'static str {
        parse_json::<Sample>(bytes.as_bytes())
            .unwrap_err()
            .status_and_code()
            .1
    }

    #[test]
    fn classifies_body_errors() {
        assert_eq!(code("{"), "malformed_json");
        assert_eq!(code(r#"{"name":"a"} x"#), "malformed_json");
        assert_eq!(code(r#"{"name":"a","colour":1}"#), "unknown_field");
        assert_eq!(code(r#"{"n":1}"#), "validation_failed");
        assert_eq!(code(r#"{"name":1}"#), "validation_failed");
        assert!(parse_json::<Sample>(br#"{"name":"a"}"#).is_ok());
        match parse_json::<Sample>(br#"{"n":1}"#).unwrap_err() {
            ApiError::Validation(invalid) => assert_eq!(invalid.field, "name"),
            other => panic!("{other:?}"),
        }
    }
}
