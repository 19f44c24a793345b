//! Every instrument tasklane records, created once per process from its meter and
//! passed to the parts that record them. Attributes are bounded: task types, states,
//! routes, outcomes, refusal codes, providers and models come from configuration or
//! fixed sets; task ids, scopes and subjects never become attributes.

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::KeyValue;

/// Bucket bounds (seconds) of the duration histograms: from a millisecond (a noop
/// attempt, a pickup on an idle worker) to ten minutes (a long inference call).
pub const SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0, 600.0,
];

/// Bucket bounds of token counts per call (the GenAI semantic conventions' advice).
const TOKENS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
];

/// The instruments of one process. Cloning shares them.
#[derive(Clone)]
pub struct Instruments {
    submitted: Counter<u64>,
    refused: Counter<u64>,
    queue_wait: Histogram<f64>,
    claims: Counter<u64>,
    attempt_duration: Histogram<f64>,
    leases_lost: Counter<u64>,
    recovered: Counter<u64>,
    pruned: Counter<u64>,
    webhook_deliveries: Counter<u64>,
    genai_duration: Histogram<f64>,
    genai_tokens: Histogram<u64>,
    circuit_changes: Counter<u64>,
}

impl Instruments {
    /// The instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Instruments {
            submitted: meter
                .u64_counter("tasklane.tasks.submitted")
                .with_description("Submits answered with a task, by task type and outcome (created, joined, existing)")
                .build(),
            refused: meter
                .u64_counter("tasklane.tasks.refused")
                .with_description("Submits refused, by task type and stable code")
                .build(),
            queue_wait: meter
                .f64_histogram("tasklane.task.queue_wait")
                .with_unit("s")
                .with_description("Time from claimable (queued, or its retry due) to claimed, by task type")
                .with_boundaries(SECONDS.to_vec())
                .build(),
            claims: meter
                .u64_counter("tasklane.claims")
                .with_description("Claim statements run, by outcome (tasks: it claimed some; empty: it found none, the cost of polling an empty queue)")
                .build(),
            attempt_duration: meter
                .f64_histogram("tasklane.attempt.duration")
                .with_unit("s")
                .with_description("In-process attempts from claim to settlement, by task type, route and outcome")
                .with_boundaries(SECONDS.to_vec())
                .build(),
            leases_lost: meter
                .u64_counter("tasklane.leases.lost")
                .with_description("In-process attempts that found their lease lost or their task deleted, by task type")
                .build(),
            recovered: meter
                .u64_counter("tasklane.leases.recovered")
                .with_description("Tasks whose worker was lost, recovered by the restart policy, by reason (expired, handed_back; a cold start logs what it recovered)")
                .build(),
            pruned: meter
                .u64_counter("tasklane.tasks.pruned")
                .with_description("Released terminal tasks deleted after the retention")
                .build(),
            webhook_deliveries: meter
                .u64_counter("tasklane.webhooks.deliveries")
                .with_description("Webhook delivery attempts, by outcome (delivered, retried, failed, disabled; released: not sent, its turn came too late for its claim)")
                .build(),
            genai_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(SECONDS.to_vec())
                .build(),
            genai_tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKENS.to_vec())
                .build(),
            circuit_changes: meter
                .u64_counter("tasklane.circuit.changes")
                .with_description("Circuit-breaker changes made by this process, by route name and change (opened, probe, closed, reopened, reset)")
                .build(),
        }
    }

    /// Instruments that record nothing (a meter without a provider): for tools and
    /// tests that do not scrape.
    pub fn noop() -> Self {
        Instruments::new(&opentelemetry::global::meter_provider().meter("tasklane-noop"))
    }

    /// The counters alerts take `increase()` of, at zero for every label known at
    /// start: a series that first appears at its first increment has no earlier sample,
    /// so `rate()` and `increase()` miss that increment and the first lost lease or
    /// failed delivery would raise no alert (and a graph would show "no data").
    pub fn declare<'a>(&self, task_types: impl IntoIterator<Item = &'a str>) {
        for task_type in task_types {
            self.leases_lost
                .add(0, &[KeyValue::new("task_type", task_type.to_owned())]);
        }
        for outcome in ["tasks", "empty"] {
            self.claims.add(0, &[KeyValue::new("outcome", outcome)]);
        }
        for reason in ["expired", "handed_back"] {
            self.recovered.add(0, &[KeyValue::new("reason", reason)]);
        }
        for outcome in ["delivered", "retried", "failed", "disabled", "released"] {
            self.webhook_deliveries
                .add(0, &[KeyValue::new("outcome", outcome)]);
        }
    }

    pub fn submitted(&self, task_type: &str, outcome: &'static str) {
        self.submitted.add(
            1,
            &[
                KeyValue::new("task_type", task_type.to_owned()),
                KeyValue::new("outcome", outcome),
            ],
        );
    }

    pub fn refused(&self, task_type: &str, code: &'static str) {
        self.refused.add(
            1,
            &[
                KeyValue::new("task_type", task_type.to_owned()),
                KeyValue::new("code", code),
            ],
        );
    }

    pub fn queue_wait(&self, task_type: &str, seconds: f64) {
        self.queue_wait
            .record(seconds, &[KeyValue::new("task_type", task_type.to_owned())]);
    }

    /// One claim statement and how many tasks it took.
    pub fn claim(&self, claimed: usize) {
        let outcome = if claimed == 0 { "empty" } else { "tasks" };
        self.claims.add(1, &[KeyValue::new("outcome", outcome)]);
    }

    pub fn attempt(
        &self,
        task_type: &str,
        route: &'static str,
        outcome: &'static str,
        seconds: f64,
    ) {
        self.attempt_duration.record(
            seconds,
            &[
                KeyValue::new("task_type", task_type.to_owned()),
                KeyValue::new("route", route),
                KeyValue::new("outcome", outcome),
            ],
        );
    }

    pub fn lease_lost(&self, task_type: &str) {
        self.leases_lost
            .add(1, &[KeyValue::new("task_type", task_type.to_owned())]);
    }

    pub fn recovered(&self, reason: &'static str, count: u64) {
        if count > 0 {
            self.recovered
                .add(count, &[KeyValue::new("reason", reason)]);
        }
    }

    /// A circuit-breaker change this process made (`opened`, `probe`, `closed`,
    /// `reopened`, `reset`); summed over replicas it shows the cluster's.
    pub fn circuit_change(&self, route_name: &str, change: &'static str) {
        self.circuit_changes.add(
            1,
            &[
                KeyValue::new("route_name", route_name.to_owned()),
                KeyValue::new("change", change),
            ],
        );
    }

    pub fn pruned(&self, count: u64) {
        if count > 0 {
            self.pruned.add(count, &[]);
        }
    }

    /// One webhook delivery attempt and what came of it.
    pub fn webhook_delivery(&self, outcome: &'static str) {
        self.webhook_deliveries
            .add(1, &[KeyValue::new("outcome", outcome)]);
    }

    /// One upstream model call: its duration and, when the provider reported them,
    /// input and output tokens (GenAI semantic conventions).
    pub fn genai_call(&self, call: &GenAiCall<'_>) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", call.operation),
            KeyValue::new("gen_ai.provider.name", call.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", call.model.to_owned()),
        ];
        if let Some(error) = call.error_type {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        self.genai_duration.record(call.seconds, &attributes);
        for (kind, tokens) in [("input", call.input_tokens), ("output", call.output_tokens)] {
            if let Some(tokens) = tokens {
                let mut attributes = attributes.clone();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.genai_tokens.record(tokens, &attributes);
            }
        }
    }
}

/// What one upstream model call reports to [`Instruments::genai_call`].
#[derive(Debug, Clone)]
pub struct GenAiCall<'a> {
    pub operation: &'static str,
    pub provider: &'a str,
    pub model: &'a str,
    pub seconds: f64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The error's class (a status code, `timeout`, ...) when the call failed.
    pub error_type: Option<&'a str>,
}
