//! An https upstream with a certificate of a CA made here (rcgen): trusted through
//! `TASKLANE_CA_FILE` it answers; signed by a CA nobody configured, the task fails at
//! once with a code and a message that say so.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::json;
use tasklane::mockllm::MockLlm;

use super::{local_type, replica, state_code, submit, terminal};
use crate::common;

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// An https mock for `localhost` signed by `ca`.
async fn mock_signed_by(ca: &CertifiedIssuer<'static, KeyPair>) -> MockLlm {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, ca)
        .unwrap();
    MockLlm::start_tls(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
        .await
        .unwrap()
}

#[tokio::test]
async fn https_upstreams_are_trusted_only_through_the_ca_file() {
    let db = common::test_db().await;
    let ours = ca("tasklane test CA");
    let theirs = ca("a CA nobody configured");
    let trusted = mock_signed_by(&ours).await;
    let untrusted = mock_signed_by(&theirs).await;
    let ca_file = std::env::temp_dir().join(format!("tasklane-ca-{}.pem", uuid::Uuid::new_v4()));
    std::fs::write(&ca_file, ours.pem()).unwrap();
    let types = [
        local_type("trusted", "max_attempts = 3", &trusted, "m"),
        local_type("untrusted", "max_attempts = 3", &untrusted, "m"),
    ]
    .concat();
    let env = vec![("TASKLANE_CA_FILE", ca_file.to_string_lossy().into_owned())];
    let (_serve, api) = replica(&db, types, env).await;

    let id = submit(&api, "trusted", "t", json!({})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(state_code(&task), ("succeeded".into(), None), "{task}");
    assert_eq!(trusted.calls("m"), 1);

    let id = submit(&api, "untrusted", "u", json!({})).await;
    let task = terminal(&api, &id).await;
    assert_eq!(
        state_code(&task),
        ("failed".into(), Some("upstream_rejected".into())),
        "{task}"
    );
    assert_eq!(task["attempt"], 1, "permanent: no retry");
    let message = task["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not trusted") && message.contains("TASKLANE_CA_FILE"),
        "{message}"
    );
    assert_eq!(
        untrusted.calls("m"),
        0,
        "the handshake failed before any request"
    );
    std::fs::remove_file(ca_file).unwrap();
}
