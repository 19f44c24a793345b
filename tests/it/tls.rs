//! TLS to PostgreSQL: a private cluster with `ssl=on`, a server certificate for
//! `localhost` signed by a CA made here (rcgen), and a pg_hba.conf that takes TCP
//! connections over TLS only (`hostssl`). Each libpq sslmode is checked for what it
//! must accept and refuse, failures for messages that name the cause, and one real
//! `tasklane serve` for the whole start path (migrate, pool, LISTEN) over TLS, seen
//! encrypted in `pg_stat_ssl`.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::serve::{binary, Options, Serve};
use common::tls_cluster;
use tasklane::devdb::PrivateCluster;
use tasklane::store::connect::{self, Database};

/// A password no message may repeat (the cluster trusts, so it is never checked).
const PASSWORD: &str = "hunter2-not-for-logs";

struct Tls {
    /// Held so the server lives as long as the test binary.
    _cluster: PrivateCluster,
    port: u16,
    /// The CA that signed the server's certificate.
    ca: PathBuf,
    /// A CA that signed nothing the server has.
    other_ca: PathBuf,
}

/// The TLS cluster, started once per test binary (its watchdog removes it after the
/// process exits, with the CA files inside its directory).
fn tls() -> &'static Tls {
    static TLS: OnceLock<Tls> = OnceLock::new();
    TLS.get_or_init(|| start().expect("start the TLS cluster"))
}

fn start() -> anyhow::Result<Tls> {
    let ca = tls_cluster::ca("tasklane test CA")?;
    let other = tls_cluster::ca("some other CA")?.pem();
    let cluster = PrivateCluster::start_with(&tls_cluster::options(&ca)?)?;
    let write = |name: &str, pem: &str| -> anyhow::Result<PathBuf> {
        let path = cluster.dir().join(name);
        std::fs::write(&path, pem)?;
        Ok(path)
    };
    Ok(Tls {
        ca: write("ca.pem", &ca.pem())?,
        other_ca: write("other-ca.pem", &other)?,
        port: tls_cluster::port(&cluster),
        _cluster: cluster,
    })
}

/// A URL to `database` on `host` with `query` (sslmode and friends).
fn url(host: &str, database: &str, query: &str) -> String {
    format!(
        "postgres://postgres:{PASSWORD}@{host}:{}/{database}?{query}",
        tls().port
    )
}

fn verify_full(ca: &std::path::Path) -> String {
    format!("sslmode=verify-full&sslrootcert={}", ca.display())
}

/// A fresh database on the TLS cluster, made over an unverified TLS connection.
async fn database(name: &str) -> String {
    let admin = connect::connect(&url("127.0.0.1", "postgres", "sslmode=require"))
        .await
        .expect("admin connection");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&statement)
            .await
            .expect("create database");
    }
    name.to_owned()
}

/// Whether this session is encrypted, from the server's side.
async fn encrypted(client: &tokio_postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

async fn refused(url: &str) -> String {
    match connect::connect(url).await {
        Ok(_) => panic!("connected, but must not"),
        Err(error) => format!("{error:#}"),
    }
}

fn run(args: &[&str], database_url: &str) -> Output {
    Command::new(binary())
        .args(args)
        .env("DATABASE_URL", database_url)
        .env_remove("TASKLANE_DATABASE_URL")
        .env("TASKLANE_LOG", "warn")
        .output()
        .expect("run tasklane")
}

#[tokio::test]
async fn verify_full_with_the_right_ca_connects_and_migrates() {
    let db = database("tls_verify_full").await;
    let url = url("localhost", &db, &verify_full(&tls().ca));
    tasklane::store::migrate::run(&url).await.expect("migrate");
    let client = connect::connect(&url).await.unwrap();
    assert!(encrypted(&client).await);
    assert!(
        tasklane::store::migrate::check_writable_and_current(&client)
            .await
            .is_ok()
    );

    // The key=value form says the same.
    let key_value = format!(
        "host=localhost port={} user=postgres dbname={db} sslmode=verify-full sslrootcert='{}'",
        tls().port,
        tls().ca.display()
    );
    assert!(encrypted(&connect::connect(&key_value).await.unwrap()).await);
}

#[tokio::test]
async fn a_wrong_ca_is_refused_at_start_as_untrusted() {
    let db = database("tls_wrong_ca").await;
    let url = url("localhost", &db, &verify_full(&tls().other_ca));
    let out = run(&["serve", "--listen", "127.0.0.1:0"], &url);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("is not trusted"), "{stderr}");
    assert!(stderr.contains("other-ca.pem"), "names the roots: {stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");
}

#[tokio::test]
async fn a_wrong_host_name_fails_under_verify_full_and_passes_under_verify_ca() {
    let db = database("tls_host").await;
    // The certificate names localhost, not 127.0.0.1.
    let full = url("127.0.0.1", &db, &verify_full(&tls().ca));
    let out = run(&["migrate"], &full);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("does not name the host"), "{stderr}");
    assert!(stderr.contains("127.0.0.1"), "{stderr}");
    assert!(!stderr.contains(PASSWORD), "{stderr}");

    let ca_only = format!("sslmode=verify-ca&sslrootcert={}", tls().ca.display());
    let client = connect::connect(&url("127.0.0.1", &db, &ca_only))
        .await
        .expect("verify-ca ignores the name");
    assert!(encrypted(&client).await);
    // ... but not the chain.
    let wrong = format!("sslmode=verify-ca&sslrootcert={}", tls().other_ca.display());
    let message = refused(&url("127.0.0.1", &db, &wrong)).await;
    assert!(message.contains("is not trusted"), "{message}");
}

#[tokio::test]
async fn disable_against_a_server_requiring_tls_fails_clearly() {
    let message = refused(&url("127.0.0.1", "postgres", "sslmode=disable")).await;
    assert!(
        message.contains("refused a connection without TLS (sslmode=disable)"),
        "{message}"
    );
    assert!(!message.contains(PASSWORD), "{message}");
}

#[tokio::test]
async fn require_and_prefer_encrypt_without_a_ca() {
    for mode in ["sslmode=require", "sslmode=prefer", ""] {
        let client = connect::connect(&url("127.0.0.1", "postgres", mode))
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e:#}"));
        assert!(encrypted(&client).await, "{mode}");
    }
    // libpq: require with a root cert verifies the chain.
    let wrong = format!("sslmode=require&sslrootcert={}", tls().other_ca.display());
    let message = refused(&url("localhost", "postgres", &wrong)).await;
    assert!(message.contains("is not trusted"), "{message}");
}

#[tokio::test]
async fn bad_tls_settings_refuse_to_start_naming_the_setting() {
    let bad = [
        ("sslmode=verify", "unknown sslmode \"verify\""),
        (
            "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            "sslrootcert: cannot read /nonexistent/ca.pem",
        ),
    ];
    for (query, want) in bad {
        let out = run(&["serve"], &url("localhost", "postgres", query));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{query}");
        assert!(stderr.contains(want), "{query}: {stderr}");
        assert!(!stderr.contains(PASSWORD), "{stderr}");
    }
    // Parsed before anything connects: no server needed to refuse.
    assert!(Database::from_url("postgres://nowhere.invalid/db?sslmode=allow").is_err());
}

/// The real binary over verify-full: `tasklane migrate`, then `serve` (pool, LISTEN,
/// readiness) runs a task; every session it holds is encrypted.
#[tokio::test]
async fn serve_runs_over_verify_full_with_every_session_encrypted() {
    let db = database("tls_serve").await;
    let url = url("localhost", &db, &verify_full(&tls().ca));
    let out = run(&["migrate"], &url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let serve = Serve::start(&url, Options::default()).await;
    let api = serve.api(&common::api::token(&url, "tls", None, common::api::ALL).await);
    let created = api
        .submit("noop", "s1", "k1", serde_json::json!({"input": {"n": 1}}))
        .await;
    assert_eq!(created.status, 202, "{:?}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    loop {
        let got = api.get(&format!("/v1/tasks/{id}")).await;
        if got.body["state"] == "succeeded" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            got.body
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let admin = connect::connect(&url).await.unwrap();
    let rows = admin
        .query(
            "SELECT a.query, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.datname = $1 AND a.pid <> pg_backend_pid()",
            &[&db],
        )
        .await
        .unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r.get::<_, bool>(1)),
        "an unencrypted session"
    );
    let listening = rows
        .iter()
        .filter(|r| r.get::<_, String>(0).starts_with("LISTEN"))
        .count();
    assert!(listening >= 1, "the LISTEN connection is among them");
    drop(serve);
}
