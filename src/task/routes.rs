//! Execution routes of an AI task type (`[[task_type.routes]]`): the ordered list of
//! OpenAI-compatible endpoints the `openai` executor calls, every local route before any
//! external one, and the rules that keep a type's privacy promises. Pure: the checks
//! that need the environment (API keys, the CA file) are the executor's, at start.

use super::bounds::Invalid;
use super::task_type::{Executor, Privacy, Route, TaskType};

/// Default `circuit_failures`: consecutive transient failures that open a circuit.
pub const DEFAULT_CIRCUIT_FAILURES: u32 = 5;
/// Default `circuit_open_seconds`: how long an open circuit skips its route.
pub const DEFAULT_CIRCUIT_OPEN_SECONDS: u32 = 30;
/// Bounds of the two circuit keys.
pub const CIRCUIT_FAILURES: std::ops::RangeInclusive<u32> = 1..=1000;
pub const CIRCUIT_OPEN_SECONDS: std::ops::RangeInclusive<u32> = 1..=86_400;

/// One `[[task_type.routes]]` entry.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Unique across the file; names the route's circuit breaker.
    pub name: String,
    /// `local` or `external` (anything else is refused when the file is read).
    pub route: Route,
    /// Provider name recorded in provenance (`vllm`, `openai`, `ollama`, ...).
    pub provider: String,
    /// The `model` the route sets in every request.
    pub model: String,
    /// `{base_url}/chat/completions` is called.
    pub base_url: String,
    /// The variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A file holding the API key (a mounted secret), read at start.
    #[serde(default)]
    pub api_key_file: Option<std::path::PathBuf>,
    /// A cluster-wide slot pool. Reserved: a task's slot is taken at claim from the
    /// type's `resource`, so this must equal it when both are given.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default = "default_circuit_failures")]
    pub circuit_failures: u32,
    #[serde(default = "default_circuit_open_seconds")]
    pub circuit_open_seconds: u32,
}

fn default_circuit_failures() -> u32 {
    DEFAULT_CIRCUIT_FAILURES
}
fn default_circuit_open_seconds() -> u32 {
    DEFAULT_CIRCUIT_OPEN_SECONDS
}

impl RouteSpec {
    /// A route with the defaults, for code that builds types programmatically.
    pub fn new(name: &str, route: Route, model: &str, base_url: &str) -> Self {
        RouteSpec {
            name: name.into(),
            route,
            provider: "openai-compatible".into(),
            model: model.into(),
            base_url: base_url.into(),
            api_key_env: None,
            api_key_file: None,
            resource: None,
            circuit_failures: DEFAULT_CIRCUIT_FAILURES,
            circuit_open_seconds: DEFAULT_CIRCUIT_OPEN_SECONDS,
        }
    }

    /// The URL the executor posts to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// Checks one type's routes and privacy rules, naming the offending field
/// (`routes[1].route`, `external_allowed`, ...).
pub fn validate(task_type: &TaskType) -> Result<(), Invalid> {
    if task_type.privacy == Privacy::ExternalAllowed && !task_type.external_allowed {
        return Err(Invalid::new(
            "privacy",
            "external_allowed as the default needs `external_allowed = true` on the type",
        ));
    }
    if task_type.executor != Executor::Openai {
        if !task_type.routes.is_empty() {
            return Err(Invalid::new(
                "routes",
                "only the openai executor takes routes",
            ));
        }
        return Ok(());
    }
    if task_type.routes.is_empty() {
        return Err(Invalid::new(
            "routes",
            "the openai executor needs at least one [[task_type.routes]]",
        ));
    }
    let mut seen_external = false;
    for (i, route) in task_type.routes.iter().enumerate() {
        let field = |name: &str| format!("routes[{i}].{name}");
        super::bounds::key(&field("name"), &route.name)?;
        super::bounds::key(&field("provider"), &route.provider)?;
        super::bounds::key(&field("model"), &route.model)?;
        check_base_url(&field("base_url"), &route.base_url)?;
        match route.route {
            Route::External => {
                if !task_type.external_allowed {
                    return Err(Invalid::new(
                        field("route"),
                        format!(
                            "route {:?} is external but the type does not set external_allowed = true",
                            route.name
                        ),
                    ));
                }
                seen_external = true;
            }
            Route::Local if seen_external => {
                return Err(Invalid::new(
                    field("route"),
                    format!(
                        "local route {:?} comes after an external one (local routes go first)",
                        route.name
                    ),
                ));
            }
            Route::Local => {}
        }
        if route.api_key_env.is_some() && route.api_key_file.is_some() {
            return Err(Invalid::new(
                field("api_key_env"),
                "give api_key_env or api_key_file, not both",
            ));
        }
        if let Some(var) = &route.api_key_env {
            super::bounds::key(&field("api_key_env"), var)?;
        }
        if let Some(resource) = &route.resource {
            super::bounds::key(&field("resource"), resource)?;
            if task_type.resource.as_ref().is_some_and(|r| r != resource) {
                return Err(Invalid::new(
                    field("resource"),
                    "differs from the type's resource (a task takes one slot, at claim)",
                ));
            }
        }
        if !CIRCUIT_FAILURES.contains(&route.circuit_failures) {
            return Err(Invalid::new(
                field("circuit_failures"),
                "must be between 1 and 1000",
            ));
        }
        if !CIRCUIT_OPEN_SECONDS.contains(&route.circuit_open_seconds) {
            return Err(Invalid::new(
                field("circuit_open_seconds"),
                "must be between 1 and 86400",
            ));
        }
    }
    if !task_type.has_route(Route::Local) && task_type.privacy == Privacy::LocalOnly {
        return Err(Invalid::new(
            "privacy",
            "a type with only external routes must default to external_allowed",
        ));
    }
    Ok(())
}

/// An `http` or `https` URL with a host and no query or fragment.
fn check_base_url(field: &str, url: &str) -> Result<(), Invalid> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| Invalid::new(field, format!("is not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Invalid::new(field, "must be an http:// or https:// URL"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() || !parsed.username().is_empty() {
        // A key in the URL would be logged and stored with errors: keys go in
        // api_key_env / api_key_file.
        return Err(Invalid::new(
            field,
            "must carry no query, fragment or credentials (use api_key_env or api_key_file)",
        ));
    }
    Ok(())
}

/// Refuses a route name used twice in one file (it names one circuit breaker).
pub fn check_unique_names<'a>(types: impl IntoIterator<Item = &'a TaskType>) -> Result<(), String> {
    let mut seen: std::collections::HashMap<&str, &str> = Default::default();
    for task_type in types {
        for (i, route) in task_type.routes.iter().enumerate() {
            if let Some(first) = seen.insert(&route.name, &task_type.name) {
                return Err(format!(
                    "task type {:?}: routes[{i}].name: route name {:?} is already used by type {:?} (route names are unique across the file)",
                    task_type.name, route.name, first
                ));
            }
        }
    }
    Ok(())
}

/// Checks the input of an `openai` task: a Chat Completions body without `model` (the
/// route sets it) and without `stream` (an attempt needs the whole answer).
pub fn validate_openai_input(input: &serde_json::Value) -> Result<(), Invalid> {
    let Some(body) = input.as_object() else {
        return Err(Invalid::new(
            "input",
            "must be a Chat Completions request body (a JSON object)",
        ));
    };
    if body.contains_key("model") {
        return Err(Invalid::new(
            "input.model",
            "must be absent: the route sets the model",
        ));
    }
    if body
        .get("stream")
        .is_some_and(|s| !s.is_null() && s != false)
    {
        return Err(Invalid::new("input.stream", "streaming is not supported"));
    }
    match body.get("messages") {
        Some(serde_json::Value::Array(m)) if !m.is_empty() => Ok(()),
        _ => Err(Invalid::new(
            "input.messages",
            "must be a non-empty array of chat messages",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::task_type::TaskTypesFile;

    fn parse_err(text: &str) -> String {
        format!("{:#}", TaskTypesFile::parse(text).unwrap_err())
    }

    const HEAD: &str = "[[task_type]]\nname='ai'\nexecutor='openai'\n";

    fn route(name: &str, kind: &str) -> String {
        format!(
            "[[task_type.routes]]\nname='{name}'\nroute='{kind}'\nprovider='p'\nmodel='m'\nbase_url='http://127.0.0.1:1/v1'\n"
        )
    }

    #[test]
    fn the_documented_example_parses_with_defaults() {
        let text = format!(
            "{HEAD}external_allowed=true\n{}{}",
            route("local-vllm", "local"),
            route("openai", "external")
        );
        let types = TaskTypesFile::parse(&text).unwrap();
        let routes = &types[0].routes;
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].circuit_failures, 5);
        assert_eq!(routes[1].circuit_open_seconds, 30);
        assert_eq!(
            routes[0].endpoint(),
            "http://127.0.0.1:1/v1/chat/completions"
        );
    }

    #[test]
    fn bad_route_configurations_are_refused_by_type_and_field() {
        let unknown = format!("{HEAD}{}", route("a", "cloud"));
        assert!(
            parse_err(&unknown).contains("route"),
            "{}",
            parse_err(&unknown)
        );
        let external = format!("{HEAD}{}", route("a", "external"));
        let e = parse_err(&external);
        assert!(e.contains("\"ai\"") && e.contains("routes[0].route"), "{e}");
        let order = format!(
            "{HEAD}external_allowed=true\n{}{}",
            route("a", "external"),
            route("b", "local")
        );
        assert!(parse_err(&order).contains("routes[1].route"));
        let none = HEAD.to_owned();
        assert!(parse_err(&none).contains("routes"));
        let dup = format!(
            "{HEAD}{}[[task_type]]\nname='other'\nexecutor='openai'\n{}",
            route("same", "local"),
            route("same", "local")
        );
        let e = parse_err(&dup);
        assert!(
            e.contains("\"other\"") && e.contains("routes[0].name"),
            "{e}"
        );
        let privacy = "[[task_type]]\nname='r'\nexecutor='remote'\nprivacy='external_allowed'\n";
        assert!(parse_err(privacy).contains("privacy"));
        let keyed_url = format!(
            "{HEAD}[[task_type.routes]]\nname='a'\nroute='local'\nprovider='p'\nmodel='m'\nbase_url='http://k:secret@h/v1'\n"
        );
        assert!(parse_err(&keyed_url).contains("routes[0].base_url"));
        assert!(!parse_err(&keyed_url).contains("secret"));
    }

    #[test]
    fn openai_input_is_a_chat_body_without_model_or_stream() {
        let ok = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(validate_openai_input(&ok).is_ok());
        let mut with_false = ok.clone();
        with_false["stream"] = false.into();
        assert!(validate_openai_input(&with_false).is_ok());
        let mut model = ok.clone();
        model["model"] = "x".into();
        assert_eq!(
            validate_openai_input(&model).unwrap_err().field,
            "input.model"
        );
        let mut stream = ok.clone();
        stream["stream"] = true.into();
        assert_eq!(
            validate_openai_input(&stream).unwrap_err().field,
            "input.stream"
        );
        let empty = serde_json::json!({"messages": []});
        assert!(validate_openai_input(&empty).is_err());
        assert!(validate_openai_input(&serde_json::json!([1])).is_err());
    }
}
