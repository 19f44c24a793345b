//! A task type's output schema: a JSON Schema (draft 2020-12) compiled once when the
//! task-types file is read, what the `openai` executor asks the provider for with it
//! (`response_format`), and the check of one answer against it. Pure: the schema's file,
//! when it has one, is read by whoever reads the task-types file.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::bounds::{self, Invalid};

/// Bytes of an error's own text (the validator's words, which may quote the answer)
/// kept in a message: a short excerpt, never the model's whole text.
pub const EXCERPT_CHARS: usize = 80;
/// The longest JSON pointer a message names; a deeper one is cut.
const POINTER_CHARS: usize = 200;
/// Characters of the validator's words on a refused schema (the operator's own text).
const SCHEMA_ERROR_CHARS: usize = 300;
/// The longest `json_schema.name` OpenAI takes.
const SCHEMA_NAME_CHARS: usize = 64;

/// A compiled output schema; cloning shares the compiled validator.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Arc<serde_json::Value>,
    validator: Arc<jsonschema::Validator>,
}

/// Where an answer first breaks its schema, in words safe to store and log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The JSON pointer of the failing value inside the answer (`""` is the whole answer).
    pub pointer: String,
    /// The schema keyword it fails (`type`, `required`, ...).
    pub keyword: String,
    /// The validator's words, cut to [`EXCERPT_CHARS`] and redacted.
    pub detail: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {:?} (keyword {:?}): {}",
            self.pointer, self.keyword, self.detail
        )
    }
}

impl OutputSchema {
    /// Compiles `schema` as draft 2020-12, refusing one that is not a valid JSON Schema
    /// (checked against the meta-schema) or that refers to another document: no file or
    /// network is read for a `$ref`, so the schema must be self-contained.
    pub fn compile(schema: serde_json::Value) -> Result<Self, String> {
        if !schema.is_object() {
            return Err("must be a JSON object (a JSON Schema)".into());
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| {
                let at = cut(e.instance_path().as_str(), POINTER_CHARS);
                let words = e.to_string().replace(char::is_control, " ");
                format!(
                    "is not a valid JSON Schema (draft 2020-12) at {at:?}: {}",
                    cut(&words, SCHEMA_ERROR_CHARS)
                )
            })?;
        Ok(OutputSchema {
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// The schema as written.
    pub fn schema(&self) -> &serde_json::Value {
        &self.schema
    }

    /// The first place `value` breaks the schema, if any.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), Mismatch> {
        let Err(error) = self.validator.validate(value) else {
            return Ok(());
        };
        // The masked text names no value of the answer; what is left of the answer in
        // it (a property name) is cut to an excerpt.
        Err(Mismatch {
            pointer: cut(error.instance_path().as_str(), POINTER_CHARS),
            keyword: keyword(error.kind().keyword(), error.schema_path().as_str()),
            detail: excerpt(&error.masked().to_string()),
        })
    }

    /// The request's `response_format` for a type named `type_name`: OpenAI's structured
    /// outputs, strict, named after the type.
    pub fn response_format(&self, type_name: &str) -> serde_json::Value {
        serde_json::json!({
            "type": "json_schema",
            "json_schema": {
                "name": schema_name(type_name),
                "schema": *self.schema,
                "strict": true,
            }
        })
    }
}

/// Reads a type's `output_schema_file` (resolved against `dir`, the task-types file's
/// directory, with `read`: the caller's I/O) into its schema. Refusals name the field
/// and the file as resolved.
pub fn from_file(
    file: &Path,
    dir: &Path,
    read: impl Fn(&Path) -> std::io::Result<String>,
) -> Result<OutputSchema, Invalid> {
    let path = dir.join(file);
    let refuse =
        |what: String| Invalid::new("output_schema_file", format!("{}: {what}", path.display()));
    let text = read(&path).map_err(|e| refuse(format!("cannot be read ({e})")))?;
    let schema = serde_json::from_str(&text).map_err(|e| refuse(format!("is not JSON ({e})")))?;
    OutputSchema::compile(schema).map_err(refuse)
}

/// The schema keyword an error names. A `false` subschema (what `additionalProperties:
/// false` compiles to) has no keyword of its own: the keyword that holds it is read from
/// the schema path, skipping the names and indexes that lead to it.
fn keyword(kind: &str, schema_path: &str) -> String {
    if kind != "falseSchema" {
        return kind.to_owned();
    }
    let segments: Vec<&str> = schema_path.split('/').skip(1).collect();
    let named = [
        "properties",
        "patternProperties",
        "$defs",
        "dependentSchemas",
    ];
    (0..segments.len())
        .rev()
        .find(|&i| {
            let segment = segments[i];
            let is_name = i > 0 && named.contains(&segments[i - 1]);
            !is_name && !segment.chars().all(|c| c.is_ascii_digit())
        })
        .map_or_else(|| "false".to_owned(), |i| segments[i].to_owned())
}

/// `json_schema.name` for a type: its name with every character outside
/// `[a-zA-Z0-9_-]` replaced by `_`, cut to 64 characters (what OpenAI accepts).
pub fn schema_name(type_name: &str) -> String {
    type_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(SCHEMA_NAME_CHARS)
        .collect()
}

/// At most [`EXCERPT_CHARS`] characters of `text`, control characters flattened and
/// anything that looks like a key removed; `...` marks a cut.
pub fn excerpt(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let redacted = super::redact::redact(&flat);
    cut(&redacted, EXCERPT_CHARS)
}

/// The first `chars` characters of `text`, with `...` when it was longer.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}...", bounds::truncate(text, at)),
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OutputSchema").field(&self.schema).finish()
    }
}

/// Two schemas are the same when they were written the same.
impl PartialEq for OutputSchema {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema
    }
}

/// An inline `output_schema` table of the task-types file, compiled as it is read, so
/// a bad schema is refused naming the field.
impl<'de> serde::Deserialize<'de> for OutputSchema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let schema = serde_json::Value::deserialize(deserializer)?;
        OutputSchema::compile(schema).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invoice() -> OutputSchema {
        OutputSchema::compile(json!({
            "type": "object",
            "properties": {
                "total": {"type": "number"},
                "lines": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}},
                    "required": ["sku"],
                    "additionalProperties": false
                }}
            },
            "required": ["total", "lines"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_matching_value_passes_and_a_mismatch_names_pointer_and_keyword() {
        let schema = invoice();
        assert_eq!(
            schema.check(&json!({"total": 3.5, "lines": [{"sku": "a"}]})),
            Ok(())
        );
        let wrong_type = schema
            .check(&json!({"total": "SECRET-TOTAL", "lines": []}))
            .unwrap_err();
        assert_eq!(
            (wrong_type.pointer.as_str(), wrong_type.keyword.as_str()),
            ("/total", "type")
        );
        assert!(!wrong_type.detail.contains("SECRET"), "{wrong_type}");
        let missing = schema
            .check(&json!({"total": 1, "lines": [{}]}))
            .unwrap_err();
        assert_eq!(
            (missing.pointer.as_str(), missing.keyword.as_str()),
            ("/lines/0", "required")
        );
        let root = schema.check(&json!([1])).unwrap_err();
        assert_eq!((root.pointer.as_str(), root.keyword.as_str()), ("", "type"));
        assert_eq!(
            root.to_string(),
            format!("at \"\" (keyword \"type\"): {}", root.detail)
        );
    }

    #[test]
    fn a_mismatch_stays_short_whatever_the_answer() {
        let schema = OutputSchema::compile(json!({"additionalProperties": false})).unwrap();
        let key = "k".repeat(5000);
        let mismatch = schema.check(&json!({ key: 1 })).unwrap_err();
        assert_eq!(mismatch.keyword, "additionalProperties");
        assert!(
            mismatch.detail.chars().count() <= EXCERPT_CHARS + 3,
            "{mismatch}"
        );
    }

    #[test]
    fn a_false_subschema_is_named_by_the_keyword_that_holds_it() {
        let closed = OutputSchema::compile(json!({
            "properties": {"a": true, "never": false},
            "additionalProperties": false
        }))
        .unwrap();
        let extra = closed.check(&json!({"b": 1})).unwrap_err();
        assert_eq!(extra.keyword, "additionalProperties");
        let never = closed.check(&json!({"never": 1})).unwrap_err();
        assert_eq!(never.keyword, "properties");
        let nothing = OutputSchema::compile(json!({"not": {}})).unwrap();
        assert_eq!(nothing.check(&json!(1)).unwrap_err().keyword, "not");
        assert_eq!(keyword("falseSchema", ""), "false");
        assert_eq!(keyword("falseSchema", "/items/3"), "items");
    }

    #[test]
    fn invalid_schemas_are_refused() {
        let e = OutputSchema::compile(json!({"type": 5})).unwrap_err();
        assert!(
            e.contains("not a valid JSON Schema") && e.contains("/type"),
            "{e}"
        );
        let e = OutputSchema::compile(json!({"minLength": -1})).unwrap_err();
        assert!(e.contains("/minLength"), "{e}");
        assert!(OutputSchema::compile(json!("object")).is_err());
        // Nothing is fetched: a reference to another document cannot be resolved.
        let remote = json!({"$ref": "https://example.com/schema.json"});
        assert!(OutputSchema::compile(remote).is_err());
        let local = json!({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"});
        assert!(OutputSchema::compile(local)
            .unwrap()
            .check(&json!(1))
            .is_ok());
    }

    #[test]
    fn the_response_format_is_strict_and_named_after_the_type() {
        let format = invoice().response_format("extract invoice.v2");
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["name"], "extract_invoice_v2");
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(&format["json_schema"]["schema"], invoice().schema());
        assert_eq!(schema_name(&"é".repeat(100)).len(), 64);
        assert_eq!(schema_name("a-b_C9"), "a-b_C9");
    }

    #[test]
    fn an_inline_table_deserializes_into_a_compiled_schema() {
        #[derive(serde::Deserialize)]
        struct T {
            output_schema: OutputSchema,
        }
        let t: T = toml::from_str("[output_schema]\ntype = 'object'\nrequired = ['a']\n").unwrap();
        assert!(t.output_schema.check(&json!({})).is_err());
        let bad = toml::from_str::<T>("[output_schema]\ntype = 5\n");
        let e = bad.err().unwrap().to_string();
        assert!(e.contains("not a valid JSON Schema"), "{e}");
    }
}
