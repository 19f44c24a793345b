//! A submit request: its validation and its digest. The digest is SHA-256 over the
//! canonical request with every default resolved, so two submits that mean the same
//! thing join one task, and a different meaning under the same identity is a conflict.

use sha2::{Digest, Sha256};

use super::bounds::{self, Invalid};
use super::locality::Privacy;
use super::restart::RestartPolicy;
use super::task_type::TaskType;

/// What a caller asks for; `None` means "the task type's default".
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    pub task_type: String,
    pub scope_id: String,
    pub effect_key: String,
    #[serde(default)]
    pub source_id: Option<String>,
    #[serde(default)]
    pub usage_subject: Option<String>,
    pub input: serde_json::Value,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub deadline_seconds: Option<i64>,
    #[serde(default)]
    pub max_attempts: Option<i32>,
    #[serde(default)]
    pub on_restart: Option<RestartPolicy>,
    #[serde(default)]
    pub privacy: Option<Privacy>,
}

/// A validated request with every default resolved from its task type: what one row of
/// `tasklane.tasks` is created from.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub app: String,
    pub scope_id: String,
    pub effect_key: String,
    pub source_id: Option<String>,
    pub usage_subject: Option<String>,
    pub task_type: String,
    pub input: serde_json::Value,
    pub priority: i32,
    pub deadline_seconds: Option<i64>,
    pub max_attempts: i32,
    pub on_restart: RestartPolicy,
    pub privacy: Privacy,
    pub lease_seconds: i64,
    pub attempt_timeout_seconds: i64,
    /// The task type's execution resource, snapshotted at submit (claims take a slot).
    pub resource: Option<String>,
    /// SHA-256 of the canonical request.
    pub digest: [u8; 32],
    /// The submit's W3C trace context, kept so attempts continue its trace; not part of
    /// the request's meaning (the digest leaves it out).
    pub traceparent: Option<String>,
}

impl SubmitRequest {
    /// Validates every bound and resolves defaults from `task_type` (which the caller
    /// looked up by `self.task_type`). `input_bytes` is the deployment's input bound.
    pub fn resolve(
        &self,
        app: &str,
        task_type: &TaskType,
        input_bytes: usize,
    ) -> Result<NewTask, Invalid> {
        bounds::key("app", app)?;
        bounds::key("scope_id", &self.scope_id)?;
        bounds::key("effect_key", &self.effect_key)?;
        if let Some(source) = &self.source_id {
            bounds::key("source_id", source)?;
        }
        if let Some(subject) = &self.usage_subject {
            bounds::key("usage_subject", subject)?;
        }
        let input_len = serde_json::to_vec(&self.input)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if input_len > input_bytes {
            return Err(Invalid::new(
                "input",
                format!("must be at most {input_bytes} bytes"),
            ));
        }
        bounds::json("input", &self.input)?;
        if task_type.executor == super::task_type::Executor::Openai {
            super::routes::validate_openai_input(&self.input)?;
            if task_type.output_schema.is_some() && self.input.get("response_format").is_some() {
                return Err(Invalid::new(
                    "input.response_format",
                    "must be absent: the task type's output_schema sets it",
                ));
            }
        }
        if self.privacy == Some(Privacy::ExternalAllowed) && !task_type.external_allowed {
            return Err(Invalid::new(
                "privacy",
                format!(
                    "task type {:?} does not allow external routes (external_allowed is false)",
                    task_type.name
                ),
            ));
        }
        let priority = self.priority.unwrap_or(0);
        bounds::within("priority", priority, &bounds::PRIORITY)?;
        let deadline_seconds = self.deadline_seconds.or(task_type.deadline_seconds);
        if let Some(deadline) = deadline_seconds {
            bounds::within("deadline_seconds", deadline, &bounds::DEADLINE_SECONDS)?;
        }
        let max_attempts = self.max_attempts.unwrap_or(task_type.max_attempts);
        bounds::within("max_attempts", max_attempts, &bounds::MAX_ATTEMPTS)?;
        let mut task = NewTask {
            app: app.to_owned(),
            scope_id: self.scope_id.clone(),
            effect_key: self.effect_key.clone(),
            source_id: self.source_id.clone(),
            usage_subject: self.usage_subject.clone(),
            task_type: self.task_type.clone(),
            input: self.input.clone(),
            priority,
            deadline_seconds,
            max_attempts,
            on_restart: self.on_restart.unwrap_or(task_type.on_restart),
            privacy: self.privacy.unwrap_or(task_type.privacy),
            lease_seconds: task_type.lease_seconds,
            attempt_timeout_seconds: task_type.attempt_timeout_seconds,
            resource: task_type.resource.clone(),
            digest: [0; 32],
            traceparent: None,
        };
        task.digest = task.canonical_digest();
        Ok(task)
    }
}

impl NewTask {
    /// SHA-256 over the canonical request: task type, source, input and resolved options.
    /// `serde_json::Value` keeps object keys sorted, so the encoding is canonical.
    fn canonical_digest(&self) -> [u8; 32] {
        let canonical = serde_json::json!({
            "task_type": self.task_type,
            "source_id": self.source_id,
            "input": self.input,
            "priority": self.priority,
            "deadline_seconds": self.deadline_seconds,
            "max_attempts": self.max_attempts,
            "on_restart": self.on_restart.as_str(),
            "privacy": self.privacy.as_str(),
        });
        Sha256::digest(canonical.to_string().as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Executor;

    fn request() -> SubmitRequest {
        serde_json::from_value(serde_json::json!({
            "task_type": "summarize", "scope_id": "mailbox-7", "effect_key": "req-1",
            "input": {"b": 1, "a": [1, 2]}
        }))
        .unwrap()
    }

    fn task_type() -> TaskType {
        TaskType::new("summarize", Executor::Noop)
    }

    #[test]
    fn digest_ignores_key_order_and_explicit_defaults() {
        let a = request().resolve("mail", &task_type(), 1024).unwrap();
        let mut reordered = request();
        reordered.input = serde_json::json!({"a": [1, 2], "b": 1});
        reordered.priority = Some(0);
        reordered.max_attempts = Some(3);
        let b = reordered.resolve("mail", &task_type(), 1024).unwrap();
        assert_eq!(a.digest, b.digest);
    }

    #[test]
    fn digest_changes_with_meaning() {
        let a = request().resolve("mail", &task_type(), 1024).unwrap();
        let mut other = request();
        other.input = serde_json::json!({"b": 2, "a": [1, 2]});
        assert_ne!(
            a.digest,
            other.resolve("mail", &task_type(), 1024).unwrap().digest
        );
        let mut urgent = request();
        urgent.priority = Some(5);
        assert_ne!(
            a.digest,
            urgent.resolve("mail", &task_type(), 1024).unwrap().digest
        );
    }

    #[test]
    fn refuses_out_of_bound_fields_by_name() {
        type Edit = Box<dyn Fn(&mut SubmitRequest)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("scope_id", Box::new(|r| r.scope_id = "x".repeat(201))),
            ("effect_key", Box::new(|r| r.effect_key.clear())),
            ("source_id", Box::new(|r| r.source_id = Some(String::new()))),
            (
                "usage_subject",
                Box::new(|r| r.usage_subject = Some("u".repeat(201))),
            ),
            ("priority", Box::new(|r| r.priority = Some(101))),
            (
                "deadline_seconds",
                Box::new(|r| r.deadline_seconds = Some(604_801)),
            ),
            ("max_attempts", Box::new(|r| r.max_attempts = Some(26))),
            (
                "input",
                Box::new(|r| r.input = serde_json::json!("x".repeat(2000))),
            ),
        ];
        for (field, mutate) in cases {
            let mut r = request();
            mutate(&mut r);
            assert_eq!(
                r.resolve("mail", &task_type(), 1024).unwrap_err().field,
                field
            );
        }
    }

    #[test]
    fn a_structured_openai_type_refuses_an_input_response_format() {
        let mut typed = TaskType::new("summarize", Executor::Openai);
        let schema = serde_json::json!({"type": "object"});
        typed.output_schema =
            Some(crate::task::output_schema::OutputSchema::compile(schema).unwrap());
        let mut r = request();
        r.input = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(r.resolve("mail", &typed, 1024).is_ok());
        r.input["response_format"] = serde_json::json!({"type": "json_object"});
        assert_eq!(
            r.resolve("mail", &typed, 1024).unwrap_err().field,
            "input.response_format"
        );
        typed.output_schema = None;
        assert!(r.resolve("mail", &typed, 1024).is_ok());
    }

    #[test]
    fn input_bound_is_inclusive() {
        let mut r = request();
        r.input = serde_json::json!("x".repeat(8)); // 10 bytes with quotes
        assert!(r.resolve("mail", &task_type(), 10).is_ok());
        assert!(r.resolve("mail", &task_type(), 9).is_err());
    }
}
