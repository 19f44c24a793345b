//! The smallest plain JSON value a JSON Schema accepts, for a mock answer to a request
//! that asks for structured output: what a model in strict mode answers, without the
//! model. It knows the keywords strict mode allows (`type`, `properties`, `required`,
//! `items`, `enum`, `const`, `anyOf`, `$ref` within the schema, and the bounds on
//! lengths, sizes and numbers); a schema using others may get a value it refuses.

use serde_json::{json, Map, Value};

/// The words a string is made of, repeated up to its `minLength`.
const TEXT: &str = "example";

/// A value `schema` accepts (`root` resolves `$ref`s of the form `#/...`).
pub fn instance(schema: &Value) -> Value {
    of(schema, schema, 0)
}

/// `$ref`s followed in a row before giving up (a schema that refers to itself).
const MAX_DEPTH: usize = 16;

fn of(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    let Some(schema) = schema.as_object() else {
        return Value::Null; // `true`: anything goes
    };
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.as_array()?.first()) {
        return first.clone();
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        let pointer = target.strip_prefix('#').unwrap_or(target);
        return root
            .pointer(pointer)
            .map_or(Value::Null, |s| of(s, root, depth + 1));
    }
    for any in ["anyOf", "oneOf"] {
        if let Some(first) = schema.get(any).and_then(|a| a.as_array()?.first()) {
            return of(first, root, depth + 1);
        }
    }
    match type_of(schema) {
        "object" => object(schema, root, depth),
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            let item = schema
                .get("items")
                .map_or(Value::Null, |s| of(s, root, depth + 1));
            Value::Array(vec![item; n as usize])
        }
        "string" => {
            let n = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            Value::String(TEXT.repeat(n / TEXT.len() + 1))
        }
        "integer" => json!(lowest(schema).ceil() as i64),
        "number" => json!(lowest(schema)),
        "boolean" => Value::Bool(true),
        _ => Value::Null,
    }
}

/// The schema's `type`: the first that is not `null` when it names several.
fn type_of(schema: &Map<String, Value>) -> &str {
    match schema.get("type") {
        Some(Value::String(one)) => one,
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.contains_key("properties") => "object",
        _ => "null",
    }
}

/// Every property, `required` or not (strict mode requires them all).
fn object(schema: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    Value::Object(
        properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| (name.clone(), of(schema, root, depth + 1)))
            .collect(),
    )
}

/// The least number the bounds allow: 0, or the minimum above it.
fn lowest(schema: &Map<String, Value>) -> f64 {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    match (bound("minimum"), bound("exclusiveMinimum")) {
        (Some(min), _) if min > 0.0 => min,
        (_, Some(min)) if min >= 0.0 => min + 1.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(schema: Value) {
        let value = instance(&schema);
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&value), "{value} against {schema}");
    }

    #[test]
    fn the_instance_matches_its_schema() {
        accepted(json!({
            "type": "object", "additionalProperties": false,
            "required": ["sentiment", "summary"],
            "properties": {
                "sentiment": {"type": "string", "enum": ["positive", "negative"]},
                "summary": {"type": "string", "minLength": 20},
            }
        }));
        accepted(json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 3},
                "x": {"type": "number", "exclusiveMinimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "maybe": {"type": ["null", "boolean"]},
                "kind": {"const": "invoice"},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "line": {"$ref": "#/$defs/line"},
            },
            "$defs": {"line": {"type": "object", "properties": {"qty": {"type": "integer"}}}},
        }));
    }
}
