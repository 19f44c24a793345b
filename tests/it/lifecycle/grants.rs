//! The grants of docs/lifecycle.md: a role with USAGE on the schema and EXECUTE on the
//! lifecycle functions can call them (SECURITY DEFINER) and cannot read or write the
//! tables; a role without EXECUTE cannot call them (EXECUTE is revoked from PUBLIC).

use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use super::support::*;
use crate::common::fixtures::SCOPE;

/// The statements of docs/lifecycle.md, for role `{role}`.
fn grants(role: &str) -> String {
    format!(
        "GRANT USAGE ON SCHEMA tasklane TO {role};
         GRANT EXECUTE ON FUNCTION
             tasklane.release_task(text, text, text, text),
             tasklane.release_task_at(text, text, text, text),
             tasklane.delete_tasks(text, text, text, boolean),
             tasklane.lift_fence(text, text),
             tasklane.list_unreleased_sources(text, text, text, integer)
         TO {role};"
    )
}

async fn denied(c: &Client, sql: &str) {
    let error = c.batch_execute(sql).await.expect_err(sql);
    assert_eq!(
        error.code(),
        Some(&SqlState::INSUFFICIENT_PRIVILEGE),
        "{sql}: {error}"
    );
}

#[tokio::test]
async fn an_application_role_may_call_the_functions_and_nothing_else() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let task = submit_at(&c, At::source(SCOPE, "conv-1"), "k").await;
    // Roles are cluster-wide: name them after this test's database.
    let (app_role, stranger) = (
        format!("{}_app", db.name()),
        format!("{}_stranger", db.name()),
    );
    c.batch_execute(&format!(
        "CREATE ROLE {app_role} NOLOGIN; CREATE ROLE {stranger} NOLOGIN;
         GRANT USAGE ON SCHEMA tasklane TO {stranger};
         {}",
        grants(&app_role)
    ))
    .await
    .unwrap();
    c.batch_execute(&format!("SET ROLE {app_role}"))
        .await
        .unwrap();
    let released: bool = c
        .query_one(
            "SELECT tasklane.release_task('mail', 'mailbox-7', 'k', NULL)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(released);
    let pairs = c
        .query(
            "SELECT * FROM tasklane.list_unreleased_sources('mail', NULL, NULL, 100)",
            &[],
        )
        .await
        .unwrap();
    assert!(pairs.is_empty());
    let deleted: i64 = c
        .query_one(
            "SELECT tasklane.delete_tasks('mail', 'mailbox-7', 'conv-1', true)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(deleted, 1);
    let lifted: bool = c
        .query_one("SELECT tasklane.lift_fence('mail', 'mailbox-7')", &[])
        .await
        .unwrap()
        .get(0);
    assert!(lifted);
    for sql in [
        "SELECT count(*) FROM tasklane.tasks",
        "SELECT count(*) FROM tasklane.task_events",
        "SELECT count(*) FROM tasklane.scope_fences",
        "SELECT count(*) FROM tasklane.task_views",
        "DELETE FROM tasklane.tasks",
        "INSERT INTO tasklane.scope_fences (app, scope_id) VALUES ('mail', 'x')",
    ] {
        denied(&c, sql).await;
    }
    c.batch_execute(&format!("RESET ROLE; SET ROLE {stranger}"))
        .await
        .unwrap();
    for sql in [
        "SELECT tasklane.release_task('mail', 'mailbox-7', 'k', NULL)",
        "SELECT tasklane.delete_tasks('mail', 'mailbox-7', NULL, false)",
        "SELECT tasklane.lift_fence('mail', 'mailbox-7')",
        "SELECT * FROM tasklane.list_unreleased_sources('mail')",
    ] {
        denied(&c, sql).await;
    }
    c.batch_execute(&format!(
        "RESET ROLE; DROP OWNED BY {app_role}, {stranger}; DROP ROLE {app_role}; DROP ROLE {stranger};"
    ))
    .await
    .unwrap();
    assert!(!exists(&c, task.id).await);
    assert_no_advisory_locks(&db).await;
}
