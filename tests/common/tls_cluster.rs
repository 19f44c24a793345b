//! Private PostgreSQL clusters that take TCP connections over TLS only: `ssl=on`, a
//! server certificate for `localhost` signed by a CA made here (rcgen), and a
//! pg_hba.conf of `hostssl` lines (the Unix socket stays open for `pg_ctl`).

#![allow(dead_code)]

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tasklane::devdb::{ClusterOptions, PrivateCluster};

/// A CA named `name`, made now.
pub fn ca(name: &str) -> anyhow::Result<CertifiedIssuer<'static, KeyPair>> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
}

/// The settings, files and pg_hba.conf of a TLS-only cluster whose certificate `ca`
/// signs.
pub fn options(ca: &CertifiedIssuer<'static, KeyPair>) -> anyhow::Result<ClusterOptions> {
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec!["localhost".to_owned()])?.signed_by(&key, ca)?;
    Ok(ClusterOptions {
        settings: [
            ("ssl", "on"),
            ("ssl_cert_file", "server.crt"),
            ("ssl_key_file", "server.key"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec(),
        files: vec![
            ("server.crt".into(), cert.pem().into_bytes()),
            ("server.key".into(), key.serialize_pem().into_bytes()),
        ],
        hba: Some(
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n"
                .into(),
        ),
        ..ClusterOptions::default()
    })
}

/// Starts a TLS-only cluster (blocking: `initdb`, `pg_ctl`), durable as asked; clients
/// reach it with `sslmode=require` (the CA is not kept).
pub fn start(durable: bool) -> anyhow::Result<PrivateCluster> {
    let options = ClusterOptions {
        durable,
        ..options(&ca("tasklane test CA")?)?
    };
    PrivateCluster::start_with(&options)
}

/// The TCP port in a private cluster's URL.
pub fn port(cluster: &PrivateCluster) -> u16 {
    let after_colon = cluster.url().rsplit(':').next().expect("a port in the URL");
    after_colon
        .split('/')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("a numeric port")
}
