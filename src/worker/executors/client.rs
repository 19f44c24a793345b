//! The HTTP client of the upstream executors: rustls with the Mozilla roots compiled in
//! (the runtime image carries no CA store) plus, when `TASKLANE_CA_FILE` names one, a
//! PEM bundle of extra roots (a private CA in front of a local model). A bundle that
//! cannot be read or holds no certificate refuses the start.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

/// How long a connection (TCP and TLS) to an upstream may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings shared by every upstream client of a replica.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Extra trusted roots (`TASKLANE_CA_FILE`), a PEM bundle.
    pub ca_file: Option<PathBuf>,
    pub connect_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            ca_file: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

impl ClientOptions {
    /// A client builder with these roots and the connect timeout; redirects are not
    /// followed (a redirect would re-send the key to wherever it points).
    pub fn builder(&self) -> anyhow::Result<reqwest::ClientBuilder> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(path) = &self.ca_file {
            for certificate in read_bundle(path)? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        Ok(builder)
    }
}

/// The certificates of a PEM bundle, refused when unreadable or empty.
fn read_bundle(path: &PathBuf) -> anyhow::Result<Vec<reqwest::Certificate>> {
    let what = || format!("TASKLANE_CA_FILE {}", path.display());
    let pem = std::fs::read(path).with_context(what)?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem).with_context(what)?;
    if certificates.is_empty() {
        anyhow::bail!("{}: holds no PEM certificate", what());
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_or_empty_ca_file_is_refused_by_name() {
        let missing = ClientOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..ClientOptions::default()
        };
        let e = format!("{:#}", missing.builder().unwrap_err());
        assert!(e.contains("TASKLANE_CA_FILE /nonexistent/ca.pem"), "{e}");
        let dir = std::env::temp_dir().join(format!("tasklane-ca-{}", std::process::id()));
        std::fs::write(&dir, "not a certificate").unwrap();
        let empty = ClientOptions {
            ca_file: Some(dir.clone()),
            ..ClientOptions::default()
        };
        assert!(empty.builder().is_err());
        std::fs::remove_file(dir).unwrap();
        assert!(ClientOptions::default().builder().is_ok());
    }
}
