//! Unreleased sources: distinct (scope, source) pairs with unreleased tasks, keyset
//! paged, at most 100 a page, one app only.

use tasklane::store::lifecycle;

use tasklane::task::record::SourceRef;

use super::support::*;
use crate::common::fixtures::APP;

fn pair(scope: &str, source: Option<&str>) -> SourceRef {
    SourceRef {
        scope_id: scope.into(),
        source_id: source.map(Into::into),
    }
}

#[tokio::test]
async fn pages_through_distinct_unreleased_pairs_in_byte_order() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    let layout: &[(&str, Option<&str>, &str)] = &[
        ("b", Some("x"), "1"),
        ("b", Some("x"), "2"), // same pair twice: listed once
        ("b", None, "3"),
        ("B", Some("y"), "4"),
        ("a", Some("%"), "5"),
        ("a", Some("z"), "6"),
        ("c", Some("released"), "7"),
    ];
    for (scope, source, key) in layout {
        submit_at(
            &c,
            At {
                app: APP,
                scope,
                source: *source,
            },
            key,
        )
        .await;
    }
    lifecycle::release(&c, APP, "c", "7", None).await.unwrap();
    submit_at(
        &c,
        At {
            app: "other",
            scope: "a",
            source: Some("hidden"),
        },
        "8",
    )
    .await;
    let expected = vec![
        pair("B", Some("y")),
        pair("a", Some("%")),
        pair("a", Some("z")),
        pair("b", None),
        pair("b", Some("x")),
    ];
    let mut listed = Vec::new();
    let mut after: Option<SourceRef> = None;
    loop {
        let page = lifecycle::unreleased_sources(&c, APP, after.as_ref(), 2)
            .await
            .unwrap();
        assert!(page.len() <= 2);
        let full = page.len() == 2;
        after = page.last().cloned();
        listed.extend(page);
        if !full {
            break;
        }
    }
    assert_eq!(listed, expected);
    // A fully released pair drops out.
    lifecycle::release(&c, APP, "b", "3", None).await.unwrap();
    let all = lifecycle::unreleased_sources(&c, APP, None, 100)
        .await
        .unwrap();
    assert!(!all.contains(&pair("b", None)));
}

#[tokio::test]
async fn the_limit_is_bounded_to_one_through_a_hundred() {
    let db = crate::common::test_db().await;
    let c = db.client().await;
    c.execute(
        "INSERT INTO tasklane.tasks (id, app, scope_id, source_id, effect_key, task_type, request_digest,
            input, max_attempts, on_restart, privacy, lease_seconds, attempt_timeout_seconds)
         SELECT gen_random_uuid(), 'mail', 's', 'src-' || lpad(g::text, 3, '0'), 'k' || g, 'summarize',
            '\\x00'::bytea, '{}'::jsonb, 1, 'retry', 'local_only', 30, 60
         FROM generate_series(1, 150) g",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        lifecycle::unreleased_sources(&c, APP, None, 1000)
            .await
            .unwrap()
            .len(),
        100
    );
    assert_eq!(
        lifecycle::unreleased_sources(&c, APP, None, 0)
            .await
            .unwrap()
            .len(),
        1
    );
    let row = c
        .query_one(
            "SELECT count(*) FROM tasklane.list_unreleased_sources('mail', NULL, NULL, 500)",
            &[],
        )
        .await;
    assert_eq!(row.unwrap().get::<_, i64>(0), 100);
    let first = lifecycle::unreleased_sources(&c, APP, None, 100)
        .await
        .unwrap();
    let rest = lifecycle::unreleased_sources(&c, APP, first.last(), 100)
        .await
        .unwrap();
    assert_eq!(rest.len(), 50);
    assert_eq!(rest[0], pair("s", Some("src-101")));
}
