//! Telemetry from outside, against real `tasklane serve` processes: one task's spans
//! from two replicas (an API replica and a worker replica) land in one trace, nested
//! submit → claim → attempt → settle under the caller's `traceparent`, at an OTLP/HTTP
//! receiver this test runs; `/metrics` passes `promtool check metrics` and carries the
//! task instruments; a malformed collector endpoint is refused at start (the OTLP
//! variables and TLS: otlp_tls.rs).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message as _;
use serde_json::json;

use crate::common;
use common::api::{self, ALL};
use common::fixtures::count;
use common::serve::{self, Options, Serve};

/// One exported span, as the receiver decoded it.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
}

/// An OTLP/HTTP receiver on loopback: decodes every span export and keeps the spans.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let spans: Arc<Mutex<Vec<Received>>> = Arc::default();
        let kept = spans.clone();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                post(move |body: Bytes| {
                    let kept = kept.clone();
                    async move {
                        let request = ExportTraceServiceRequest::decode(body)
                            .expect("an OTLP protobuf trace export");
                        kept.lock().unwrap().extend(decode(request));
                        ""
                    }
                }),
            )
            .route("/v1/metrics", post(|| async { "" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, spans }
    }

    fn spans_of(&self, trace_id: &str) -> Vec<Received> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

fn decode(request: ExportTraceServiceRequest) -> Vec<Received> {
    let mut out = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                out.push(Received {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                });
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn traced(service: &str, endpoint: &str, roles: &'static str) -> Options {
    Options {
        roles: Some(roles),
        env: vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
            ("OTEL_SERVICE_NAME", service.to_owned()),
        ],
        ..Options::default()
    }
}

#[tokio::test]
async fn one_tasks_spans_from_two_replicas_share_the_callers_trace_and_nest() {
    let db = common::test_db().await;
    let receiver = Receiver::start().await;
    let mut api_replica = Serve::start(&db.url, traced("api-replica", &receiver.url, "api")).await;
    let mut worker = Serve::start(
        &db.url,
        traced("worker-replica", &receiver.url, "worker,maintenance"),
    )
    .await;
    let client = api_replica.api(&api::token(&db.url, "mail", None, ALL).await);

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let request = client
        .http
        .post(format!("{}/v1/tasks", client.base))
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&json!({"task_type": "noop", "scope_id": "s", "effect_key": "k", "input": {}}));
    let submitted = client.send(request).await;
    assert_eq!(submitted.status, 202, "{:?}", submitted.body);
    let id = submitted.body["id"].as_str().unwrap().to_owned();
    client.wait_for(&id, |t| t["state"] == "succeeded").await;

    // Spans leave in batches; a replica sends what it holds when it stops.
    api_replica.terminate();
    worker.terminate();
    assert!(api_replica
        .wait_exit(Duration::from_secs(30))
        .await
        .success());
    assert!(worker.wait_exit(Duration::from_secs(30)).await.success());

    let spans = common::eventually(Duration::from_secs(10), "the task's spans", || async {
        let spans = receiver.spans_of(trace_id);
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        let all = [
            "tasklane.submit",
            "tasklane.claim",
            "tasklane.attempt",
            "tasklane.settle",
        ];
        if all.iter().all(|n| names.contains(n)) {
            Ok(spans)
        } else {
            Err(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        }
    })
    .await;
    let by_name: HashMap<&str, &Received> = spans.iter().map(|s| (s.name.as_str(), s)).collect();
    let submit = by_name["tasklane.submit"];
    let claim = by_name["tasklane.claim"];
    let attempt = by_name["tasklane.attempt"];
    let settle = by_name["tasklane.settle"];
    assert_eq!(submit.service, "api-replica");
    for span in [claim, attempt, settle] {
        assert_eq!(span.service, "worker-replica", "{span:?}");
    }
    assert_eq!(
        submit.parent_span_id, caller_span,
        "submit continues the caller's span"
    );
    assert_eq!(claim.parent_span_id, submit.span_id, "claim under submit");
    assert_eq!(attempt.parent_span_id, claim.span_id, "attempt under claim");
    assert_eq!(
        settle.parent_span_id, attempt.span_id,
        "settle under attempt"
    );
}

#[tokio::test]
async fn metrics_pass_promtool_and_carry_the_task_instruments() {
    let db = common::test_db().await;
    // A remote task queued before the replica starts: the queue-depth sampler's first
    // pass (at start) sees it, and no in-process worker takes it.
    let c = db.client().await;
    let remote = tasklane::task::TaskType::new("remote", tasklane::task::Executor::Remote);
    let mut request = common::fixtures::request("queued", json!({}));
    request.task_type = "remote".into();
    common::fixtures::try_submit_as(&c, &request, &remote)
        .await
        .expect("submit a remote task");
    let serve = Serve::start(&db.url, Options::default()).await;
    let client = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    client.run_noops_and_a_conflict(3).await;

    // The queue gauges as a sample taken once the noops were done shows them: the
    // depth and the oldest age are two statements of one pass, and a pass that ran while
    // a noop waited between them reads a depth of 0 beside an age of a few ms.
    let text = common::eventually(Duration::from_secs(30), "the queue gauges", || async {
        let text = scrape(&serve.base).await;
        let idle = [("task_type", "noop")];
        if sample(&text, "tasklane_queue_oldest_age_seconds", &idle) == Some(0.0) {
            Ok(text)
        } else {
            Err("no sample of the noops' queue since they were done")
        }
    })
    .await;
    let expected: [Expected; 14] = [
        (
            "tasklane_tasks_submitted_total",
            &[("task_type", "noop"), ("outcome", "created")],
            Some(3.0),
        ),
        (
            "tasklane_tasks_refused_total",
            &[("task_type", "noop"), ("code", "idempotency_conflict")],
            Some(1.0),
        ),
        (
            "tasklane_queue_depth",
            &[("task_type", "remote"), ("state", "queued")],
            Some(1.0),
        ),
        (
            "tasklane_attempt_duration_seconds_count",
            &[
                ("task_type", "noop"),
                ("route", "local"),
                ("outcome", "succeeded"),
            ],
            Some(3.0),
        ),
        (
            "tasklane_task_queue_wait_seconds_count",
            &[("task_type", "noop")],
            Some(3.0),
        ),
        // A registered type with nothing waiting reports 0, not no series.
        (
            "tasklane_queue_depth",
            &[("task_type", "noop"), ("state", "queued")],
            Some(0.0),
        ),
        (
            "tasklane_queue_oldest_age_seconds",
            &[("task_type", "noop")],
            Some(0.0),
        ),
        ("tasklane_queue_sampler", &[], Some(1.0)),
        // The test's own connections hold short transactions at most.
        ("tasklane_oldest_snapshot_age_seconds", &[], None),
        ("tasklane_replicas", &[], Some(1.0)),
        (
            "tasklane_emergency_stops",
            &[("scope", "global")],
            Some(0.0),
        ),
        ("tasklane_db_pool_connections", &[("state", "idle")], None),
        // Three noops take one to three claim statements, as the loop's timing goes.
        ("tasklane_claims_total", &[("outcome", "tasks")], None),
        (
            "tasklane_http_requests_total",
            &[("route", "/v1/tasks"), ("status", "202")],
            Some(3.0),
        ),
    ];
    for (name, labels, value) in expected {
        let found = sample(&text, name, labels);
        assert!(found.is_some(), "missing {name}{labels:?} in\n{text}");
        if let Some(value) = value {
            assert_eq!(found, Some(value), "{name}{labels:?}");
        }
    }
    // The remote task has waited since before the replica started.
    let waited = sample(
        &text,
        "tasklane_queue_oldest_age_seconds",
        &[("task_type", "remote")],
    );
    assert!(
        waited.is_some_and(|s| s > 0.0),
        "oldest remote task's age: {waited:?}"
    );
    let promtool = which("promtool")
        .expect("promtool is needed (Debian package `prometheus`; .ci/run installs it)");
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = check.wait_with_output().unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool check metrics: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn a_malformed_collector_endpoint_is_refused_at_start() {
    let stderr = refused_at_start("collector:4318").await;
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT is not a URL"),
        "{stderr}"
    );
    // Not http(s): refused too, showing only its origin.
    let stderr = refused_at_start("ftp://otel.example:4318/v1?key=SECRET").await;
    assert!(
        stderr.contains("must be an http:// or https:// URL")
            && stderr.contains("ftp://otel.example:4318"),
        "{stderr}"
    );
    assert!(!stderr.contains("SECRET"), "{stderr}");
}

/// Starts `serve` with the collector `endpoint`, which it must refuse; its stderr.
async fn refused_at_start(endpoint: &str) -> String {
    serve::refused_at_start(
        &["--no-migrate"],
        &[
            ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ],
    )
    .await
}

/// The replica's `/metrics` text.
async fn scrape(base: &str) -> String {
    let answer = reqwest::get(format!("{base}/metrics")).await.unwrap();
    answer.text().await.unwrap()
}

/// A metric name, labels its sample must have, and its value when it is known.
type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<f64>);

/// The value of the sample of metric `name` whose labels include `labels` (in any order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix('{')?;
        let (set, value) = rest.split_once("} ")?;
        labels
            .iter()
            .all(|(k, v)| set.split(',').any(|pair| pair == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| std::path::Path::new(dir).join(program))
        .find(|path| path.is_file())
}

/// A collector that takes connections and never answers: span export waits out its
/// timeout while the bounded queue fills, and the replica drops spans (counting them)
/// rather than holding up the tasks that ended them.
#[tokio::test]
async fn a_collector_that_hangs_costs_spans_not_tasks() {
    let db = common::test_db().await;
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", hanging.local_addr().unwrap());
    let c = db.client().await;
    // 2,000 noop tasks, three spans each (claim, attempt, settle): more than the export
    // queue holds while the first export hangs.
    tasklane::load::drain::enqueue(&c, "mail", "noop", 2_000, &json!({}))
        .await
        .unwrap();
    let serve = Serve::start(
        &db.url,
        Options {
            env: vec![("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)],
            args: vec!["--concurrency=256".into(), "--claim-batch=100".into()],
            ..Options::default()
        },
    )
    .await;
    common::eventually(
        Duration::from_secs(120),
        "every task to succeed",
        || async {
            let done = count(
                &c,
                "SELECT count(*) FROM tasklane.tasks WHERE state = 'succeeded'",
            )
            .await;
            if done == 2_000 {
                Ok(())
            } else {
                Err(done)
            }
        },
    )
    .await;
    let text = scrape(&serve.base).await;
    let dropped = sample(&text, "tasklane_telemetry_spans_dropped_total", &[]);
    assert!(
        dropped.is_some_and(|d| d > 0.0),
        "spans were dropped and counted: {dropped:?}"
    );
    drop(hanging);
}
