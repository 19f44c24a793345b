//! Statements planned once a session. PostgreSQL plans a statement of a function again
//! at every call while it keeps preferring a plan made for the call's values to the
//! generic one, and a function that turns a plan type off makes that likely (the
//! generic plan's estimate can carry the cost of the disabled path), at every submit,
//! claim and heartbeat. So each such function plans generically. The planner's own log
//! (`debug_print_plan`: one message a plan made) tells whether a call planned.

use super::claim_functions::{claim_and_beat, hearing_notices};
use super::common;
use super::jit::switched_functions;
use common::fixtures::submit;

/// Every function of the schema that sets a planner switch plans generically too.
#[tokio::test]
async fn every_function_that_turns_a_plan_type_off_plans_generically() {
    let db = common::test_db().await;
    let c = db.client().await;
    let switched = switched_functions(&c).await;
    let replanning: Vec<&(String, Vec<String>)> = switched
        .iter()
        .filter(|(_, config)| {
            !config
                .iter()
                .any(|s| s == "plan_cache_mode=force_generic_plan")
        })
        .collect();
    assert!(
        replanning.is_empty(),
        "turn a plan type off without planning generically: {replanning:?}"
    );
    // The claim's six, the group commit's, the webhook claim, the turns', the floors'
    // and the points', the mirror's triggers.
    assert!(
        switched.len() >= 20,
        "only {} functions set a planner switch",
        switched.len()
    );
}

/// On a session that sets nothing (as behind a pooler), once it has run them a few
/// times, two submits of one subject (the second takes its turn after the first's), a
/// claim through its function and a heartbeat through the mirror's update trigger make
/// no plan of a statement that reads the mirror, the floors or the claims' point: their
/// statements all run in functions and triggers, so a plan there is a plan made again.
/// The session's first round shows that such plans are heard.
#[tokio::test]
async fn a_warm_session_plans_nothing_again_to_submit_claim_and_heartbeat() {
    let db = common::test_db().await;
    let (c, mut notices) = hearing_notices(&db.url).await;
    let relids: Vec<String> = c
        .query(
            "SELECT format(':relid %s ', oid) FROM pg_class \
             WHERE oid IN ('tasklane.task_queue'::regclass, 'tasklane.turn_floors'::regclass, \
                           'tasklane.turn_points'::regclass)",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(relids.len(), 3);
    c.batch_execute("SET debug_print_plan = on; SET debug_pretty_print = off")
        .await
        .unwrap();

    let mut nested_plans = Vec::new();
    for round in 0..8 {
        // Only the first round and the last are heard.
        let heard = round == 0 || round == 7;
        let level = if heard { "log" } else { "warning" };
        c.batch_execute(&format!("SET client_min_messages = {level}"))
            .await
            .unwrap();
        for n in 0..2 {
            submit(&c, &format!("planned-{round}-{n}"), serde_json::json!({})).await;
        }
        claim_and_beat(&c, 2).await;
        // A round trip after the round, so every notice of it has been received.
        c.batch_execute("SET client_min_messages = warning")
            .await
            .unwrap();
        let mut plans = 0;
        while let Ok(notice) = notices.try_recv() {
            if relids.iter().any(|relid| notice.contains(relid.as_str())) {
                plans += 1;
            }
        }
        nested_plans.push(plans);
    }
    assert!(
        nested_plans[0] > 0,
        "the first round plans the functions' statements: {nested_plans:?}"
    );
    assert_eq!(
        nested_plans[7], 0,
        "plans made again in the last round (per round: {nested_plans:?})"
    );
}
