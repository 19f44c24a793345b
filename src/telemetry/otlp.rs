//! OTLP/HTTP (protobuf) export of metrics and spans, set up only when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector. Spans go through a bounded queue of
//! our own ([`BoundedExport`]) so that a collector that is down drops spans, counted,
//! instead of holding up the code that ended them.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use opentelemetry::metrics::Counter;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as _, SpanProcessor};
use opentelemetry_sdk::Resource;

use super::OTLP_ENDPOINT;

/// Spans waiting for export at most; past it new spans are dropped (and counted).
const SPAN_QUEUE: usize = 4096;
/// Spans per export request at most.
const SPAN_BATCH: usize = 512;
/// Longest a finished span waits before its batch is sent.
const SPAN_DELAY: Duration = Duration::from_secs(1);
/// Metrics are pushed this often.
const METRIC_INTERVAL: Duration = Duration::from_secs(15);
/// One export request's timeout.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The collector's base URL from the environment, checked: `None` when unset or empty;
/// an error naming the variable when it is not an http(s) URL.
pub fn endpoint_from_env() -> anyhow::Result<Option<String>> {
    match std::env::var(OTLP_ENDPOINT) {
        Ok(value) if !value.trim().is_empty() => check_endpoint(value.trim()).map(Some),
        _ => Ok(None),
    }
}

/// `value` as a base URL without a trailing slash, or why it is not one. Messages show
/// at most the URL's origin: the rest (a path token, user info) may be a secret.
pub fn check_endpoint(value: &str) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(value)
        .ok()
        .filter(|url| url.host_str().is_some())
        .with_context(|| {
            format!("{OTLP_ENDPOINT} is not a URL with a host (e.g. http://otel-collector:4318)")
        })?;
    // The OTLP exporter here is built without a TLS client: an https collector would
    // fail every export, quietly. Refused at start instead.
    anyhow::ensure!(
        url.scheme() == "http",
        "{OTLP_ENDPOINT} must be an http:// URL (OTLP over HTTP without TLS, e.g. to a \
         collector on the node or in the pod); {} is not supported",
        url.origin().ascii_serialization()
    );
    Ok(value.trim_end_matches('/').to_owned())
}

/// What may be logged of an endpoint: its origin.
pub fn origin(endpoint: &str) -> String {
    reqwest::Url::parse(endpoint)
        .map(|url| url.origin().ascii_serialization())
        .unwrap_or_default()
}

pub fn resource(service: &str) -> Resource {
    Resource::builder()
        .with_service_name(service.to_owned())
        .build()
}

/// Pushes every instrument to `{endpoint}/v1/metrics` every [`METRIC_INTERVAL`].
pub fn metric_reader(
    endpoint: &str,
) -> anyhow::Result<PeriodicReader<opentelemetry_otlp::MetricExporter>> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/metrics"))
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .context("build the OTLP metric exporter")?;
    Ok(PeriodicReader::builder(exporter)
        .with_interval(METRIC_INTERVAL)
        .build())
}

/// A tracer provider exporting to `{endpoint}/v1/traces` through a bounded queue.
pub fn tracer_provider(endpoint: &str, resource: Resource) -> anyhow::Result<SdkTracerProvider> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .context("build the OTLP span exporter")?;
    exporter.set_resource(&resource);
    // Its own meter provider would not be scraped; the drop count goes through the
    // global one, which the process installs (`Telemetry::start`).
    let dropped = opentelemetry::global::meter_provider()
        .meter("tasklane")
        .u64_counter("tasklane.telemetry.spans_dropped")
        .with_description(
            "Spans dropped because the export queue was full (collector down or slow)",
        )
        .build();
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(BoundedExport::start(exporter, dropped))
        .build())
}

/// A span processor with a bounded queue and one export thread.
#[derive(Debug)]
struct BoundedExport {
    queue: Mutex<Option<SyncSender<SpanData>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    dropped: Counter<u64>,
}

impl BoundedExport {
    fn start(exporter: opentelemetry_otlp::SpanExporter, dropped: Counter<u64>) -> Self {
        let (queue, spans) = mpsc::sync_channel(SPAN_QUEUE);
        let thread = std::thread::Builder::new()
            .name("tasklane-span-export".into())
            .spawn(move || export_loop(exporter, spans))
            .expect("start the span export thread");
        BoundedExport {
            queue: Mutex::new(Some(queue)),
            thread: Mutex::new(Some(thread)),
            dropped,
        }
    }
}

impl SpanProcessor for BoundedExport {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        let queue = self.queue.lock().expect("span queue lock");
        let Some(queue) = queue.as_ref() else { return };
        if let Err(TrySendError::Full(_)) = queue.try_send(span) {
            self.dropped.add(1, &[]);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    /// Closes the queue and waits (up to `timeout`) for what is in it to be sent.
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        drop(self.queue.lock().expect("span queue lock").take());
        let Some(thread) = self.thread.lock().expect("span thread lock").take() else {
            return Ok(());
        };
        let deadline = Instant::now() + timeout;
        while !thread.is_finished() {
            if Instant::now() >= deadline {
                return Err(OTelSdkError::Timeout(timeout));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = thread.join();
        Ok(())
    }
}

/// Sends batches of up to [`SPAN_BATCH`] spans, each at most [`SPAN_DELAY`] after its
/// first span arrived, until the queue closes; then sends the rest. An export that
/// fails is dropped (the collector is the one to keep data, not the replica).
fn export_loop(exporter: opentelemetry_otlp::SpanExporter, spans: mpsc::Receiver<SpanData>) {
    let mut batch = Vec::with_capacity(SPAN_BATCH);
    let mut open = true;
    while open {
        match spans.recv() {
            Ok(span) => batch.push(span),
            Err(_) => break,
        }
        let due = Instant::now() + SPAN_DELAY;
        while batch.len() < SPAN_BATCH {
            match spans.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(span) => batch.push(span),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let sending = std::mem::replace(&mut batch, Vec::with_capacity(SPAN_BATCH));
        if let Err(error) = block_on(exporter.export(sending)) {
            tracing::debug!(%error, "span export failed; spans dropped");
        }
    }
    let _ = exporter.shutdown();
}

/// Runs an export future to completion on this (export) thread, parking it while the
/// future waits: the blocking reqwest client under the OTLP exporter needs no runtime.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}
