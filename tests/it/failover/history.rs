//! What the new primary must hold for every acknowledged task once all have succeeded:
//! a history with no gap and no second ending. A commit the old primary acknowledged
//! but the standby lacked would show as a gap or a missing row; a task run to success
//! twice (an attempt settled on the old primary, then again after its lease was
//! recovered on the new one) as a second `task.succeeded` or a second succeeded attempt.

use tokio_postgres::Client;

/// Fails the test, naming a task and what is wrong with it, unless each task of `ids`:
/// has events numbered 1..n with no gap, whose one `task.succeeded` is the last; has
/// attempt rows numbered 1..k with no gap, whose one `succeeded` row is the last; and
/// started as many attempts (`task.running`) as it has attempt rows, k being the
/// attempts the task row counts.
pub async fn check(client: &Client, ids: &[String]) {
    let rows = client
        .query(
            "WITH t AS (
                 SELECT id, attempts_before + attempt AS attempts
                 FROM tasklane.tasks WHERE id = ANY($1::text[]::uuid[])
             ), e AS (
                 SELECT task_id, count(*) AS n, min(seq) AS first, max(seq) AS last,
                        count(*) FILTER (WHERE type = 'task.succeeded') AS succeeded,
                        max(seq) FILTER (WHERE type = 'task.succeeded') AS succeeded_at,
                        count(*) FILTER (WHERE type = 'task.running') AS started
                 FROM tasklane.task_events WHERE task_id IN (SELECT id FROM t)
                 GROUP BY task_id
             ), a AS (
                 SELECT task_id, count(*) AS n, min(attempt) AS first, max(attempt) AS last,
                        count(*) FILTER (WHERE outcome = 'succeeded') AS succeeded,
                        max(attempt) FILTER (WHERE outcome = 'succeeded') AS succeeded_at
                 FROM tasklane.task_attempts WHERE task_id IN (SELECT id FROM t)
                 GROUP BY task_id
             )
             SELECT t.id::text, t.attempts,
                    e.n, e.first, e.last, e.succeeded, e.succeeded_at, e.started,
                    a.n, a.first, a.last, a.succeeded, a.succeeded_at
             FROM t LEFT JOIN e ON e.task_id = t.id LEFT JOIN a ON a.task_id = t.id",
            &[&ids],
        )
        .await
        .expect("read the tasks' histories");
    assert_eq!(rows.len(), ids.len(), "every acknowledged task is there");
    let mut retried = 0;
    for row in &rows {
        let id: String = row.get(0);
        let attempts = i64::from(row.get::<_, i32>(1));
        let events = Counts::read(row, 2);
        let started: i64 = row.get::<_, Option<i64>>(7).unwrap_or(0);
        let tries = Counts::read(row, 8);
        assert!(
            events.contiguous(),
            "task {id}: event seqs are not 1..n: {events:?}"
        );
        assert!(
            events.one_success_last(),
            "task {id}: not one task.succeeded, last: {events:?}"
        );
        assert!(
            tries.contiguous() && tries.n == attempts,
            "task {id}: attempt rows are not 1..{attempts}: {tries:?}"
        );
        assert!(
            tries.one_success_last(),
            "task {id}: not one succeeded attempt, last: {tries:?}"
        );
        assert_eq!(started, attempts, "task {id}: task.running events");
        retried += usize::from(attempts > 1);
    }
    eprintln!(
        "failover: {} tasks, each with contiguous events and attempts and one success; \
         {retried} ran more than once (a lease lost with the old primary)",
        rows.len()
    );
}

/// Numbered rows of one task (events by seq, attempts by number) and its successes.
#[derive(Debug)]
struct Counts {
    n: i64,
    first: i64,
    last: i64,
    succeeded: i64,
    succeeded_at: Option<i64>,
}

impl Counts {
    /// Five columns from `at`: count, min, max, successes, the last success's number.
    fn read(row: &tokio_postgres::Row, at: usize) -> Counts {
        let number = |i: usize| row.get::<_, Option<i32>>(at + i).map(i64::from);
        Counts {
            n: row.get::<_, Option<i64>>(at).unwrap_or(0),
            first: number(1).unwrap_or(0),
            last: number(2).unwrap_or(0),
            succeeded: row.get::<_, Option<i64>>(at + 3).unwrap_or(0),
            succeeded_at: number(4),
        }
    }

    /// Numbered 1..n: the primary keys rule out repeats, so the ends and the count tell.
    fn contiguous(&self) -> bool {
        self.n > 0 && self.first == 1 && self.last == self.n
    }

    fn one_success_last(&self) -> bool {
        self.succeeded == 1 && self.succeeded_at == Some(self.last)
    }
}
