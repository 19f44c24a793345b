//! No just-in-time compilation on tasklane's paths. Compiling a plan costs the server
//! 15-90 ms at every run, where tasklane's statements take well under a millisecond, and
//! a function that turns a plan type off (`enable_seqscan`, `enable_bitmapscan`) makes
//! any plan that still needs such a path look costly enough to compile. Each such
//! function turns JIT off for itself, which also holds behind a pooler (whose sessions
//! set nothing); a direct connection's pooled sessions turn it off for every statement.

use super::claim_functions::{claim_and_beat, claim_plain, hearing_notices};
use super::common;
use common::fixtures::submit;

/// Every function of the schema that sets a planner switch sets `jit = off` too.
#[tokio::test]
async fn every_function_that_turns_a_plan_type_off_turns_jit_off() {
    let db = common::test_db().await;
    let c = db.client().await;
    let switched = switched_functions(&c).await;
    for (function, config) in &switched {
        assert!(
            config.iter().any(|s| s == "jit=off"),
            "{function} turns a plan type off but not JIT: {config:?}"
        );
    }
    // The claim's six, the group commit's two, the webhook claim, the turns' two and
    // the mirror's update trigger.
    assert!(
        switched.len() >= 12,
        "only {} functions set a planner switch",
        switched.len()
    );
}

/// The schema's functions that turn a plan type off (`enable_...=off`), each with its
/// settings.
pub(super) async fn switched_functions(c: &tokio_postgres::Client) -> Vec<(String, Vec<String>)> {
    c.query(
        "SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p \
         WHERE p.pronamespace = 'tasklane'::regnamespace AND p.proconfig IS NOT NULL",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|row| (row.get(0), row.get(1)))
    .filter(|(_, config): &(String, Vec<String>)| {
        config
            .iter()
            .any(|s| s.starts_with("enable_") && s.ends_with("=off"))
    })
    .collect()
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

    assert!(claim_plain(&c).await.is_empty());
    for n in 0..3 {
        submit(&c, &format!("jit-{n}"), serde_json::json!({})).await;
    }
    claim_and_beat(&c, 3).await;

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
