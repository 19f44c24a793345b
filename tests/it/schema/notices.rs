//! Migrating a database that is already current logs nothing. refinery creates its
//! history table with `CREATE TABLE IF NOT EXISTS`, whose NOTICE tokio-postgres logs
//! (through the `log` crate, at info) on every start unless the migration connection
//! asks for warnings only.

use std::sync::{Mutex, Once};

/// Every message logged through `log` at info or above in this test binary (the driver
/// traces each statement it runs at trace level; those are not wanted here).
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = format!("{}: {}", record.target(), record.args());
        LOGGED.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    fn flush(&self) {}
}

fn capture_log() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&Capture).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Info);
    });
}

fn logged_containing(text: &str) -> Vec<String> {
    let logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    logged
        .iter()
        .filter(|l| l.contains(text))
        .cloned()
        .collect()
}

#[tokio::test]
async fn migrating_a_current_database_logs_no_notice() {
    capture_log();
    let db = super::common::test_db().await;

    // The capture sees notices: the same statement shape on an ordinary connection.
    let client = db.client().await;
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS tasklane.replicas ()")
        .await
        .expect("create if not exists");
    assert!(
        !logged_containing("\"replicas\" already exists").is_empty(),
        "an ordinary connection's NOTICE is logged"
    );

    // The test database is a copy of the migrated template: nothing to apply, and
    // refinery's history table already exists.
    tasklane::store::migrate::run(&db.url)
        .await
        .expect("migrate a current database");
    assert_eq!(
        logged_containing("\"tasklane_schema_history\" already exists"),
        Vec::<String>::new(),
        "migrating logged refinery's NOTICE"
    );
}
