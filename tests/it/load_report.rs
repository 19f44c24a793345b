//! `tasklane load` against a real replica: the report counts every task and says what
//! CPU the database's backends and the replica spent on them.

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_run_reports_the_cpu_its_tasks_cost() {
    let db = common::test_db().await;
    let config = tasklane::load::LoadConfig {
        database_url: db.url.clone(),
        replicas: 1,
        bin: Some(env!("CARGO_BIN_EXE_tasklane").into()),
        serve_args: Vec::new(),
        tasks: 300,
        rate: 0.0,
        clients: 4,
        task_type: "noop".into(),
        sleep_ms: 0,
        submit: "sql".into(),
        http_url: Vec::new(),
        http_base_port: 0,
        token: None,
        app: "load".into(),
        json: None,
        timeout_seconds: 120,
        no_migrate: true,
    };
    let report = tasklane::load::run(config).await.expect("load run");
    assert_eq!((report.accepted, report.completed), (300, 300));
    // The test database runs on this machine, so its backends' CPU time is readable;
    // 300 submits, claims and settles take far more than one clock tick of it.
    let postgres = report
        .postgres_cpu_ms_per_task
        .expect("backends read from /proc");
    assert!(postgres > 0.0, "postgres CPU per task {postgres}");
    let replica = report
        .replica_cpu_ms_per_task
        .expect("the run started a replica");
    assert!(replica > 0.0, "replica CPU per task {replica}");
    assert!(report
        .table()
        .contains("CPU per task: postgres / replicas / load"));
}
