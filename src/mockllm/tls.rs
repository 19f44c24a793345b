//! The mock's https mode: a rustls accept loop handing each connection to hyper.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

/// A TLS acceptor for the certificate chain and key given as PEM.
pub(super) fn acceptor(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("mock certificate PEM")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).context("mock key PEM")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Accepts until `stop`; a failed handshake (an untrusting client) ends only its
/// connection. A failed accept (out of file descriptors) is retried after a pause, as
/// axum's own loop does: it would fail again at once.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    router: Router,
    stop: CancellationToken,
) {
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::select! {
                        _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => continue,
                        _ = stop.cancelled() => return,
                    }
                }
            },
            _ = stop.cancelled() => return,
        };
        let acceptor = acceptor.clone();
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let io = hyper_util::rt::TokioIo::new(tls);
            let connection =
                hyper::server::conn::http1::Builder::new().serve_connection(io, service);
            tokio::select! {
                _ = connection => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}
