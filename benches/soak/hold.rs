//! A held vacuum horizon for the soak (`BENCH_HOLD_SNAPSHOT=START:MINUTES`, minutes from
//! the start of the run): a REPEATABLE READ transaction in the bench's database that
//! reads the queue once, so it has its snapshot, and then stays open for `MINUTES`, as
//! `pg_dump` or a forgotten `BEGIN` would. While it is open no dead row younger than it
//! can be removed from any table.

use std::time::Duration;

/// When the hold starts and how long it lasts, from `BENCH_HOLD_SNAPSHOT`.
pub fn plan() -> Option<(Duration, Duration)> {
    let value = std::env::var("BENCH_HOLD_SNAPSHOT").ok()?;
    let (start, length) = value.split_once(':')?;
    let minutes = |text: &str| {
        text.trim()
            .parse::<f64>()
            .ok()
            .map(|m| Duration::from_secs_f64(m * 60.0))
    };
    Some((minutes(start)?, minutes(length)?))
}

/// The stretches of the run a planned hold divides it into, as (label, from, to) in
/// minutes from the start: as long before the hold as half of it, its two halves, and
/// as long after it. None without a hold.
pub fn phases() -> Vec<(&'static str, f64, f64)> {
    let Some((start, length)) = plan() else {
        return Vec::new();
    };
    let (s, l) = (start.as_secs_f64() / 60.0, length.as_secs_f64() / 60.0);
    vec![
        ("before the hold", s - l / 2.0, s),
        ("first half of the hold", s, s + l / 2.0),
        ("second half of the hold", s + l / 2.0, s + l),
        ("after the hold", s + l, s + l + l / 2.0),
    ]
}

/// Holds the snapshot as planned, in the background; prints when it starts and ends.
pub fn spawn(url: &str) -> Option<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let (start, length) = plan()?;
    let url = url.to_owned();
    Some(tokio::spawn(async move {
        tokio::time::sleep(start).await;
        let client = super::common::connect(&url).await?;
        client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .await?;
        client
            .query_one("SELECT count(*) FROM tasklane.task_queue", &[])
            .await?;
        println!(
            "hold: a REPEATABLE READ snapshot is open for {:.1} min",
            length.as_secs_f64() / 60.0
        );
        tokio::time::sleep(length).await;
        client.batch_execute("COMMIT").await?;
        println!("hold: the snapshot is released");
        Ok(())
    }))
}
