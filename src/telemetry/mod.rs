//! Telemetry of one process: logs, metrics and traces through OpenTelemetry.
//!
//! Metrics are always scraped as Prometheus text at `/metrics` (every role serves it);
//! with an OTLP endpoint configured they are also pushed over OTLP/HTTP (protobuf),
//! and with one for traces spans are exported the same way, to a collector or straight
//! to a hosted backend (https, a header for its key). The standard `OTEL_*` variables
//! configure it (docs/observability.md lists them); what the SDK would silently
//! ignore or fall back on is refused at start instead, naming the variable. Export runs
//! on the SDK's own threads with bounded queues: a collector that is down or slow
//! drops spans (counted in `tasklane.telemetry.spans_dropped`) and never blocks or
//! slows task work.

mod headers;
pub mod instruments;
mod otlp;
mod otlp_client;
pub mod otlp_env;
pub mod outage;
mod resource;
mod sampler;
pub mod spans;

use std::sync::Arc;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use otlp_env::Signal;

pub use instruments::{GenAiCall, Instruments};

/// The meter and tracer providers of a process and the registry `/metrics` renders.
/// Cloning shares them.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

struct Inner {
    registry: prometheus::Registry,
    meter_provider: SdkMeterProvider,
    tracer_provider: Option<SdkTracerProvider>,
    instruments: Instruments,
}

impl Telemetry {
    /// The process's telemetry: installs the log subscriber (with an OpenTelemetry layer
    /// when traces are exported), the trace-context propagator, and the meter provider
    /// (Prometheus, plus OTLP when configured). Every `OTEL_*` setting is checked here,
    /// at start; a bad one is refused naming its variable.
    pub fn start() -> anyhow::Result<Telemetry> {
        let traces = otlp_env::signal(Signal::Traces)?;
        let metrics = otlp_env::signal(Signal::Metrics)?;
        let interval = otlp_env::metric_interval()?;
        sampler::check_env()?;
        let resource = resource::from_env()?;
        let (registry, prometheus) = prometheus_reader()?;
        let mut meters = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(prometheus);
        if let Some(export) = &metrics {
            meters = meters.with_reader(otlp::metric_reader(export, interval)?);
        }
        let meter_provider = meters.build();
        opentelemetry::global::set_meter_provider(meter_provider.clone());
        let tracer_provider = match &traces {
            Some(export) => Some(otlp::tracer_provider(export, resource)?),
            None => None,
        };
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        // Logs follow TASKLANE_LOG; spans are exported from tasklane's own code at INFO
        // whatever the log level, so a quiet log still yields whole traces.
        let logs = tracing_subscriber::EnvFilter::try_from_env("TASKLANE_LOG")
            .unwrap_or_else(|_| "info".into());
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(logs);
        let spans = tracer_provider.as_ref().map(|provider| {
            use opentelemetry::trace::TracerProvider as _;
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("tasklane"))
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("tasklane", tracing::Level::INFO),
                )
        });
        tracing_subscriber::registry()
            .with(fmt)
            .with(spans)
            .try_init()
            .ok();
        if let Some(export) = &traces {
            tracing::info!(collector = %export.origin, "exporting traces over OTLP/HTTP");
        }
        if let Some(export) = &metrics {
            tracing::info!(
                collector = %export.origin,
                interval_ms = interval.as_millis() as u64,
                "exporting metrics over OTLP/HTTP"
            );
        }
        Ok(Telemetry::from_parts(
            registry,
            meter_provider,
            tracer_provider,
        ))
    }

    /// Telemetry private to the caller: Prometheus only, nothing installed globally.
    /// For tests and in-process tools.
    pub fn local() -> Telemetry {
        let (registry, reader) = prometheus_reader().expect("a fresh Prometheus registry");
        let provider = SdkMeterProvider::builder().with_reader(reader).build();
        Telemetry::from_parts(registry, provider, None)
    }

    fn from_parts(
        registry: prometheus::Registry,
        meter_provider: SdkMeterProvider,
        tracer_provider: Option<SdkTracerProvider>,
    ) -> Telemetry {
        let instruments = Instruments::new(&meter_provider.meter("tasklane"));
        Telemetry {
            inner: Arc::new(Inner {
                registry,
                meter_provider,
                tracer_provider,
                instruments,
            }),
        }
    }

    /// The meter every tasklane instrument is created from.
    pub fn meter(&self) -> Meter {
        self.inner.meter_provider.meter("tasklane")
    }

    /// The instruments the service, workers and maintenance record.
    pub fn instruments(&self) -> &Instruments {
        &self.inner.instruments
    }

    /// The Prometheus text exposition of every instrument.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Err(error) =
            prometheus::TextEncoder::new().encode_utf8(&self.inner.registry.gather(), &mut text)
        {
            tracing::warn!(%error, "encode metrics");
        }
        text
    }

    /// Flushes what is buffered for export (bounded by the exporters' timeouts).
    pub fn shutdown(&self) {
        if let Some(provider) = &self.inner.tracer_provider {
            let _ = provider.shutdown();
        }
        let _ = self.inner.meter_provider.shutdown();
    }
}

fn prometheus_reader() -> anyhow::Result<(
    prometheus::Registry,
    opentelemetry_prometheus::PrometheusExporter,
)> {
    let registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .build()?;
    Ok((registry, exporter))
}
