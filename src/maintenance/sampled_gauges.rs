//! The gauges the cluster's elected sampler reports (`queue_depth`): what one query per
//! interval says about the whole cluster, kept in a [`Sample`] and read by the metric
//! callbacks at each scrape or export. A replica that is not the sampler reports only
//! `tasklane.queue.sampler` = 0, so sums over replicas count each task once.

use std::sync::{Arc, Mutex};

use opentelemetry::metrics::{Meter, ObservableGauge};
use opentelemetry::KeyValue;

use crate::store::health_sample::{Health, OpenCircuit};
use crate::store::queue_depth::{Depth, OldestAge};

/// The last sample of the elected sampler; empty (and not elected) otherwise.
#[derive(Debug, Default)]
pub struct Sample {
    pub elected: bool,
    pub depth: Vec<Depth>,
    pub oldest: Vec<OldestAge>,
    pub health: Option<Health>,
    pub circuits: Vec<OpenCircuit>,
    /// Seconds the oldest holder of the vacuum horizon has held it (`horizon`).
    pub oldest_snapshot: Option<f64>,
}

pub type Shared = Arc<Mutex<Sample>>;

/// Keeps the gauges registered for as long as it lives.
pub struct Gauges {
    _u64: Vec<ObservableGauge<u64>>,
    _f64: Vec<ObservableGauge<f64>>,
}

fn read(sample: &Shared) -> std::sync::MutexGuard<'_, Sample> {
    sample.lock().expect("queue sample lock")
}

/// Registers every sampled gauge on `meter`, reading `sample`.
pub fn register(meter: &Meter, sample: &Shared) -> Gauges {
    let s = sample.clone();
    let depth = meter
        .u64_observable_gauge("tasklane.queue.depth")
        .with_description(
            "Non-terminal tasks by task type and state, 0 for a registered type with none \
             (reported by one replica of the cluster)",
        )
        .with_callback(move |observer| {
            for depth in &read(&s).depth {
                observer.observe(
                    depth.count.max(0) as u64,
                    &[
                        KeyValue::new("task_type", depth.task_type.clone()),
                        KeyValue::new("state", depth.state.clone()),
                    ],
                );
            }
        })
        .build();
    let s = sample.clone();
    let oldest = meter
        .f64_observable_gauge("tasklane.queue.oldest_age")
        .with_unit("s")
        .with_description(
            "Seconds the oldest claimable task of a type has waited, 0 when none waits \
             (reported by one replica of the cluster)",
        )
        .with_callback(move |observer| {
            for oldest in &read(&s).oldest {
                observer.observe(
                    oldest.seconds.max(0.0),
                    &[KeyValue::new("task_type", oldest.task_type.clone())],
                );
            }
        })
        .build();
    let s = sample.clone();
    let sampler = meter
        .u64_observable_gauge("tasklane.queue.sampler")
        .with_description("1 on the replica sampling the cluster's queue, 0 on the others")
        .with_callback(move |observer| observer.observe(u64::from(read(&s).elected), &[]))
        .build();
    let s = sample.clone();
    let replicas = meter
        .u64_observable_gauge("tasklane.replicas")
        .with_description("Live replicas in the registry (reported by one replica of the cluster)")
        .with_callback(move |observer| {
            if let Some(health) = read(&s).health {
                observer.observe(health.replicas.max(0) as u64, &[]);
            }
        })
        .build();
    let s = sample.clone();
    let stops = meter
        .u64_observable_gauge("tasklane.emergency_stops")
        .with_description(
            "Emergency stops in force: scope global (0 or 1) and app (apps stopped) \
             (reported by one replica of the cluster)",
        )
        .with_callback(move |observer| {
            if let Some(health) = read(&s).health {
                observer.observe(
                    health.global_stops.max(0) as u64,
                    &[KeyValue::new("scope", "global")],
                );
                observer.observe(
                    health.app_stops.max(0) as u64,
                    &[KeyValue::new("scope", "app")],
                );
            }
        })
        .build();
    let s = sample.clone();
    let circuits = meter
        .f64_observable_gauge("tasklane.circuit.open_for")
        .with_unit("s")
        .with_description(
            "Seconds since a circuit that is not closed opened, by route (reported by one \
             replica of the cluster)",
        )
        .with_callback(move |observer| {
            for circuit in &read(&s).circuits {
                observer.observe(
                    circuit.seconds.max(0.0),
                    &[KeyValue::new("route_name", circuit.route_name.clone())],
                );
            }
        })
        .build();
    let s = sample.clone();
    let snapshot = meter
        .f64_observable_gauge("tasklane.oldest_snapshot_age")
        .with_unit("s")
        .with_description(
            "Seconds the oldest snapshot, transaction or replication slot holding back \
             vacuum in tasklane's database has held it, 0 when none (reported by one \
             replica of the cluster)",
        )
        .with_callback(move |observer| {
            if let Some(seconds) = read(&s).oldest_snapshot {
                observer.observe(seconds.max(0.0), &[]);
            }
        })
        .build();
    Gauges {
        _u64: vec![depth, sampler, replicas, stops],
        _f64: vec![oldest, circuits, snapshot],
    }
}
