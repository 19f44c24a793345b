//! The OpenAPI 3.1 document of the HTTP API, finished so that validators and client
//! generators accept it whatever routes are added later.
//!
//! utoipa builds the document from the handlers' annotations; [`finish`] then applies the
//! rules every route shares, so a new route cannot forget them: every error answer is
//! `application/problem+json` referencing the `Problem` schema and has a description
//! (the stable codes of its status, unless the route names its own), every route with a
//! bearer token can answer 401 and 403, every route that reads a body or a query can
//! answer 400/413/422, every `/v1/` route 500 and 503 (the database unavailable), and
//! 429/503 carry `Retry-After`.
//! Success answers are the route's own business: their descriptions are not invented
//! here, and [`problems`] (checked by a test) reports any that is missing, along with
//! any operation without a stable `operationId`.

use serde_json::{json, Map, Value};

/// The JSON pointer of the problem schema every error answer references.
const PROBLEM: &str = "#/components/schemas/Problem";

/// The methods of an OpenAPI path item (other keys, like `parameters`, are not
/// operations).
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The document with the shared rules applied (see the module doc).
pub fn finish(doc: &utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).expect("an OpenAPI document serializes");
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, op) in item.iter_mut() {
                if METHODS.contains(&method.as_str()) {
                    finish_operation(path, op);
                }
            }
        }
    }
    doc
}

fn finish_operation(path: &str, op: &mut Value) {
    let secured = op
        .get("security")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    let has_body = op.get("requestBody").is_some();
    let has_query = op
        .get("parameters")
        .and_then(Value::as_array)
        .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
    let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
        return;
    };
    let mut implied: Vec<&str> = Vec::new();
    if secured {
        implied.extend(["401", "403"]);
    }
    if has_body {
        implied.extend(["400", "413", "422"]);
    }
    if has_query {
        implied.push("422");
    }
    if path.starts_with("/v1/") {
        implied.extend(["500", "503"]);
    }
    for status in implied {
        responses
            .entry(status)
            .or_insert_with(|| Value::Object(Map::new()));
    }
    for (status, response) in responses.iter_mut() {
        if !is_error(status) {
            continue;
        }
        let Some(response) = response.as_object_mut() else {
            continue;
        };
        let described = response
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|d| !d.trim().is_empty());
        if !described {
            response.insert("description".into(), json!(error_meaning(status)));
        }
        response.insert(
            "content".into(),
            json!({"application/problem+json": {"schema": {"$ref": PROBLEM}}}),
        );
        if status == "429" || status == "503" {
            let headers = response
                .entry("headers")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(headers) = headers.as_object_mut() {
                headers.entry("Retry-After").or_insert_with(|| {
                    json!({
                        "description": "Seconds to wait before asking again.",
                        "schema": {"type": "integer", "minimum": 0}
                    })
                });
            }
        }
    }
}

/// A 4xx or 5xx status (or an OpenAPI range or `default`, which only errors use here).
fn is_error(status: &str) -> bool {
    status.starts_with('4') || status.starts_with('5') || status == "default"
}

/// What an error status means across the API, with its stable codes.
fn error_meaning(status: &str) -> &'static str {
    match status {
        "400" => "`malformed_json`, `invalid_id` or `bad_request`: the request cannot be read.",
        "401" => "`unauthorized`: no valid bearer token.",
        "403" => {
            "`forbidden`: the token lacks the permission, or a scope token names another scope."
        }
        "404" => "`not_found`: no such task for this caller (another owner's task too).",
        "409" => "A conflict with the current state; `code` says which.",
        "410" => "Gone; `code` says which.",
        "413" => "`payload_too_large`: the body exceeds the limit.",
        "422" => "`validation_failed` or `unknown_field` (`field` names it).",
        "429" => {
            "`capacity_exhausted`, `rate_limited` or `budget_exhausted`: refused by admission; \
             ask again after `Retry-After` seconds."
        }
        "500" => "`internal`: an unexpected server error (logged by the server, not described).",
        "503" => "Unavailable for now; ask again after `Retry-After` seconds.",
        _ => "An error; `code` says which.",
    }
}

/// What keeps a finished document from being a good contract for clients: responses
/// without a description, error answers that are not problem+json, operations without a
/// unique snake_case `operationId`. Empty when all is well.
pub fn problems(doc: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    let empty = Map::new();
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap_or(&empty) {
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let at = format!("{} {path}", method.to_uppercase());
            match op.get("operationId").and_then(Value::as_str) {
                Some(id) if is_snake_case(id) => {
                    if !ids.insert(id.to_owned()) {
                        found.push(format!("{at}: operationId {id:?} is used twice"));
                    }
                }
                other => found.push(format!("{at}: operationId {other:?} is not snake_case")),
            }
            let responses = op
                .get("responses")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if responses.is_empty() {
                found.push(format!("{at}: no responses"));
            }
            for (status, response) in responses {
                let described = response
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.trim().is_empty());
                if !described {
                    found.push(format!("{at} {status}: no description"));
                }
                if is_error(status) {
                    let schema = &response["content"]["application/problem+json"]["schema"];
                    if schema["$ref"] != PROBLEM {
                        found.push(format!("{at} {status}: not a problem+json answer"));
                    }
                }
            }
        }
    }
    found
}

fn is_snake_case(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole API's document: every response described, every error a problem,
    /// every operation named once. A route added without a success description fails
    /// here, naming it.
    #[test]
    fn the_api_document_is_a_complete_contract() {
        let doc = crate::http::document();
        let problems = problems(&doc);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert_eq!(doc["openapi"], "3.1.0");
    }

    #[test]
    fn missing_descriptions_and_plain_errors_are_reported() {
        let doc = json!({"paths": {"/v1/x": {"get": {
            "operationId": "get_x",
            "responses": {
                "200": {"content": {}},
                "404": {"description": "nope", "content": {"application/json": {}}}
            }
        }}}});
        let found = problems(&doc);
        assert_eq!(
            found,
            [
                "GET /v1/x 200: no description",
                "GET /v1/x 404: not a problem+json answer"
            ]
        );
    }

    #[test]
    fn errors_are_finished_and_success_is_left_alone() {
        let mut op = json!({
            "operationId": "put_x",
            "security": [{"bearer": []}],
            "requestBody": {"content": {}},
            "responses": {
                "200": {},
                "409": {"description": "lease_lost", "content": {"application/json": {}}},
                "429": {}
            }
        });
        finish_operation("/v1/x", &mut op);
        let responses = op["responses"].as_object().unwrap();
        let statuses: Vec<&str> = responses.keys().map(String::as_str).collect();
        assert_eq!(
            statuses,
            ["200", "400", "401", "403", "409", "413", "422", "429", "500", "503"]
        );
        assert!(responses["200"].get("description").is_none());
        assert_eq!(responses["409"]["description"], "lease_lost");
        assert_eq!(
            responses["409"]["content"]["application/problem+json"]["schema"]["$ref"],
            PROBLEM
        );
        assert!(responses["429"]["headers"]["Retry-After"].is_object());
        assert!(responses["401"]["description"]
            .as_str()
            .unwrap()
            .contains("unauthorized"));
    }
}
