//! OpenTelemetry metrics of the HTTP layer, exported as Prometheus text at `/metrics`:
//! requests by method, route and status, and their latency.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::SdkMeterProvider;

use super::AppState;

/// The instruments and the registry they are scraped from.
#[derive(Clone)]
pub struct Metrics {
    registry: prometheus::Registry,
    requests: Counter<u64>,
    duration: Histogram<f64>,
    // Kept alive: dropping the provider stops collection.
    _provider: SdkMeterProvider,
}

impl Metrics {
    /// A fresh registry with the HTTP instruments.
    pub fn new() -> anyhow::Result<Self> {
        let registry = prometheus::Registry::new();
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()?;
        let provider = SdkMeterProvider::builder().with_reader(exporter).build();
        let meter = provider.meter("tasklane");
        let requests = meter
            .u64_counter("tasklane_http_requests")
            .with_description("HTTP requests answered, by method, route and status")
            .build();
        let duration = meter
            .f64_histogram("tasklane_http_request_duration")
            .with_unit("s")
            .with_description("Time to answer HTTP requests (for streams: to start the stream)")
            .build();
        Ok(Metrics {
            registry,
            requests,
            duration,
            _provider: provider,
        })
    }

    /// The Prometheus text exposition of every instrument.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(error) =
            prometheus::TextEncoder::new().encode_utf8(&self.registry.gather(), &mut text)
        {
            tracing::warn!(%error, "encode metrics");
        }
        text
    }
}

/// Middleware recording every routed request.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let response = next.run(request).await;
    let labels = [
        KeyValue::new("method", method),
        KeyValue::new("route", route),
        KeyValue::new("status", i64::from(response.status().as_u16())),
    ];
    state.metrics.requests.add(1, &labels);
    state
        .metrics
        .duration
        .record(started.elapsed().as_secs_f64(), &labels);
    response
}
