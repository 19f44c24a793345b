//! The demo and benchmark executors: `noop` succeeds at once, `sleep` sleeps in steps.

use std::time::Duration;

use crate::service::{Beat, Success};

use super::super::handler::{Handler, HandlerError, Stop, TaskContext};

/// Succeeds at once with `result = input`.
pub struct Noop;

#[async_trait::async_trait]
impl Handler for Noop {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        Ok(Success {
            result: ctx.input().clone(),
            ..Success::default()
        })
    }
}

/// Input of the `sleep` executor.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SleepInput {
    ms: u64,
    #[serde(default)]
    fail: Option<FailAs>,
    #[serde(default)]
    steps: Option<u32>,
}

#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum FailAs {
    Retryable,
    Permanent,
}

/// The longest sleep: a day.
const MAX_SLEEP_MS: u64 = 86_400_000;
const MAX_SLEEP_STEPS: u32 = 10_000;

/// Sleeps `ms` in `steps`, reporting progress (and so heartbeating) after each step and
/// honouring cancellation between steps; then succeeds or fails as asked.
pub struct Sleep;

#[async_trait::async_trait]
impl Handler for Sleep {
    async fn run(&self, ctx: TaskContext) -> Result<Success, HandlerError> {
        let input: SleepInput = serde_json::from_value(ctx.input().clone())
            .map_err(|e| HandlerError::permanent(format!("bad sleep input: {e}")))?;
        let steps = input.steps.unwrap_or(1);
        if input.ms > MAX_SLEEP_MS || !(1..=MAX_SLEEP_STEPS).contains(&steps) {
            return Err(HandlerError::permanent(format!(
                "sleep takes ms <= {MAX_SLEEP_MS} and steps 1..={MAX_SLEEP_STEPS}"
            )));
        }
        let step = Duration::from_millis(input.ms) / steps;
        for done in 1..=steps {
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                _ = ctx.cancelled() => return Err(HandlerError::Cancelled),
            }
            let beat = Beat {
                progress: Some((done * 100 / steps) as i16),
                phase: Some("running".into()),
                ..Beat::default()
            };
            match ctx.report(beat).await {
                Ok(()) => {}
                Err(Stop::Cancelled) => return Err(HandlerError::Cancelled),
                // The runner sees the lost lease too and drops this attempt.
                Err(Stop::Lost) => return Err(HandlerError::Cancelled),
            }
        }
        match input.fail {
            Some(FailAs::Retryable) => Err(HandlerError::retryable("failed as asked")),
            Some(FailAs::Permanent) => Err(HandlerError::permanent("failed as asked")),
            None => Ok(Success {
                result: serde_json::json!({"slept_ms": input.ms}),
                ..Success::default()
            }),
        }
    }
}
