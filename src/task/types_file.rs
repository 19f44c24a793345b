//! The task-types file (`[[task_type]]` tables, TOML): parsing, and every rule a type
//! must keep before a replica starts with it: bounds (`TaskType::validate`), its routes'
//! privacy promises, route names unique across the file (each names one circuit
//! breaker), and a valid output schema. Every refusal names the type and the field.

use std::path::Path;

use super::bounds::Invalid;
use super::locality::{Locality, Privacy};
use super::output_schema;
use super::routes::{CIRCUIT_FAILURES, CIRCUIT_OPEN_SECONDS};
use super::task_type::{Executor, TaskType};

/// The demo task types, `noop`, `sleep` and `remote` (`demo/task-types.toml`): the one
/// copy that `tasklane dev`, load runs, the tests' replicas, `scripts/fuzz-api.sh` and
/// the Helm chart's default use.
pub const DEMO_TASK_TYPES: &str = include_str!("../../demo/task-types.toml");

/// The `task_type` array of a task-types TOML file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTypesFile {
    #[serde(default)]
    pub task_type: Vec<TaskType>,
}

impl TaskTypesFile {
    /// Parses and validates a task-types file that names no schema file (one held in
    /// memory); see [`TaskTypesFile::parse_in`].
    pub fn parse(text: &str) -> anyhow::Result<Vec<TaskType>> {
        TaskTypesFile::parse_in(text, Path::new(""), |_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "only a task-types file read from disk may name a schema file",
            ))
        })
    }

    /// Parses and validates a task-types file; duplicate names are refused. Every
    /// refusal names the type (when it has a name) and the field, e.g.
    /// `task type "summarize": routes[1].route: unknown variant ...`. An
    /// `output_schema_file` is resolved against `dir` (the file's directory) and read
    /// with `read`, so the caller does the I/O.
    pub fn parse_in(
        text: &str,
        dir: &Path,
        read: impl Fn(&Path) -> std::io::Result<String>,
    ) -> anyhow::Result<Vec<TaskType>> {
        let mut table: toml::Table = toml::from_str(text)?;
        let entries = match table.remove("task_type") {
            None => Vec::new(),
            Some(toml::Value::Array(entries)) => entries,
            Some(_) => anyhow::bail!("task_type: must be an array of tables ([[task_type]])"),
        };
        if let Some(key) = table.keys().next() {
            anyhow::bail!("unknown key {key:?} (only [[task_type]] tables are read)");
        }
        let mut types = Vec::with_capacity(entries.len());
        let mut seen = std::collections::HashSet::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let name = match entry.get("name").and_then(toml::Value::as_str) {
                Some(name) => format!("task type {name:?}"),
                None => format!("task_type[{i}]"),
            };
            let mut task_type: TaskType = serde_path_to_error::deserialize(entry).map_err(|e| {
                let path = e.path().to_string();
                anyhow::anyhow!("{name}: {path}: {}", e.into_inner())
            })?;
            task_type
                .validate()
                .and_then(|()| validate_routes(&task_type))
                .and_then(|()| load_output_schema(&mut task_type, dir, &read))
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            if !seen.insert(task_type.name.clone()) {
                anyhow::bail!("task type {:?} is defined twice", task_type.name);
            }
            types.push(task_type);
        }
        check_unique_names(&types).map_err(anyhow::Error::msg)?;
        Ok(types)
    }
}

/// Checks one type's routes and privacy rules, naming the offending field
/// (`routes[1].route`, `external_allowed`, ...).
fn validate_routes(task_type: &TaskType) -> Result<(), Invalid> {
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
        match route.locality {
            Locality::External => {
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
            Locality::Local if seen_external => {
                return Err(Invalid::new(
                    field("route"),
                    format!(
                        "local route {:?} comes after an external one (local routes go first)",
                        route.name
                    ),
                ));
            }
            Locality::Local => {}
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
    if !task_type.has_routes(Locality::Local) && task_type.privacy == Privacy::LocalOnly {
        return Err(Invalid::new(
            "privacy",
            "a type with only external routes must default to external_allowed",
        ));
    }
    Ok(())
}

/// Checks where a type's output schema may be, and reads it from its file when it has
/// one: only `openai` types (the executor asks the provider for it) and `remote` types
/// (their workers' results are checked) have one.
fn load_output_schema(
    task_type: &mut TaskType,
    dir: &Path,
    read: impl Fn(&Path) -> std::io::Result<String>,
) -> Result<(), Invalid> {
    let field = match (&task_type.output_schema, &task_type.output_schema_file) {
        (None, None) => return Ok(()),
        (Some(_), Some(_)) => {
            return Err(Invalid::new(
                "output_schema_file",
                "give output_schema or output_schema_file, not both",
            ))
        }
        (Some(_), None) => "output_schema",
        (None, Some(_)) => "output_schema_file",
    };
    if !matches!(task_type.executor, Executor::Openai | Executor::Remote) {
        return Err(Invalid::new(
            field,
            "only openai and remote types take an output schema",
        ));
    }
    if let Some(file) = &task_type.output_schema_file {
        task_type.output_schema = Some(output_schema::from_file(file, dir, read)?);
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
fn check_unique_names<'a>(types: impl IntoIterator<Item = &'a TaskType>) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::RestartPolicy;

    #[test]
    fn parses_the_documented_example_with_defaults() {
        let types = TaskTypesFile::parse(
            r#"
            [[task_type]]
            name = "summarize"
            executor = "http"
            url = "http://127.0.0.1:9000/v1/chat/completions"
            route = "local"
            resource = "local-model"
            max_attempts = 3
            lease_seconds = 30
            attempt_timeout_seconds = 300
            deadline_seconds = 600
            on_restart = "retry"
            privacy = "local_only"

            [[task_type]]
            name = "tick"
            executor = "noop"
            "#,
        )
        .unwrap();
        assert_eq!(types.len(), 2);
        assert_eq!(types[0].resource.as_deref(), Some("local-model"));
        assert_eq!(types[1].on_restart, RestartPolicy::Retry);
        assert_eq!(types[1].deadline_seconds, None);
    }

    #[test]
    fn the_demo_types_parse() {
        let types = TaskTypesFile::parse(DEMO_TASK_TYPES).unwrap();
        let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["noop", "sleep", "remote", "openai", "extract"]);
        assert_eq!(types[2].privacy, Privacy::ExternalAllowed);
        assert!(types[3].has_routes(Locality::Local) && types[3].has_routes(Locality::External));
    }

    #[test]
    fn refuses_bad_files() {
        let dup =
            "[[task_type]]\nname='a'\nexecutor='noop'\n[[task_type]]\nname='a'\nexecutor='noop'\n";
        assert!(TaskTypesFile::parse(dup).is_err());
        assert!(TaskTypesFile::parse("[[task_type]]\nname='a'\nexecutor='http'\n").is_err());
        assert!(TaskTypesFile::parse(
            "[[task_type]]\nname='a'\nexecutor='noop'\nlease_seconds=0\n"
        )
        .is_err());
        assert!(
            TaskTypesFile::parse("[[task_type]]\nname='a'\nexecutor='noop'\ncolour='red'\n")
                .is_err()
        );
    }

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

    const SCHEMA_HEAD: &str = "[[task_type]]\nname='extract'\nexecutor='remote'\n";

    /// Parses `text` in `/types` with one schema file, `/types/schemas/s.json`.
    fn parse_with_file(text: &str, file: &str) -> anyhow::Result<Vec<TaskType>> {
        TaskTypesFile::parse_in(text, Path::new("/types"), |path| {
            if path == Path::new("/types/schemas/s.json") {
                Ok(file.to_owned())
            } else {
                Err(std::io::Error::from(std::io::ErrorKind::NotFound))
            }
        })
    }

    #[test]
    fn an_output_schema_is_read_inline_or_from_a_file_beside_the_types_file() {
        let inline =
            format!("{SCHEMA_HEAD}[task_type.output_schema]\ntype='object'\nrequired=['a']\n");
        let types = TaskTypesFile::parse(&inline).unwrap();
        let schema = types[0].output_schema.as_ref().unwrap();
        assert!(schema.check(&serde_json::json!({"a": 1})).is_ok());
        assert!(schema.check(&serde_json::json!({})).is_err());

        let from_file = format!("{SCHEMA_HEAD}output_schema_file='schemas/s.json'\n");
        let types = parse_with_file(&from_file, r#"{"type": "integer"}"#).unwrap();
        let schema = types[0].output_schema.as_ref().unwrap();
        assert_eq!(schema.schema(), &serde_json::json!({"type": "integer"}));
        let absolute = format!("{SCHEMA_HEAD}output_schema_file='/types/schemas/s.json'\n");
        assert!(parse_with_file(&absolute, "{}").is_ok());
    }

    #[test]
    fn bad_output_schemas_are_refused_by_type_field_and_file() {
        let err =
            |text: &str, file: &str| format!("{:#}", parse_with_file(text, file).unwrap_err());
        let named = |e: &str, field: &str| e.contains("task type \"extract\"") && e.contains(field);

        let e = err(
            &format!("{SCHEMA_HEAD}[task_type.output_schema]\ntype=5\n"),
            "",
        );
        assert!(
            named(&e, "output_schema:") && e.contains("not a valid JSON Schema"),
            "{e}"
        );
        let file = format!("{SCHEMA_HEAD}output_schema_file='schemas/s.json'\n");
        let e = err(&file, "{\"type\": ");
        assert!(
            named(&e, "output_schema_file") && e.contains("/types/schemas/s.json: is not JSON"),
            "{e}"
        );
        let e = err(&file, r#"{"minLength": "three"}"#);
        assert!(
            named(&e, "output_schema_file") && e.contains("/minLength"),
            "{e}"
        );
        let e = err(
            &format!("{SCHEMA_HEAD}output_schema_file='missing.json'\n"),
            "",
        );
        assert!(
            named(&e, "output_schema_file") && e.contains("/types/missing.json: cannot be read"),
            "{e}"
        );
        let both = format!("{SCHEMA_HEAD}output_schema_file='schemas/s.json'\n[task_type.output_schema]\ntype='object'\n");
        let e = err(&both, "{}");
        assert!(
            named(&e, "output_schema_file") && e.contains("not both"),
            "{e}"
        );
        let noop = "[[task_type]]\nname='extract'\nexecutor='noop'\n[task_type.output_schema]\ntype='object'\n";
        let e = err(noop, "");
        assert!(
            named(&e, "output_schema:") && e.contains("openai and remote"),
            "{e}"
        );
        // A file in memory names no schema file.
        assert!(TaskTypesFile::parse(&file).is_err());
    }
}
