//! No just-in-time compilation on tasklane's paths. Compiling a plan costs the server
//! 15-90 ms at every run, where tasklane's statements take well under a millisecond, and
//! a function that turns a plan type off (`enable_seqscan`, `enable_bitmapscan`) makes
//! any plan that still needs such a path look costly enough to compile. Each such
//! function turns JIT off for itself, which also holds behind a pooler (whose sessions
//! set nothing); a direct connection's pooled sessions turn it off for every statement.

use tasklane::store::lease;
use tasklane::task::lease::{Lease, LeaseStatus};

use super::claim_functions::hearing_notices;
use super::common;
use common::fixtures::{submit, TYPE};

/// Every function of the schema that sets a planner switch sets `jit = off` too.
#[tokio::test]
async fn every_function_that_turns_a_plan_type_off_turns_jit_off() {
    let db = common::test_db().await;
    let c = db.client().await;
    let rows = c
        .query(
            "SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p \
             WHERE p.pronamespace = 'tasklane'::regnamespace AND p.proconfig IS NOT NULL",
            &[],
        )
        .await
        .unwrap();
    let mut switched = 0;
    for row in rows {
        let (function, config): (String, Vec<String>) = (row.get(0), row.get(1));
        if config
            .iter()
            .any(|s| s.starts_with("enable_") && s.ends_with("=off"))
        {
            switched += 1;
            assert!(
                config.iter().any(|s| s == "jit=off"),
                "{function} turns a plan type off but not JIT: {config:?}"
            );
        }
    }
    // The claim's six, the group commit's two, the webhook claim, the turns' two and
    // the mirror's update trigger.
    assert!(
        switched >= 12,
        "only {switched} functions set a planner switch"
    );
}

/// On a session that sets nothing (as behind a pooler) with JIT at the server's
/// defaults, a submit, a claim through its function (with tasks and without), and a
/// heartbeat through the mirror's update trigger plan nothing that is compiled: the
/// plans of every statement they run, nested ones included, come from auto_explain as
/// notices, and none has a JIT section. The first statement shows that a compiled plan
/// would be seen.
#[tokio::test]
async fn a_session_that_sets_nothing_compiles_no_plan() {
    let db = common::test_db().await;
    let (c, mut notices) = hearing_notices(&db.url).await;
    c.batch_execute(
        "SET jit = on; LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
         SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice",
    )
    .await
    .unwrap();
    let mut heard = || {
        let mut plans = Vec::new();
        while let Ok(notice) = notices.try_recv() {
            plans.push(notice);
        }
        plans
    };

    c.batch_execute(
        "SET jit_above_cost = 0; SELECT count(*) FROM tasklane.tasks; RESET jit_above_cost",
    )
    .await
    .unwrap();
    let control = heard();
    assert!(
        control.iter().any(|plan| plan.contains("JIT:")),
        "a plan compiled on purpose shows its JIT section (is the server built with JIT?):\n{}",
        control.join("\n")
    );

    let claim = format!(
        "SELECT id, lease_token FROM tasklane.claim_local_plain('{{{TYPE}}}', 'w', 10, NULL, NULL, NULL)"
    );
    let empty = c.query(&claim, &[]).await.unwrap();
    assert!(empty.is_empty());
    for n in 0..3 {
        submit(&c, &format!("jit-{n}"), serde_json::json!({})).await;
    }
    let leases: Vec<Lease> = c
        .query(&claim, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| Lease {
            id: row.get(0),
            lease_token: row.get(1),
        })
        .collect();
    assert_eq!(leases.len(), 3);
    let beats = lease::extend_many(&c, &leases).await.unwrap();
    assert!(beats
        .iter()
        .all(|b| matches!(b, LeaseStatus::Extended { .. })));

    let plans = heard();
    assert!(
        plans
            .iter()
            .any(|plan| plan.contains("sync_task_queue") || plan.contains("tasklane.task_queue")),
        "the nested statements' plans are heard:\n{}",
        plans.join("\n")
    );
    let compiled: Vec<&String> = plans.iter().filter(|plan| plan.contains("JIT:")).collect();
    assert!(
        compiled.is_empty(),
        "{} of {} plans were compiled just in time:\n{}",
        compiled.len(),
        plans.len(),
        compiled
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
