//! The connection pools' gauges, observed at each metrics export.

/// The database pool's gauges: connections in use and idle, and callers waiting.
pub(super) struct PoolGauges {
    _connections: opentelemetry::metrics::ObservableGauge<u64>,
    _waiting: opentelemetry::metrics::ObservableGauge<u64>,
}

pub(super) fn pool_gauges(
    meter: &opentelemetry::metrics::Meter,
    main: &crate::store::Pool,
    claims: &crate::store::Pool,
) -> PoolGauges {
    use opentelemetry::KeyValue;
    let pools = [("main", main.clone()), ("claims", claims.clone())];
    let observed = pools.clone();
    let connections = meter
        .u64_observable_gauge("tasklane.db.pool.connections")
        .with_description(
            "Database pool connections, by pool (main, claims) and state (in_use, idle)",
        )
        .with_callback(move |observer| {
            for (name, pool) in &observed {
                let status = pool.status();
                let in_use = status.size.saturating_sub(status.available);
                let pool = KeyValue::new("pool", *name);
                observer.observe(
                    in_use as u64,
                    &[pool.clone(), KeyValue::new("state", "in_use")],
                );
                observer.observe(
                    status.available as u64,
                    &[pool, KeyValue::new("state", "idle")],
                );
            }
        })
        .build();
    let waiting = meter
        .u64_observable_gauge("tasklane.db.pool.waiting")
        .with_description("Callers waiting for a database pool connection, by pool")
        .with_callback(move |observer| {
            for (name, pool) in &pools {
                observer.observe(
                    pool.status().waiting as u64,
                    &[KeyValue::new("pool", *name)],
                );
            }
        })
        .build();
    PoolGauges {
        _connections: connections,
        _waiting: waiting,
    }
}
