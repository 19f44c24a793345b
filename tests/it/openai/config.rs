//! Bad route configurations refuse the start, naming the file, the type and the field;
//! the refusal never shows a key.

use std::path::PathBuf;

use tasklane::server::load_task_types_file;

struct File(PathBuf);

impl File {
    fn new(text: &str) -> File {
        let path =
            std::env::temp_dir().join(format!("tasklane-types-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&path, text).unwrap();
        File(path)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const ROUTE: &str = "provider = \"p\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";

fn refusal(text: &str) -> String {
    let file = File::new(text);
    let error = format!("{:#}", load_task_types_file(&file.0).unwrap_err());
    assert!(
        error.contains(&file.0.display().to_string()),
        "names the file: {error}"
    );
    error
}

#[test]
fn bad_route_configurations_refuse_to_start_by_file_type_and_field() {
    let unknown_kind = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"a\"\nroute = \"cloud\"\n{ROUTE}"
    );
    let e = refusal(&unknown_kind);
    assert!(
        e.contains("task type \"ai\"") && e.contains("routes[0].route") && e.contains("cloud"),
        "{e}"
    );

    let duplicate = format!(
        "[[task_type]]\nname = \"one\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"gpu\"\nroute = \"local\"\n{ROUTE}\
         [[task_type]]\nname = \"two\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"gpu\"\nroute = \"local\"\n{ROUTE}"
    );
    let e = refusal(&duplicate);
    assert!(
        e.contains("task type \"two\"") && e.contains("routes[0].name") && e.contains("\"gpu\""),
        "{e}"
    );

    let not_allowed = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"x\"\nroute = \"external\"\n{ROUTE}"
    );
    let e = refusal(&not_allowed);
    assert!(
        e.contains("task type \"ai\"")
            && e.contains("routes[0].route")
            && e.contains("external_allowed"),
        "{e}"
    );

    let var = "TASKLANE_TEST_KEY_THAT_IS_NEVER_SET";
    assert!(std::env::var(var).is_err());
    let missing_key = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"a\"\nroute = \"local\"\napi_key_env = \"{var}\"\n{ROUTE}"
    );
    let e = refusal(&missing_key);
    assert!(
        e.contains("task type \"ai\"")
            && e.contains("routes[0]")
            && e.contains("api_key_env")
            && e.contains(var),
        "{e}"
    );

    let missing_file = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"a\"\nroute = \"local\"\napi_key_file = \"/nonexistent/key\"\n{ROUTE}"
    );
    let e = refusal(&missing_file);
    assert!(
        e.contains("api_key_file") && e.contains("/nonexistent/key"),
        "{e}"
    );

    let no_routes = "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n";
    assert!(refusal(no_routes).contains("routes"));

    let local_after = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\nexternal_allowed = true\n\
         [[task_type.routes]]\nname = \"x\"\nroute = \"external\"\n{ROUTE}[[task_type.routes]]\nname = \"l\"\nroute = \"local\"\n{ROUTE}"
    );
    assert!(refusal(&local_after).contains("routes[1].route"));

    let default_external =
        "[[task_type]]\nname = \"r\"\nexecutor = \"remote\"\nprivacy = \"external_allowed\"\n";
    let e = refusal(default_external);
    assert!(
        e.contains("task type \"r\"") && e.contains("privacy"),
        "{e}"
    );
}

#[test]
fn a_key_file_is_read_and_never_shown() {
    let key = File::new("sk-never-shown-0123456789\n");
    let text = format!(
        "[[task_type]]\nname = \"ai\"\nexecutor = \"openai\"\n[[task_type.routes]]\nname = \"a\"\nroute = \"local\"\napi_key_file = \"{}\"\n{ROUTE}",
        key.0.display()
    );
    let file = File::new(&text);
    let types = load_task_types_file(&file.0).unwrap();
    assert_eq!(
        types[0].routes[0].api_key_file.as_deref(),
        Some(key.0.as_path())
    );
    assert!(!format!("{types:?}").contains("never-shown"));
}

#[test]
fn an_output_schema_file_is_read_beside_the_types_file_and_checked_at_start() {
    let dir = std::env::temp_dir().join(format!("tasklane-schemas-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write(
        "schemas/label.json",
        r#"{"type": "object", "required": ["label"]}"#,
    );
    write("schemas/bad.json", r#"{"type": "nope"}"#);
    let types = |schema_file: &str| {
        let path = dir.join(format!("types-{}.toml", uuid::Uuid::new_v4()));
        let text = format!(
            "[[task_type]]\nname = \"extract\"\nexecutor = \"remote\"\noutput_schema_file = \"{schema_file}\"\n"
        );
        std::fs::write(&path, text).unwrap();
        path
    };

    let loaded = load_task_types_file(&types("schemas/label.json")).unwrap();
    let schema = loaded[0].output_schema.as_ref().expect("the file's schema");
    assert!(schema.check(&serde_json::json!({"label": 1})).is_ok());
    assert!(schema.check(&serde_json::json!({})).is_err());

    for (file, says) in [
        ("schemas/bad.json", "is not a valid JSON Schema"),
        ("schemas/missing.json", "cannot be read"),
    ] {
        let path = types(file);
        let e = format!("{:#}", load_task_types_file(&path).unwrap_err());
        let resolved = dir.join(file).display().to_string();
        assert!(
            e.contains(&path.display().to_string())
                && e.contains("task type \"extract\"")
                && e.contains("output_schema_file")
                && e.contains(&resolved)
                && e.contains(says),
            "{e}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
