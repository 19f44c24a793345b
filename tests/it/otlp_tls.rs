//! OTLP export as a hosted backend sees it: a `tasklane serve` configured only through
//! the standard `OTEL_*` variables sends both signals (traces and metrics, protobuf
//! over HTTP) to an https receiver this test runs, whose certificate a CA made here
//! signs (trusted through `OTEL_EXPORTER_OTLP_CERTIFICATE`), with the configured
//! header on every request and the configured resource attributes; the header's value
//! never appears in the replica's logs; bad values are refused at start naming the
//! variable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;

use crate::common;
use common::api::{self, ALL};
use common::serve::{self, Options, Serve};
use common::tls_cluster;

/// The API key of the "hosted backend"; it must reach the receiver and nothing else.
const SECRET: &str = "tl-otlp-key-4b1d-never-logged";

/// One export request as the receiver saw it.
#[derive(Debug, Clone)]
struct Export {
    signal: &'static str,
    authorization: Option<String>,
    resource: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Export>>>);

impl Received {
    fn keep(&self, signal: &'static str, headers: &HeaderMap, resource: HashMap<String, String>) {
        let authorization = headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or("").to_owned());
        self.0.lock().unwrap().push(Export {
            signal,
            authorization,
            resource,
        });
    }

    fn all(&self) -> Vec<Export> {
        self.0.lock().unwrap().clone()
    }
}

fn attributes(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .filter_map(|a| match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some((a.key.clone(), s.clone())),
            _ => None,
        })
        .collect()
}

/// An OTLP/HTTP receiver over TLS on loopback, for `localhost`; its base URL and what
/// it received. Returns with the CA's PEM.
async fn start_receiver() -> (String, Received, String) {
    let ca = tls_cluster::ca("otlp test CA").unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let chain = vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).unwrap()];
    let private = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, private)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let received = Received::default();
    let (traces, metrics) = (received.clone(), received.clone());
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| async move {
                let request =
                    ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
                for spans in request.resource_spans {
                    let resource = attributes(&spans.resource.unwrap_or_default().attributes);
                    traces.keep("traces", &headers, resource);
                }
            }),
        )
        .route(
            "/v1/metrics",
            post(move |headers: HeaderMap, body: Bytes| async move {
                let request =
                    ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
                for m in request.resource_metrics {
                    let resource = attributes(&m.resource.unwrap_or_default().attributes);
                    metrics.keep("metrics", &headers, resource);
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let io = hyper_util::rt::TokioIo::new(tls);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    (url, received, ca.pem())
}

fn temp_path(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tasklane-otlp-{what}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ))
}

#[tokio::test]
async fn both_signals_reach_an_https_receiver_with_the_header_and_resource_and_logs_keep_the_secret(
) {
    let db = common::test_db().await;
    let (url, received, ca_pem) = start_receiver().await;
    let ca = temp_path("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let log = temp_path("stderr.log");
    let serve = Serve::start(
        &db.url,
        Options {
            env: vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", url.clone()),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.display().to_string()),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    format!("authorization=Bearer%20{SECRET}"),
                ),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "deployment.environment.name=ops-test,team=tasks".to_owned(),
                ),
                ("OTEL_METRIC_EXPORT_INTERVAL", "500".to_owned()),
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio".to_owned()),
                ("OTEL_TRACES_SAMPLER_ARG", "1.0".to_owned()),
                // Everything tasklane and its libraries log at debug: still no secret.
                ("TASKLANE_LOG", "debug".to_owned()),
            ],
            stderr: Some(log.clone()),
            ..Options::default()
        },
    )
    .await;
    let client = serve.api(&api::token(&db.url, "mail", None, ALL).await);
    let answer = client.submit("noop", "s", "k", json!({})).await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_owned();
    client.wait_for(&id, |t| t["state"] == "succeeded").await;

    let exports = common::eventually(
        Duration::from_secs(60),
        "traces and metrics at the receiver",
        || async {
            let all = received.all();
            let signals: Vec<&str> = all.iter().map(|e| e.signal).collect();
            if signals.contains(&"traces") && signals.contains(&"metrics") {
                Ok(all)
            } else {
                Err(signals.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            }
        },
    )
    .await;
    for export in &exports {
        assert_eq!(
            export.authorization.as_deref(),
            Some(format!("Bearer {SECRET}").as_str()),
            "{} export without the configured header",
            export.signal
        );
        assert_eq!(
            export
                .resource
                .get("deployment.environment.name")
                .map(String::as_str),
            Some("ops-test"),
            "{export:?}"
        );
        assert_eq!(
            export.resource.get("team").map(String::as_str),
            Some("tasks"),
            "{export:?}"
        );
        assert_eq!(
            export.resource.get("service.name").map(String::as_str),
            Some("tasklane"),
            "{export:?}"
        );
    }

    serve.terminate();
    drop(serve);
    let logs = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&ca);
    // The logs were captured (the export lines are there), and the secret is not.
    assert!(logs.contains("exporting traces over OTLP/HTTP"), "{logs}");
    assert!(
        logs.contains(&url),
        "the collector's origin is logged: {logs}"
    );
    assert!(!logs.contains(SECRET), "the header's value is in the logs");
}

#[tokio::test]
async fn bad_otel_settings_are_refused_at_start_naming_the_variable_not_the_secret() {
    let cases: [(&[(&str, &str)], &str); 9] = [
        (
            &[(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer tl-SECRET,oops",
            )],
            "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value",
        ),
        (
            &[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "otel.example/v1/traces",
            )],
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL",
        ),
        (
            &[("OTEL_METRIC_EXPORT_INTERVAL", "15s")],
            "OTEL_METRIC_EXPORT_INTERVAL=15s is not a positive number of milliseconds",
        ),
        (
            &[
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "10%"),
            ],
            "OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1",
        ),
        (
            &[("OTEL_RESOURCE_ATTRIBUTES", "team=tasks,ops-test")],
            "OTEL_RESOURCE_ATTRIBUTES: entry 2 is not key=value",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem")],
            "OTEL_EXPORTER_OTLP_CERTIFICATE: read /nonexistent/ca.pem",
        ),
        (
            &[("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "10s")],
            "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT=10s is not a positive number of milliseconds",
        ),
        (
            &[("OTEL_TRACES_EXPORTER", "console")],
            "OTEL_TRACES_EXPORTER=console: this build exports over OTLP only",
        ),
        (
            &[(
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "https://u:tl-SECRET@otel.example:4318/v1/metrics\n",
            )],
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is not a valid URI as written",
        ),
    ];
    for (settings, says) in cases {
        let mut env = vec![
            ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318"),
        ];
        env.extend_from_slice(settings);
        let stderr = serve::refused_at_start(&["--no-migrate"], &env).await;
        assert!(stderr.contains(says), "{settings:?}: {stderr}");
        assert!(!stderr.contains("tl-SECRET"), "{stderr}");
    }
}
