//! The settings of a database URL that tasklane reads itself, as libpq reads them:
//! `sslmode` and `sslrootcert` here, the TCP settings in [`super::tcp`]. They are taken
//! out of the URL (`postgres://...?sslmode=...`) or the key=value string
//! (`host=... sslmode=...`) before the rest goes to tokio-postgres, which knows only
//! disable/prefer/require, reads some TCP settings in other units and refuses unknown
//! keys. Pure: no file is read here.
//!
//! Nothing here ever echoes the URL: it may hold a password.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::tcp::{TcpSettings, KEYS as TCP_KEYS};

/// libpq's `sslmode`, all five values that matter for a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS if the server offers it, unverified; plain otherwise (libpq's default).
    Prefer,
    /// TLS or fail; the certificate is not checked unless a root cert is given.
    Require,
    /// TLS, the certificate chain verified; the host name is not.
    VerifyCa,
    /// TLS, the chain verified and the certificate naming the host connected to.
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = String;

    fn from_str(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's "allow" (plain first, TLS if refused) is left out on purpose: it
            // sends credentials in clear whenever the server accepts plain.
            other => {
                return Err(format!(
                "unknown sslmode \"{other}\" in the database URL (expected disable, prefer, require, verify-ca or verify-full)"
            ))
            }
        })
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        })
    }
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// No `sslrootcert`: verify-* modes use the built-in Mozilla roots.
    Default,
    /// `sslrootcert=system` (libpq 16): the built-in roots, and verify-full by default.
    System,
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
}

/// What the connector does with a server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Encrypt (if TLS is used at all) but accept any certificate.
    Nothing,
    /// The chain up to a trusted root; any host name.
    Chain,
    /// The chain and the host name.
    ChainAndHost,
}

/// The TLS settings of one database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: SslMode,
    pub root_cert: RootCert,
}

impl TlsSettings {
    /// libpq's rule: `require` with a root cert file behaves like `verify-ca`; `prefer`
    /// never verifies (it would fall back to plain anyway).
    pub fn verify(&self) -> Verify {
        match (self.mode, &self.root_cert) {
            (SslMode::Disable | SslMode::Prefer, _) => Verify::Nothing,
            (SslMode::Require, RootCert::File(_)) => Verify::Chain,
            (SslMode::Require, _) => Verify::Nothing,
            (SslMode::VerifyCa, _) => Verify::Chain,
            (SslMode::VerifyFull, _) => Verify::ChainAndHost,
        }
    }

    /// The `sslrootcert` as said in messages.
    pub fn describe_roots(&self) -> String {
        match &self.root_cert {
            RootCert::File(path) => format!("sslrootcert={}", path.display()),
            RootCert::System => "sslrootcert=system (the built-in Mozilla roots)".into(),
            RootCert::Default => "the built-in Mozilla roots (no sslrootcert)".into(),
        }
    }
}

/// A database URL split into the settings read here and the rest, for tokio-postgres.
#[derive(Debug)]
pub struct Split {
    pub tls: TlsSettings,
    pub tcp: TcpSettings,
    /// The URL or key=value string without `sslmode` and `sslrootcert`.
    pub rest: String,
}

/// Takes `sslmode`, `sslrootcert` and the TCP settings out of `url` (the last occurrence
/// wins, as in libpq) and checks them: an unknown mode, an empty path,
/// `sslrootcert=system` with a mode weaker than verify-full (libpq refuses that too) and
/// a TCP setting that is not a number are errors.
pub fn split(url: &str) -> Result<Split, String> {
    let (pairs, rest) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)?
    } else {
        split_key_values(url)?
    };
    let mut mode = None;
    let mut root_cert = RootCert::Default;
    let mut tcp = Vec::new();
    for (key, value) in &pairs {
        if key == "sslmode" {
            mode = Some(value.parse::<SslMode>()?);
            continue;
        }
        if key != "sslrootcert" {
            tcp.push((key.as_str(), value.as_str()));
            continue;
        }
        root_cert = match value.as_str() {
            "system" => RootCert::System,
            "" => return Err("sslrootcert in the database URL is empty".into()),
            path => RootCert::File(PathBuf::from(path)),
        };
    }
    let mode = match (mode, &root_cert) {
        (None, RootCert::System) => SslMode::VerifyFull,
        (None, _) => SslMode::Prefer,
        (Some(mode), RootCert::System) if mode != SslMode::VerifyFull => {
            return Err(format!(
                "sslmode \"{mode}\" may not be used with sslrootcert=system (use verify-full)"
            ))
        }
        (Some(mode), _) => mode,
    };
    Ok(Split {
        tls: TlsSettings { mode, root_cert },
        tcp: TcpSettings::from_pairs(tcp)?,
        rest,
    })
}

fn is_ours(key: &str) -> bool {
    ["sslmode", "sslrootcert"].contains(&key) || TCP_KEYS.contains(&key)
}

/// The URL form: `sslmode`/`sslrootcert` pairs out of the query, percent-decoded.
fn split_url(url: &str) -> Result<(Vec<(String, String)>, String), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((Vec::new(), url.to_owned()));
    };
    let mut ours = Vec::new();
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if is_ours(&key) {
            ours.push((key, decode(value)?));
        } else {
            kept.push(pair);
        }
    }
    let rest = match kept.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((ours, rest))
}

fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a malformed %-escape in the database URL's parameters")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a database URL parameter is not UTF-8".to_owned())
}

/// The key=value form (`host=h sslmode='verify-full'`): values may be single-quoted
/// with backslash escapes, and spaces may surround `=`, as tokio-postgres accepts.
fn split_key_values(text: &str) -> Result<(Vec<(String, String)>, String), String> {
    let mut ours = Vec::new();
    let mut kept = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            // Not ours to judge: tokio-postgres reports the malformed remainder.
            kept.push(text[start..].to_owned());
            break;
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let value = key_value_value(&mut chars)?;
        let end = chars.peek().map_or(text.len(), |(i, _)| *i);
        if is_ours(&key) {
            ours.push((key, value));
        } else {
            kept.push(text[start..end].trim_end().to_owned());
        }
    }
    Ok((ours, kept.join(" ")))
}

fn key_value_value(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> Result<String, String> {
    let mut value = String::new();
    if chars.next_if(|(_, c)| *c == '\'').is_some() {
        loop {
            match chars.next() {
                Some((_, '\'')) => return Ok(value),
                Some((_, '\\')) => match chars.next() {
                    Some((_, c)) => value.push(c),
                    None => break,
                },
                Some((_, c)) => value.push(c),
                None => break,
            }
        }
        return Err("an unterminated quoted value in the database connection string".into());
    }
    while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
        if c == '\\' {
            if let Some((_, escaped)) = chars.next() {
                value.push(escaped);
            }
        } else {
            value.push(c);
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(mode: SslMode, root_cert: RootCert) -> TlsSettings {
        TlsSettings { mode, root_cert }
    }

    #[test]
    fn url_form_loses_our_keys_and_keeps_the_rest() {
        let s = split("postgres://u:p%40ss@h:5432/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3&target_session_attrs=read-write").unwrap();
        assert_eq!(
            s.rest,
            "postgres://u:p%40ss@h:5432/db?application_name=x&target_session_attrs=read-write"
        );
        assert_eq!(
            s.tcp.connect_timeout,
            Some(std::time::Duration::from_secs(3))
        );
        assert_eq!(
            s.tls,
            tls(SslMode::VerifyFull, RootCert::File("/etc/ca.pem".into()))
        );
        let s = split("postgresql://h/db?sslmode=require").unwrap();
        assert_eq!(s.rest, "postgresql://h/db");
        assert_eq!(s.tls, tls(SslMode::Require, RootCert::Default));
    }

    #[test]
    fn key_value_form_loses_our_keys_and_keeps_the_rest() {
        let s = split(
            "host=h password='a b\\'c' sslmode = verify-ca sslrootcert='/x y/ca.pem' dbname=d tcp_user_timeout=1500",
        )
        .unwrap();
        assert_eq!(s.rest, "host=h password='a b\\'c' dbname=d");
        assert_eq!(
            s.tcp.tcp_user_timeout,
            Some(std::time::Duration::from_millis(1500))
        );
        assert_eq!(
            s.tls,
            tls(SslMode::VerifyCa, RootCert::File("/x y/ca.pem".into()))
        );
    }

    #[test]
    fn absent_mode_is_prefer_and_system_roots_mean_verify_full() {
        assert_eq!(split("postgres://h/db").unwrap().tls.mode, SslMode::Prefer);
        assert_eq!(split("host=h").unwrap().tls.mode, SslMode::Prefer);
        let s = split("postgres://h/db?sslrootcert=system").unwrap();
        assert_eq!(s.tls, tls(SslMode::VerifyFull, RootCert::System));
        let err = split("postgres://h/db?sslrootcert=system&sslmode=require").unwrap_err();
        assert!(err.contains("sslrootcert=system"), "{err}");
    }

    #[test]
    fn bad_values_are_refused_naming_the_setting_not_the_password() {
        for url in [
            "postgres://u:secret@h/db?sslmode=verify_full",
            "user=u password=secret sslmode=allow",
        ] {
            let err = split(url).unwrap_err();
            assert!(err.contains("sslmode"), "{err}");
            assert!(!err.contains("secret"), "{err}");
        }
        let err = split("postgres://u:secret@h/db?sslrootcert=").unwrap_err();
        assert!(
            err.contains("sslrootcert") && !err.contains("secret"),
            "{err}"
        );
    }

    #[test]
    fn verification_follows_libpq() {
        use RootCert::*;
        use SslMode::*;
        let file = || File("/ca.pem".into());
        let cases = [
            (tls(Disable, file()), Verify::Nothing),
            (tls(Prefer, file()), Verify::Nothing),
            (tls(Require, Default), Verify::Nothing),
            (tls(Require, file()), Verify::Chain),
            (tls(VerifyCa, Default), Verify::Chain),
            (tls(VerifyCa, file()), Verify::Chain),
            (tls(VerifyFull, Default), Verify::ChainAndHost),
            (tls(VerifyFull, System), Verify::ChainAndHost),
        ];
        for (settings, want) in cases {
            assert_eq!(settings.verify(), want, "{settings:?}");
        }
    }
}
