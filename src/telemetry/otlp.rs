//! OTLP/HTTP (protobuf) export of metrics and spans, set up per signal only when its
//! endpoint is configured (`otlp_env`). Spans go through a bounded queue of our own
//! ([`BoundedExport`]) so that a collector that is down drops spans, counted, instead
//! of holding up the code that ended them.

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use opentelemetry::metrics::Counter;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as _, SpanProcessor};
use opentelemetry_sdk::Resource;

use super::otlp_client;
use super::otlp_env::Export;

/// Spans waiting for export at most; past it new spans are dropped (and counted).
const SPAN_QUEUE: usize = 4096;
/// Spans per export request at most.
const SPAN_BATCH: usize = 512;
/// Longest a finished span waits before its batch is sent.
const SPAN_DELAY: Duration = Duration::from_secs(1);

/// Pushes every instrument to the metrics endpoint every `interval`. The exporter
/// resolves the endpoint and headers from the environment itself.
pub fn metric_reader(
    export: &Export,
    interval: Duration,
) -> anyhow::Result<PeriodicReader<opentelemetry_otlp::MetricExporter>> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(otlp_client::build(
            export.ca_pem.as_deref(),
            export.timeout,
        )?)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(export.timeout)
        .build()
        .context("build the OTLP metric exporter")?;
    Ok(PeriodicReader::builder(exporter)
        .with_interval(interval)
        .build())
}

/// A tracer provider exporting to the traces endpoint through a bounded queue. The SDK
/// reads the sampler (`OTEL_TRACES_SAMPLER`, checked at start) itself.
pub fn tracer_provider(export: &Export, resource: Resource) -> anyhow::Result<SdkTracerProvider> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(otlp_client::build(
            export.ca_pem.as_deref(),
            export.timeout,
        )?)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(export.timeout)
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
