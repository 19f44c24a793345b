//! Text that came from outside (an upstream's error body, a model's answer quoted in a
//! message) made safe to store in a task's error: anything that looks like a key
//! removed, control characters flattened, the length bounded.

use super::bounds;

/// Bytes of upstream error text kept in a task's error message.
pub const UPSTREAM_TEXT_BYTES: usize = 512;

/// Upstream text made safe to store: anything that looks like a key removed, control
/// characters flattened, then cut to [`UPSTREAM_TEXT_BYTES`].
pub fn safe_text(text: &str) -> String {
    // Redact before cutting: a key cut in half would no longer look like one. Only
    // the first few KiB can survive the cut, so only they are scanned.
    let head = bounds::truncate(text, UPSTREAM_TEXT_BYTES * 8);
    let flat: String = head
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    bounds::truncate(&redact(&flat), UPSTREAM_TEXT_BYTES).to_owned()
}

/// Replaces what looks like a secret with `[redacted]`: `sk-...` keys, the token after
/// `Bearer`, and long runs of base64 or hex characters (32 or more).
pub fn redact(text: &str) -> String {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || "+/=_-.~".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut after_bearer = false;
    let mut rest = text;
    while let Some(start) = rest.find(is_token_char) {
        out.push_str(&rest[..start]);
        let mut token_len = rest[start..]
            .find(|c: char| !is_token_char(c))
            .unwrap_or(rest.len() - start);
        // A sentence's full stop is not part of the token before it.
        while token_len > 1 && rest[start..start + token_len].ends_with('.') {
            token_len -= 1;
        }
        let token = &rest[start..start + token_len];
        let secret = after_bearer
            || token.starts_with("sk-")
            || token.starts_with("tl_")
            || (token.len() >= 32 && token.chars().any(|c| c.is_ascii_digit()));
        after_bearer = token.eq_ignore_ascii_case("bearer");
        out.push_str(if secret { "[redacted]" } else { token });
        rest = &rest[start + token_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redacted_and_text_bounded() {
        let key = "sk-proj-AbCdEf0123456789";
        let text = format!(
            "Incorrect API key provided: {key}. Authorization: Bearer abc.def and \
             token 0123456789abcdef0123456789abcdef01 ok"
        );
        let safe = safe_text(&text);
        assert!(!safe.contains("sk-proj"), "{safe}");
        assert!(!safe.contains("abc.def"), "{safe}");
        assert!(!safe.contains("0123456789abcdef0123"), "{safe}");
        assert!(
            safe.starts_with("Incorrect API key provided: [redacted]."),
            "{safe}"
        );
        assert!(safe.ends_with(" ok"), "{safe}");
        let long = "word ".repeat(1000);
        assert!(safe_text(&long).len() <= UPSTREAM_TEXT_BYTES);
    }
}
