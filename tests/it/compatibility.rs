//! A rolling upgrade runs replicas of the previous release beside this one on the schema
//! this release migrates to, so that schema must still run every statement the previous
//! release's binary sends; and SQL kept only for binaries older than that (compatibility
//! shims) is dropped, by a migration of its own, once the previous release no longer
//! calls it.
//!
//! The previous release's statements are a snapshot, `tests/fixtures/previous_release/sql/`
//! (its README says how it is refreshed at each release): every file the binary reads from
//! `sql/` (the SQL API's and the functions' definitions are DDL the migrations install,
//! not statements it sends) and the claim variants its `build.rs` rendered from
//! `sql/claim.sql`, as they were. A snapshot, not `git show` at test time: it needs no
//! history in the checkout and states in the diff what a release promises to keep.
//!
//! Here, against a freshly migrated database: every snapshot statement prepares (the
//! server resolves each table, column, function and overload it names); the submit,
//! batch submit, claim and group commit statements run with representative arguments
//! and answer as they did, in a transaction rolled back; and the shims this release
//! dropped are gone, a call of each failing as undefined.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio_postgres::error::SqlState;
use uuid::Uuid;

use crate::common;
use crate::sql_statements::files;

/// The snapshot directory, relative to the crate root.
const SNAPSHOT: &str = "tests/fixtures/previous_release/sql";
/// Set to `1` to write the snapshot from this tree (at a release; see the README).
const REFRESH: &str = "TASKLANE_SNAPSHOT_PREVIOUS_RELEASE";

/// Statements sent as a simple-query batch rather than prepared: run them as the binary
/// does.
const BATCHES: &[(&str, &str)] = &[(
    "load_vacuum.sql",
    "two VACUUM ANALYZE statements, outside a transaction",
)];

/// The compatibility shims this release dropped: the signature, and a call as the
/// binaries that needed it sent it.
const DROPPED: &[(&str, &str)] = &[
    (
        "tasklane.complete_tasks(uuid[], uuid[], jsonb[], bigint[], text[], text[], text[], \
         text[], bigint[], bigint[], bigint[])",
        "SELECT * FROM tasklane.complete_tasks('{}'::uuid[], '{}'::uuid[], '{}'::jsonb[], \
         '{}'::int8[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::int8[], \
         '{}'::int8[], '{}'::int8[])",
    ),
    (
        "tasklane.submit_tasks(uuid[], text[], text[], text[], text[], text[], text[], \
         bytea[], jsonb[], smallint[], integer[], text[], text[], integer[], integer[], \
         bigint[], text[], text[])",
        "SELECT * FROM tasklane.submit_tasks('{}'::uuid[], '{}'::text[], '{}'::text[], \
         '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::bytea[], \
         '{}'::jsonb[], '{}'::int2[], '{}'::int4[], '{}'::text[], '{}'::text[], \
         '{}'::int4[], '{}'::int4[], '{}'::int8[], '{}'::text[], '{}'::text[])",
    ),
    (
        "tasklane.submit_task(uuid, text, text, text, text, text, text, bytea, jsonb, \
         smallint, integer, text, text, integer, integer, bigint, text)",
        "SELECT * FROM tasklane.submit_task(gen_random_uuid(), 'a', 's', 'k', NULL, NULL, \
         'compat', '\\x00', '{}', 0::int2, 1, 'fail', 'local_only', 60, 60, NULL, NULL)",
    ),
];

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT)
}

/// The snapshot: file name to statement.
fn previous_release() -> BTreeMap<String, String> {
    let dir = snapshot_dir();
    let statements: BTreeMap<String, String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect();
    // A snapshot that lost its hot path or its claim variants checks too little.
    for name in [
        "submit.sql",
        "submit_batch.sql",
        "complete_many.sql",
        "claim_local.sql",
    ] {
        assert!(statements.contains_key(name), "{SNAPSHOT} lacks {name}");
    }
    assert!(
        statements.len() > 50,
        "{SNAPSHOT} holds only {}",
        statements.len()
    );
    statements
}

/// Writes the snapshot from this tree: the statements `sql_statements` checks, less the
/// definitions (`api/`, `functions/`), flat (`load/x.sql` as `load_x.sql`), the claim
/// variants as rendered.
fn refresh() {
    let dir = snapshot_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sql") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    for file in files::all() {
        if file.name.starts_with("api/") || file.name.starts_with("functions/") {
            continue; // DDL the migrations install
        }
        // Flat: `load/vacuum.sql` is written as `load_vacuum.sql`.
        std::fs::write(dir.join(file.name.replace('/', "_")), &file.text).unwrap();
    }
    eprintln!("wrote {SNAPSHOT}/ from this tree");
}

#[tokio::test]
async fn every_statement_of_the_previous_release_runs_on_this_schema() {
    if std::env::var_os(REFRESH).is_some_and(|v| v == "1") {
        refresh();
    }
    let db = common::test_db().await;
    let client = db.client().await;
    let mut failures = Vec::new();
    let mut prepared = 0;
    for (name, text) in previous_release() {
        let outcome = if BATCHES.iter().any(|(batch, _)| *batch == name) {
            client.batch_execute(&text).await.map(drop)
        } else {
            client.prepare(&text).await.map(|_| prepared += 1)
        };
        if let Err(error) = outcome {
            failures.push(format!("{name}: {}", describe(&error)));
        }
    }
    assert!(
        failures.is_empty(),
        "statements of the previous release that this schema refuses (a rolling upgrade \
         would break them; keep what they call until the next release):\n{}",
        failures.join("\n")
    );
    assert!(prepared > 50, "prepared only {prepared}");
}

/// The submit, batch submit, claim and group commit of the previous release, run in one
/// transaction (rolled back) with the arguments its binary sends: each answers as it did.
#[tokio::test]
async fn the_previous_releases_hot_path_answers_as_it_did() {
    let statements = previous_release();
    let db = common::test_db().await;
    let mut client = db.client().await;
    let tx = client.transaction().await.unwrap();
    let app = "compat".to_owned();
    let scope = "s".to_owned();
    let task_type = "compat".to_owned();
    let legacy_digest = vec![7u8; 32];
    let input = serde_json::json!({"n": 1});
    let none_text: Option<String> = None;
    let none_i64: Option<i64> = None;

    let submit = tx.prepare(&statements["submit.sql"]).await.unwrap();
    let single = Uuid::now_v7();
    let row = tx
        .query_one(
            &submit,
            &[
                &single,
                &app,
                &scope,
                &"single",
                &none_text,
                &none_text,
                &task_type,
                &legacy_digest,
                &input,
                &0i16,
                &3i32,
                &"fail",
                &"local_only",
                &60i32,
                &60i32,
                &none_i64,
                &none_text,
                &none_text,
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, Option<String>>("outcome").as_deref(),
        Some("created")
    );
    assert_eq!(row.get::<_, Uuid>("id"), single);

    let batch = tx.prepare(&statements["submit_batch.sql"]).await.unwrap();
    let items = [Uuid::now_v7(), Uuid::now_v7()];
    let n: Vec<i64> = vec![1, 2];
    let texts = |v: &str| vec![v.to_owned(); 2];
    let nulls: Vec<Option<String>> = vec![None, None];
    let rows = tx
        .query(
            &batch,
            &[
                &n,
                &items.to_vec(),
                &texts(&app),
                &texts(&scope),
                &vec!["batch-1".to_owned(), "batch-2".to_owned()],
                &nulls,
                &nulls,
                &texts(&task_type),
                &vec![legacy_digest.clone(); 2],
                &vec![input.clone(); 2],
                &vec![0i16; 2],
                &vec![3i32; 2],
                &texts("fail"),
                &texts("local_only"),
                &vec![60i32; 2],
                &vec![60i32; 2],
                &vec![None::<i64>; 2],
                &nulls,
                &nulls,
            ],
        )
        .await
        .unwrap();
    let mut answered: Vec<(i64, Option<String>, Uuid)> = rows
        .iter()
        .map(|r| (r.get("n"), r.get("outcome"), r.get("id")))
        .collect();
    answered.sort();
    let created = Some("created".to_owned());
    assert_eq!(
        answered,
        vec![(1, created.clone(), items[0]), (2, created, items[1])]
    );

    let claim = tx.prepare(&statements["claim_local.sql"]).await.unwrap();
    let rows = tx
        .query(
            &claim,
            &[
                &vec![task_type.clone()],
                &"compat-worker",
                &10i64,
                &None::<Uuid>,
                &Some(app.clone()),
                &none_text,
            ],
        )
        .await
        .unwrap();
    let mut leased: Vec<(Uuid, Uuid)> = rows
        .iter()
        .map(|r| (r.get("id"), r.get("lease_token")))
        .collect();
    leased.sort();
    let mut submitted = vec![single, items[0], items[1]];
    submitted.sort();
    assert_eq!(
        leased.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        submitted
    );

    let complete = tx.prepare(&statements["complete_many.sql"]).await.unwrap();
    let ids: Vec<Uuid> = leased.iter().map(|(id, _)| *id).collect();
    let tokens: Vec<Uuid> = leased.iter().map(|(_, token)| *token).collect();
    let three_text: Vec<Option<String>> = vec![None; 3];
    let three_i64: Vec<Option<i64>> = vec![None; 3];
    let rows = tx
        .query(
            &complete,
            &[
                &ids,
                &tokens,
                &vec![serde_json::json!({"ok": true}); 3],
                &three_i64,
                &three_text,
                &three_text,
                &three_text,
                &three_text,
                &three_i64,
                &three_i64,
                &three_i64,
                &None::<Uuid>,
                &0f64,
                &Vec::<Uuid>::new(),
            ],
        )
        .await
        .unwrap();
    let mut settled: Vec<(Uuid, Uuid)> = rows
        .iter()
        .map(|r| {
            (
                r.get("id"),
                r.get::<_, Option<Uuid>>("lease_token").unwrap(),
            )
        })
        .collect();
    settled.sort();
    assert_eq!(settled, leased, "every claimed task settles on its lease");
    let states: Vec<String> = tx
        .query(
            "SELECT state FROM tasklane.tasks WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(states, vec!["succeeded"; 3]);
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn the_dropped_shims_are_gone() {
    let db = common::test_db().await;
    let client = db.client().await;
    for (signature, call) in DROPPED {
        let exists: bool = client
            .query_one("SELECT to_regprocedure($1) IS NOT NULL", &[signature])
            .await
            .unwrap()
            .get(0);
        assert!(!exists, "{signature} is still installed");
        let error = client
            .simple_query(call)
            .await
            .expect_err("a call of a dropped shim fails");
        assert_eq!(
            error.code(),
            Some(&SqlState::UNDEFINED_FUNCTION),
            "{signature}: {}",
            describe(&error)
        );
    }
}

/// The server's message with its position, which the driver's Display leaves out.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} (at {:?})", db.message(), db.position()),
        None => error.to_string(),
    }
}
