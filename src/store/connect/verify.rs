//! The rustls client configuration for one set of [`TlsSettings`]: which roots are
//! trusted and what is checked against them. rustls offers "chain and host" only, so
//! libpq's weaker modes are two small verifiers here: `verify-ca` (the chain, any host)
//! and `require` without a root cert (nothing, but the handshake signatures still are,
//! so the session key belongs to whoever holds the presented certificate).
//!
//! ring is named as the crypto provider on every config rather than installed
//! process-wide, so another crate enabling aws-lc-rs cannot make rustls panic at start.

use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};

use super::settings::{RootCert, TlsSettings, Verify};

/// The client configuration for `settings`; reads the root cert file, if any.
pub fn client_config(settings: &TlsSettings) -> anyhow::Result<ClientConfig> {
    let provider = Arc::new(ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match settings.verify() {
        Verify::Nothing => Arc::new(AnyCertificate(provider.signature_verification_algorithms)),
        Verify::Chain => Arc::new(ChainOnly(webpki(settings, &provider)?)),
        Verify::ChainAndHost => webpki(settings, &provider)?,
    };
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

fn webpki(
    settings: &TlsSettings,
    provider: &Arc<CryptoProvider>,
) -> anyhow::Result<Arc<WebPkiServerVerifier>> {
    let roots = roots(&settings.root_cert)?;
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .context("build the certificate verifier")
}

/// The trusted roots: the file's certificates, or Mozilla's set compiled in (the
/// runtime image has no CA store, and managed PostgreSQL mostly needs its own CA
/// anyway).
fn roots(root_cert: &RootCert) -> anyhow::Result<RootCertStore> {
    let path = match root_cert {
        RootCert::Default | RootCert::System => {
            return Ok(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
        }
        RootCert::File(path) => path,
    };
    let pem = std::fs::read(path)
        .with_context(|| format!("sslrootcert: cannot read {}", path.display()))?;
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.with_context(|| format!("sslrootcert: {} is not PEM", path.display()))?;
        store.add(cert).with_context(|| {
            format!(
                "sslrootcert: a certificate in {} is unusable",
                path.display()
            )
        })?;
    }
    if store.is_empty() {
        anyhow::bail!(
            "sslrootcert: {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        );
    }
    Ok(store)
}

/// `verify-ca`: the chain must lead to a trusted root; the name is not checked.
/// WebPkiServerVerifier checks the chain before the name, so a name error means the
/// chain was good.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`, and `require` without a root cert: encryption against passive
/// eavesdropping, no protection from an active man in the middle (libpq's meaning).
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}
