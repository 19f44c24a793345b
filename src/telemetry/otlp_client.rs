//! The HTTP client both OTLP exporters send with. The exporter's own client has no TLS,
//! so an `https://` collector needs one built here: blocking reqwest (the version
//! opentelemetry-http implements its client trait for) over rustls on ring, trusting
//! Mozilla's roots compiled in (the runtime image has no CA store) and the certificates
//! of `OTEL_EXPORTER_OTLP_CERTIFICATE`, for a collector with a private CA.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

/// The certificates in `pem`, or why there are none usable. For start-up checks too.
pub fn certificates(pem: &[u8]) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .context("not PEM")?;
    anyhow::ensure!(!certificates.is_empty(), "no PEM certificate in it");
    Ok(certificates)
}

/// A client trusting the built-in roots and the certificates in `ca_pem`; each request
/// times out after `timeout`.
pub fn build(
    ca_pem: Option<&[u8]>,
    timeout: Duration,
) -> anyhow::Result<reqwest_otlp::blocking::Client> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(pem) = ca_pem {
        for certificate in certificates(pem)? {
            roots
                .add(certificate)
                .context("a certificate of the collector's CA is unusable")?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions for the OTLP client")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let builder = reqwest_otlp::blocking::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(timeout);
    // The blocking client runs a runtime of its own, which cannot be built on a
    // runtime's thread: built on a thread of its own.
    std::thread::scope(|scope| {
        scope
            .spawn(|| builder.build())
            .join()
            .map_err(|_| anyhow::anyhow!("building the OTLP HTTP client panicked"))?
            .context("build the OTLP HTTP client")
    })
}
