//! The web console at `/ui`: a single page (Preact + htm, vendored in `ui/vendor/`)
//! compiled into the binary, so every `api` replica serves it with no files beside the
//! binary and no network at run time. The page and its assets need no token: the
//! console signs in in the browser (the token is kept in `sessionStorage` and sent as a
//! bearer header by `fetch`), and the API routes it calls check the token as always.
//!
//! Every answer carries a strict Content-Security-Policy (`default-src 'self'`, no
//! inline script or style, no framing), so even an injected string could neither run
//! script nor send the token anywhere but this origin. Assets are revalidated on every
//! load (`no-cache` with an ETag), so a rolled-out replica serves its own page at once.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::AppState;

/// The policy of every console answer: only this origin, nothing inline, no frames.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Everything the console is made of; `index.html` is served at `/ui`, the rest at
/// `/ui/assets/NAME`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("sse.js", JS),
    asset!("output.js", JS),
    asset!("format.js", JS),
    asset!("hooks.js", JS),
    asset!("circuits.js", JS),
    asset!("weights.js", JS),
    asset!("chart.js", JS),
    asset!("overview.js", JS),
    asset!("tasks.js", JS),
    asset!("task.js", JS),
    asset!("admin.js", JS),
    asset!("vendor/htm-preact-standalone.mjs", JS),
];

/// The console's routes: `/ui`, `/ui/` and `/ui/assets/*`, all without a token.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/assets/{*name}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers).unwrap_or_else(|| ApiError::UnknownPath.into_response())
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers).unwrap_or_else(|| ApiError::UnknownPath.into_response())
}

/// The asset `name` (304 when the caller has it already); `None` when there is none.
fn serve(name: &str, headers: &HeaderMap) -> Option<Response> {
    let index = ASSETS.iter().position(|a| a.name == name)?;
    let asset = &ASSETS[index];
    let etag = &etags()[index];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let out = response.headers_mut();
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(etag) {
        out.insert(header::ETAG, value);
    }
    Some(response)
}

/// A strong ETag per asset (a prefix of its SHA-256), computed once.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body);
                let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_the_page_imports_is_embedded() {
        // A module the page imports but the table lacks would 404 only in a browser.
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.body).expect("utf-8");
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let target = line
                    .rsplit_once("from ")
                    .map(|(_, t)| t)
                    .unwrap_or(line.trim_start_matches("import "))
                    .trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == ' ');
                let name = target
                    .strip_prefix("./")
                    .unwrap_or_else(|| panic!("{}: import {target:?} is not relative", asset.name));
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {name}, which is not embedded",
                    asset.name
                );
            }
        }
    }

    #[test]
    fn etags_differ_per_asset() {
        let tags = etags();
        assert_eq!(tags.len(), ASSETS.len());
        let mut unique = tags.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), tags.len());
    }
}
