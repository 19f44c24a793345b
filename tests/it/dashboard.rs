//! The Grafana dashboard (helm/tasklane/dashboards/tasklane.json) against a real
//! replica: every metric a panel queries, and every label it groups by, is in the
//! `/metrics` of a `tasklane serve` that ran tasks (noop ones, a refused repeat, an
//! `openai` type whose upstream answers and one whose upstream fails until its circuit
//! opens). A panel on a metric or label that does not exist fails here. (promtool
//! parses the expressions in scripts/check-helm.sh.)

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use tasklane::mockllm::{MockLlm, Reply};
use tasklane::task::types_file::DEMO_TASK_TYPES;

use crate::common;
use crate::openai::{self, openai_type, R};
use common::api::{self, ALL};
use common::serve::{Options, Serve};

const DASHBOARD: &str = include_str!("../../helm/tasklane/dashboards/tasklane.json");

/// Labels Prometheus adds from the scrape target, not the replica.
const TARGET_LABELS: &[&str] = &["le", "namespace", "pod"];

/// One query of a panel.
struct Target {
    panel: String,
    expr: String,
}

fn targets(panels: &[Value], out: &mut Vec<Target>) {
    for panel in panels {
        if let Some(nested) = panel["panels"].as_array() {
            targets(nested, out);
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(Target {
                panel: panel["title"].as_str().unwrap_or("").to_owned(),
                expr: target["expr"].as_str().expect("a PromQL expr").to_owned(),
            });
        }
    }
}

/// tasklane's metric names in an expression (they all start `tasklane_` or `gen_ai_`).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    for prefix in ["tasklane_", "gen_ai_"] {
        let mut from = 0;
        while let Some(at) = expr[from..].find(prefix).map(|i| i + from) {
            let starts_word =
                at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            let end = expr[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(expr.len(), |n| at + n);
            // A `gen_ai_` word may be a label (`gen_ai_provider_name` in `by (...)`,
            // followed by `,` `)` `=` or `!`): it is a metric when a selector or a range
            // follows. No label starts `tasklane_`, so such a word is always a metric,
            // bare (`max(tasklane_replicas)`) or not.
            let next = expr[end..].trim_start().chars().next();
            let metric = prefix == "tasklane_" || matches!(next, Some('{') | Some('['));
            if starts_word && metric {
                names.insert(expr[at..end].to_owned());
            }
            from = end;
        }
    }
    names
}

/// The labels of every `by (...)` clause of an expression.
fn grouping_labels(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("by (") {
        let clause = &rest[at + 4..];
        let end = clause.find(')').expect("a closed by clause");
        labels.extend(
            clause[..end]
                .split(',')
                .map(|l| l.trim().to_owned())
                .filter(|l| !l.is_empty()),
        );
        rest = &clause[end..];
    }
    labels
}

/// Whether the scrape has a sample of `name` (any labels).
fn has_metric(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
    })
}

/// Whether some sample of one of `names` carries label `label`.
fn has_label(text: &str, names: &BTreeSet<String>, label: &str) -> bool {
    let needle = format!("{label}=\"");
    text.lines().any(|l| {
        names.iter().any(|n| {
            l.strip_prefix(n.as_str())
                .is_some_and(|r| r.starts_with('{'))
        }) && (l.contains(&format!("{{{needle}")) || l.contains(&format!(",{needle}")))
    })
}

#[test]
fn the_dashboard_names_metrics_and_labels_only_in_promql_selectors() {
    assert_eq!(
        metric_names("sum by (gen_ai_provider_name) (rate(gen_ai_client_token_usage_sum{a=\"b\"}[5m])) + tasklane_x[1m]"),
        ["gen_ai_client_token_usage_sum", "tasklane_x"].map(String::from).into()
    );
    assert_eq!(
        grouping_labels("max by (task_type, state) (x) / sum by (le) (y)"),
        ["le", "state", "task_type"].map(String::from).into()
    );
}

#[tokio::test]
async fn every_dashboard_metric_and_label_is_in_a_real_replicas_scrape() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let base = mock.base_url();
    mock.set_default("ok", Reply::ok());
    mock.set_default("down", Reply::status(503, "model down", None));
    let answering = openai_type(
        "chat",
        "",
        &[R {
            name: "chat-local",
            kind: "local",
            model: "ok",
            base_url: &base,
        }],
        None,
    );
    // One failure opens the circuit, which stays open for the test.
    let failing = openai_type(
        "chat-down",
        "max_attempts = 2",
        &[R {
            name: "down-local",
            kind: "local",
            model: "down",
            base_url: &base,
        }],
        None,
    )
    .replacen(
        "model = \"down\"",
        "model = \"down\"\ncircuit_failures = 1\ncircuit_open_seconds = 3600",
        1,
    );
    let types = format!("{DEMO_TASK_TYPES}\n{answering}\n{failing}");
    let serve = Serve::start(
        &db.url,
        Options {
            task_types: Some(Box::leak(types.into_boxed_str())),
            ..Options::default()
        },
    )
    .await;
    let client = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    client.run_noops_and_a_conflict(3).await;
    let chat = openai::submit(&client, "chat", "c1", json!({})).await;
    assert_eq!(openai::terminal(&client, &chat).await["state"], "succeeded");
    // Its failed call opens the route's circuit; the loop below waits for the gauges.
    openai::submit(&client, "chat-down", "d1", json!({})).await;

    let mut wanted = Vec::new();
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    targets(dashboard["panels"].as_array().expect("panels"), &mut wanted);
    assert!(wanted.len() >= 20, "{} targets", wanted.len());
    let names: BTreeSet<String> = wanted.iter().flat_map(|t| metric_names(&t.expr)).collect();
    // The sampler reports the open circuit at its next pass (every 15 s).
    let text = common::eventually(
        Duration::from_secs(60),
        "every dashboard metric",
        || async {
            let text = reqwest::get(format!("{}/metrics", serve.base))
                .await
                .map_err(|e| e.to_string())?
                .text()
                .await
                .map_err(|e| e.to_string())?;
            let missing: Vec<&String> = names.iter().filter(|n| !has_metric(&text, n)).collect();
            if missing.is_empty() {
                Ok(text)
            } else {
                Err(format!("missing {missing:?}"))
            }
        },
    )
    .await;
    for target in &wanted {
        let metrics = metric_names(&target.expr);
        assert!(
            !metrics.is_empty(),
            "{}: no tasklane metric in {}",
            target.panel,
            target.expr
        );
        for label in grouping_labels(&target.expr) {
            if TARGET_LABELS.contains(&label.as_str()) {
                continue;
            }
            assert!(
                has_label(&text, &metrics, &label),
                "{}: no sample of {metrics:?} has label {label} ({})",
                target.panel,
                target.expr
            );
        }
    }
}
