//! Structured outputs: whether a successful attempt carries the validated value its
//! type's output schema asks for. The `openai` executor's answer must have ended on its
//! own (`finish_reason` `stop`) with text that parses as JSON and matches the schema; a
//! remote worker's result must carry that value as its `output` member. Either way the
//! task's result then holds the value under `output`; anything else is
//! `invalid_output`, with a message that names what failed and quotes at most a short
//! excerpt of the model's text. Pure: the executor and the service apply it.

use super::output_schema::{excerpt, OutputSchema};

/// Why an answer is not the structured output asked for: the attempt's error message,
/// bounded and safe to store and log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOutput(pub String);

impl std::fmt::Display for InvalidOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The member of a result that holds the validated value.
pub const OUTPUT: &str = "output";

/// Checks a chat completion's result as the executor shapes it (`{"message",
/// "finish_reason", "usage"}`) and returns it with the parsed answer added as `output`
/// (the text stays in `message.content`, as the provider sent it).
pub fn completion_output(
    schema: &OutputSchema,
    mut result: serde_json::Value,
) -> Result<serde_json::Value, InvalidOutput> {
    let message = &result["message"];
    if let Some(refusal) = message.get("refusal").and_then(|r| r.as_str()) {
        return Err(invalid(format!(
            "the model refused to answer: {:?}",
            excerpt(refusal)
        )));
    }
    match &result["finish_reason"] {
        serde_json::Value::String(reason) if reason == "stop" => {}
        // `length` (cut at max_tokens), `content_filter`, `tool_calls`, or none at all:
        // whatever text there is may not be the whole answer.
        other => {
            return Err(invalid(format!(
                "the answer did not end on its own: finish_reason {} (\"stop\" is needed)",
                excerpt(&other.to_string())
            )))
        }
    }
    let Some(text) = message.get("content").and_then(|c| c.as_str()) else {
        return Err(invalid("the answer has no text content".into()));
    };
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the answer is not JSON ({e}): {:?}", excerpt(text))))?;
    schema.check(&value).map_err(|mismatch| {
        invalid(format!(
            "the answer does not match the output schema {mismatch}"
        ))
    })?;
    result[OUTPUT] = value;
    Ok(result)
}

/// Checks a remote worker's result: an object whose `output` member matches the schema
/// (its other members are the worker's own).
pub fn check_result(
    schema: &OutputSchema,
    result: &serde_json::Value,
) -> Result<(), InvalidOutput> {
    let Some(value) = result.as_object().and_then(|r| r.get(OUTPUT)) else {
        return Err(invalid(
            "the task type has an output schema: result must be an object whose \"output\" member is the answer"
                .into(),
        ));
    };
    schema.check(value).map_err(|mismatch| {
        invalid(format!(
            "result.output does not match the output schema {mismatch}"
        ))
    })
}

fn invalid(message: String) -> InvalidOutput {
    InvalidOutput(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn schema() -> OutputSchema {
        OutputSchema::compile(json!({
            "type": "object",
            "properties": {"label": {"enum": ["spam", "ham"]}},
            "required": ["label"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    fn completion(content: Value, finish_reason: Value) -> Value {
        json!({
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
        })
    }

    fn refused(result: Value) -> String {
        completion_output(&schema(), result).unwrap_err().0
    }

    #[test]
    fn a_valid_answer_keeps_the_result_and_adds_the_parsed_output() {
        let result = completion(json!("{\"label\": \"spam\"}"), json!("stop"));
        let checked = completion_output(&schema(), result.clone()).unwrap();
        assert_eq!(checked["output"], json!({"label": "spam"}));
        assert_eq!(checked["message"], result["message"]);
        assert_eq!(checked["usage"], result["usage"]);
    }

    #[test]
    fn every_way_an_answer_falls_short_is_named() {
        let truncated = refused(completion(json!("{\"label\": \"sp"), json!("length")));
        assert!(
            truncated.contains("finish_reason \"length\""),
            "{truncated}"
        );
        let none = refused(completion(json!("{}"), Value::Null));
        assert!(none.contains("finish_reason null"), "{none}");
        let prose = refused(completion(json!("Sure! Here it is"), json!("stop")));
        assert!(
            prose.contains("not JSON") && prose.contains("Sure! Here it is"),
            "{prose}"
        );
        let wrong = refused(completion(json!("{\"label\": \"eggs\"}"), json!("stop")));
        assert!(
            wrong.contains("\"/label\"") && wrong.contains("\"enum\""),
            "{wrong}"
        );
        let missing = refused(completion(json!("{}"), json!("stop")));
        assert!(missing.contains("\"required\""), "{missing}");
        let empty = refused(completion(Value::Null, json!("stop")));
        assert!(empty.contains("no text content"), "{empty}");
        let mut refusal = completion(Value::Null, json!("stop"));
        refusal["message"]["refusal"] = json!("I can't help with that.");
        assert!(refused(refusal).contains("refused"));
    }

    #[test]
    fn messages_quote_only_a_short_redacted_excerpt() {
        let long = format!("sk-live-0123456789abcdef {}", "secret words ".repeat(500));
        let message = refused(completion(json!(long), json!("stop")));
        assert!(message.len() < 300, "{} bytes: {message}", message.len());
        assert!(!message.contains("sk-live"), "{message}");
        let key = "x".repeat(2000);
        let extra = refused(completion(
            json!(json!({"label": "ham", key: 1}).to_string()),
            json!("stop"),
        ));
        assert!(extra.len() < 400, "{} bytes: {extra}", extra.len());
    }

    #[test]
    fn a_remote_result_carries_the_value_as_output() {
        let schema = schema();
        assert!(check_result(&schema, &json!({"output": {"label": "ham"}, "note": 1})).is_ok());
        let bare = check_result(&schema, &json!({"label": "ham"})).unwrap_err();
        assert!(bare.0.contains("\"output\" member"), "{bare}");
        assert!(check_result(&schema, &json!("ham")).is_err());
        let wrong = check_result(&schema, &json!({"output": {"label": 1}})).unwrap_err();
        assert!(
            wrong.0.starts_with("result.output does not match") && wrong.0.contains("\"/label\""),
            "{wrong}"
        );
    }
}
