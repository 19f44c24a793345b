//! A pool keeps the connections its steady work uses and closes the rest once they
//! have gone unused (`store::connect::close_idle`): the connection returned last goes
//! out first, so a caller that takes one at a time keeps reusing the same one.

use crate::common;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_pool_closes_the_connections_a_burst_left_unused() {
    let db = common::test_db().await;
    let pool = common::pool(&db.url, 8);
    // A burst: eight callers at once open eight connections.
    let burst: Vec<_> = futures_util::future::join_all((0..8).map(|_| pool.get()))
        .await
        .into_iter()
        .map(|c| c.expect("a connection"))
        .collect();
    drop(burst);
    assert_eq!(pool.status().size, 8);

    let idle = Duration::from_millis(500);
    let shutdown = CancellationToken::new();
    let closing = tokio::spawn(tasklane::store::connect::close_idle(
        pool.clone(),
        idle,
        shutdown.clone(),
    ));
    // Steady work, one statement at a time, every 25 ms: taken in turn (first in,
    // first out) each of the eight would be used every 200 ms and none would close.
    let until = Instant::now() + idle * 4;
    while Instant::now() < until {
        let client = pool.get().await.expect("a connection");
        client.simple_query("SELECT 1").await.expect("a statement");
        drop(client);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(pool.status().size, 1, "{:?}", pool.status());
    shutdown.cancel();
    closing.await.expect("the closer stops at shutdown");
    drop(db);
}
