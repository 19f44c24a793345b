//! Every statement prepares against a freshly migrated database: the server parses and
//! plans it against the real schema (tables, columns, types, functions), so a typo or a
//! statement left behind by a schema change fails here, not in the one code path that runs
//! it. Preparing executes nothing.

use super::common;
use super::files::{self, SqlFile};

/// Files under `sql/` that are not single preparable statements, with the reason; the
/// prefix matches a directory. They are checked otherwise, as the reason says.
const NOT_PREPARED: &[(&str, &str)] = &[
    (
        "api/",
        "CREATE FUNCTION definitions installed by migration V4 (release_task.sql holds two); \
         the functions they define must exist in the migrated schema, and the \
         lifecycle_*.sql statements that call them are prepared",
    ),
    (
        "load/vacuum.sql",
        "two VACUUM ANALYZE statements sent as one simple-query batch (VACUUM refuses a \
         transaction); a utility statement is not planned, so preparing it would check nothing",
    ),
    (
        "functions/",
        "function definitions (DDL) that the migrations install, as sql/schema.sql records",
    ),
];

/// The directories of function definitions among [`NOT_PREPARED`].
const DEFINITIONS: [&str; 2] = ["api/", "functions/"];

fn not_prepared(file: &SqlFile) -> bool {
    NOT_PREPARED
        .iter()
        .any(|(prefix, _)| file.name.starts_with(prefix))
}

#[tokio::test]
async fn every_statement_prepares_against_the_migrated_schema() {
    let db = common::test_db().await;
    let client = db.client().await;
    let mut prepared = 0;
    let mut failures = Vec::new();
    for file in files::all().iter().filter(|f| !not_prepared(f)) {
        match client.prepare(&file.text).await {
            Ok(_) => prepared += 1,
            Err(error) => failures.push(format!("{}: {}", file.name, describe(&error))),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The four claim variants and the plain files of sql/ (57 when this was written).
    assert!(prepared > 50, "prepared only {prepared}");
}

/// Every statement is described by the unnamed-statement door (a `PREPARE` under a
/// fresh name in one simple query) with the parameter types a prepared statement gets,
/// and leaves no prepared statement behind on the session.
#[tokio::test]
async fn every_statement_is_described_for_unnamed_runs_as_prepare_describes_it() {
    let db = common::test_db().await;
    let client = db.client().await;
    let mut failures = Vec::new();
    for file in files::all().iter().filter(|f| !not_prepared(f)) {
        let prepared = client.prepare(&file.text).await.unwrap();
        let count = prepared.params().len();
        match tasklane::store::statement::parameter_types(&client, &file.text, count).await {
            Ok(types) if *types == *prepared.params() => {}
            Ok(types) => failures.push(format!(
                "{}: described {types:?}, prepared {:?}",
                file.name,
                prepared.params()
            )),
            Err(error) => failures.push(format!("{}: {}", file.name, describe(&error))),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let left = client
        .query_one(
            "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'tasklane_describe%'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(left.get::<_, i64>(0), 0);
}

/// The functions that the definition files name exist once migrated: a definition file
/// that no migration installs (or one whose function was renamed) fails here.
#[tokio::test]
async fn every_function_definition_is_installed_by_the_migrations() {
    let db = common::test_db().await;
    let client = db.client().await;
    let mut missing = Vec::new();
    let definitions: Vec<_> = files::all()
        .into_iter()
        .filter(|f| DEFINITIONS.iter().any(|dir| f.name.starts_with(dir)))
        .collect();
    assert!(!definitions.is_empty(), "sql/api/ holds the SQL API");
    for file in definitions {
        let names = created_functions(&file.text);
        assert!(!names.is_empty(), "{} defines no function", file.name);
        for name in names {
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_proc p \
                     JOIN pg_namespace n ON n.oid = p.pronamespace \
                     WHERE n.nspname || '.' || p.proname = $1)",
                    &[&name],
                )
                .await
                .unwrap();
            if !row.get::<_, bool>(0) {
                missing.push(format!("{}: {name}", file.name));
            }
        }
    }
    assert!(missing.is_empty(), "not installed: {missing:?}");
}

/// `schema.name` of every `CREATE [OR REPLACE] FUNCTION schema.name(` in `sql`.
fn created_functions(sql: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = sql;
    while let Some(at) = rest.find("FUNCTION ") {
        let before = rest[..at].trim_end();
        rest = &rest[at + "FUNCTION ".len()..];
        if before.ends_with("CREATE") || before.ends_with("OR REPLACE") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            names.push(name);
        }
    }
    names
}

/// The server's message with its position, which the driver's Display leaves out.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} (at {:?})", db.message(), db.position()),
        None => error.to_string(),
    }
}
