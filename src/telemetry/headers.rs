//! `OTEL_EXPORTER_OTLP_HEADERS` (and its per-signal forms) checked at start. The OTLP
//! exporter reads the variable itself but skips an entry it cannot parse, so a typo in
//! a hosted backend's API key header would only show as rejected exports. Checked here
//! instead, with messages that name the variable and the entry's position, never a
//! value: header values are credentials.

/// Why `value` (the variable `name`'s) is not a list of `key=value` headers, or `Ok`.
/// Values are percent-decoded first, as the exporter does (W3C Baggage format).
pub fn check(name: &str, value: &str) -> anyhow::Result<()> {
    for (index, entry) in value.split(',').enumerate() {
        let position = index + 1;
        if entry.trim().is_empty() {
            continue;
        }
        let Some((key, raw)) = entry.split_once('=') else {
            anyhow::bail!(
                "{name}: entry {position} is not key=value (a comma-separated list of \
                 headers, e.g. api-key=...; values are not shown)"
            );
        };
        let key = key.trim();
        anyhow::ensure!(
            reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_ok(),
            "{name}: entry {position} has no valid header name before `=`"
        );
        let decoded = percent_decode(raw.trim()).ok_or_else(|| {
            anyhow::anyhow!(
                "{name}: the value of header {key} (entry {position}) has a malformed \
                 %-escape (value not shown)"
            )
        })?;
        anyhow::ensure!(
            reqwest::header::HeaderValue::from_str(&decoded).is_ok(),
            "{name}: the value of header {key} (entry {position}) is not a valid header \
             value (value not shown)"
        );
    }
    Ok(())
}

/// `%XX` escapes decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: &str = "OTEL_EXPORTER_OTLP_HEADERS";

    #[test]
    fn key_value_lists_pass() {
        check(VAR, "api-key=abc").unwrap();
        check(VAR, "authorization=Bearer%20s3cr3t, x-tenant = blue,").unwrap();
        check(VAR, "").unwrap();
    }

    #[test]
    fn malformed_entries_are_refused_without_their_value() {
        for (value, says) in [
            ("api-key=ok,SECRETVALUE", "entry 2 is not key=value"),
            ("bad key=SECRETVALUE", "no valid header name"),
            ("api-key=SECRETVALUE%zz", "malformed %-escape"),
            ("api-key=SECRETVALUE%0a", "not a valid header value"),
        ] {
            let error = format!("{:#}", check(VAR, value).unwrap_err());
            assert!(error.starts_with(VAR), "{error}");
            assert!(error.contains(says), "{value}: {error}");
            assert!(!error.contains("SECRETVALUE"), "{error}");
        }
    }
}
