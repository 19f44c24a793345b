//! `tasklane dev --mock-llm`: the mock in-process, scripted so the demo `openai` type
//! shows routing, fallback and the circuit breaker within a minute. The demo's local
//! model (`llama3.2`) is "warming up": its first [`WARMUP_FAILURES`] calls answer 503,
//! which opens the local route's circuit (3 failures); `external_allowed` tasks fall
//! back to the external model meanwhile; `local_only` ones wait for the circuit without
//! spending attempts (deferred). Once the circuit's open time has passed, one probe
//! finds the local model up and closes it, and every waiting task answers locally.
//! Answers stream in a few chunks, so the console shows live output arriving. A call that
//! asks for structured output (the demo's `extract` type) is answered with JSON that
//! matches the schema it carries.

use std::time::Duration;

use super::{MockLlm, Reply};
use crate::task::TaskType;

/// Calls the demo's local model fails before it answers.
pub const WARMUP_FAILURES: usize = 4;

/// Starts the mock on loopback and points every route of `types` at it (keys dropped:
/// the mock takes none). Models other than the demo's answer at once.
pub async fn start_for(types: &mut [TaskType]) -> anyhow::Result<MockLlm> {
    let mock = MockLlm::start().await?;
    mock.script(
        "llama3.2",
        std::iter::repeat_n(
            Reply::status(503, "the local model is warming up", None)
                .after(Duration::from_millis(200)),
            WARMUP_FAILURES,
        ),
    );
    mock.set_default(
        "llama3.2",
        Reply::completion("Hello from the local model.", 12, 8)
            .after(Duration::from_millis(300))
            .chunks(6, Duration::from_millis(150))
            .following_schema(),
    );
    mock.set_default(
        "mock-external",
        Reply::completion("Hello from the external provider.", 12, 9)
            .after(Duration::from_millis(600))
            .chunks(6, Duration::from_millis(150))
            .following_schema(),
    );
    for task_type in types.iter_mut() {
        for route in &mut task_type.routes {
            route.base_url = mock.base_url();
            route.api_key_env = None;
            route.api_key_file = None;
        }
    }
    Ok(mock)
}
