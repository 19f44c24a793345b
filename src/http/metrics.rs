//! OpenTelemetry metrics of the HTTP layer (scraped with every other instrument at
//! `/metrics`, see `telemetry`): requests by method, route and status, their latency,
//! and the requests being answered now (a stream until it ends), which is also how
//! tests know a long poll or a stream has reached the server.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, HttpBody as _};
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::Stream;
use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};
use opentelemetry::KeyValue;

use super::AppState;

/// The HTTP instruments.
#[derive(Clone)]
pub struct Metrics {
    requests: Counter<u64>,
    duration: Histogram<f64>,
    in_flight: UpDownCounter<i64>,
}

impl Metrics {
    /// The HTTP instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        let requests = meter
            .u64_counter("tasklane.http.requests")
            .with_description("HTTP requests answered, by method, route and status")
            .build();
        let duration = meter
            .f64_histogram("tasklane.http.request_duration")
            .with_unit("s")
            .with_description("Time to answer HTTP requests (for streams: to start the stream)")
            .with_boundaries(crate::telemetry::instruments::SECONDS.to_vec())
            .build();
        let in_flight = meter
            .i64_up_down_counter("tasklane.http.requests_in_flight")
            .with_description(
                "HTTP requests being answered, by method and route (a stream until it ends)",
            )
            .build();
        Metrics {
            requests,
            duration,
            in_flight,
        }
    }
}

/// Middleware recording every routed request.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = KeyValue::new("method", request.method().as_str().to_owned());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let route = KeyValue::new("route", route);
    let in_flight = InFlight::enter(&state.metrics, [method.clone(), route.clone()]);
    let response = next.run(request).await;
    let labels = [
        method,
        route,
        KeyValue::new("status", i64::from(response.status().as_u16())),
    ];
    state.metrics.requests.add(1, &labels);
    state
        .metrics
        .duration
        .record(started.elapsed().as_secs_f64(), &labels);
    in_flight.until_sent(response)
}

/// One request counted in `tasklane_http_requests_in_flight`, until dropped.
struct InFlight {
    gauge: UpDownCounter<i64>,
    labels: [KeyValue; 2],
}

impl InFlight {
    fn enter(metrics: &Metrics, labels: [KeyValue; 2]) -> Self {
        metrics.in_flight.add(1, &labels);
        InFlight {
            gauge: metrics.in_flight.clone(),
            labels,
        }
    }

    /// Keeps the request counted while its body is sent: a body of known length is
    /// ready now, so it stops counting here; a streamed body (an event stream) carries
    /// the count until the stream ends or the client goes away.
    fn until_sent(self, response: Response) -> Response {
        if response.body().size_hint().exact().is_some() {
            return response;
        }
        response.map(|body| {
            Body::from_stream(Counted {
                inner: body.into_data_stream(),
                _in_flight: self,
            })
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.add(-1, &self.labels);
    }
}

/// A body stream that holds an [`InFlight`] until it is dropped.
struct Counted<S> {
    inner: S,
    _in_flight: InFlight,
}

impl<S: Stream + Unpin> Stream for Counted<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_flight(telemetry: &crate::telemetry::Telemetry) -> f64 {
        telemetry
            .render()
            .lines()
            .filter(|l| l.starts_with("tasklane_http_requests_in_flight{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    fn labels() -> [KeyValue; 2] {
        [KeyValue::new("method", "GET"), KeyValue::new("route", "/r")]
    }

    #[test]
    fn a_streamed_body_counts_until_dropped_a_sized_one_not() {
        let telemetry = crate::telemetry::Telemetry::local();
        let metrics = Metrics::new(&telemetry.meter());
        let sized = InFlight::enter(&metrics, labels()).until_sent(Response::new(Body::from("{}")));
        assert_eq!(in_flight(&telemetry), 0.0);
        drop(sized);

        let chunks = futures_util::stream::iter([Ok::<_, std::io::Error>("a")]);
        let streamed = Response::new(Body::from_stream(chunks));
        let streamed = InFlight::enter(&metrics, labels()).until_sent(streamed);
        assert_eq!(in_flight(&telemetry), 1.0);
        drop(streamed);
        assert_eq!(in_flight(&telemetry), 0.0);
    }
}
