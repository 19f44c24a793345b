//! Database URLs as they may be shown: `tasklane dev` prints and logs the URL of the
//! database it serves, and a URL the user gave may hold a password.

/// What a password is shown as.
const HIDDEN: &str = "***";

/// `url` with every password replaced by `***`: the one in the user info of the URL form
/// (`postgres://user:secret@host/db`) and any `password=` parameter, in the URL's query
/// or in the key-value form (`host=... password=secret`). When unsure where user info
/// ends, it hides more rather than less.
pub fn redacted_url(url: &str) -> String {
    let url = match url.find("://") {
        Some(scheme) => redact_user_info(url, scheme + 3),
        None => url.to_owned(),
    };
    redact_password_parameters(&url)
}

/// Hides the password of `user:password@` after `start` (the end of `scheme://`). The
/// last `@` is taken as the end of the user info, so a password holding a raw `@` or
/// `/` is still hidden whole.
fn redact_user_info(url: &str, start: usize) -> String {
    let rest = &url[start..];
    let Some(at) = rest.rfind('@') else {
        return url.to_owned();
    };
    let Some(colon) = rest[..at].find(':') else {
        return url.to_owned();
    };
    format!(
        "{}{}:{HIDDEN}{}",
        &url[..start],
        &rest[..colon],
        &rest[at..]
    )
}

/// Hides the value of every `password=` parameter: a query parameter ends at `&`, a
/// key-value one at whitespace, a quoted one at its closing quote.
fn redact_password_parameters(url: &str) -> String {
    const KEY: &str = "password=";
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(found) = find_key(rest, KEY) {
        let value_start = found + KEY.len();
        out.push_str(&rest[..value_start]);
        out.push_str(HIDDEN);
        let value = &rest[value_start..];
        let value_len = if let Some(quoted) = value.strip_prefix('\'') {
            quoted_len(quoted) + 1
        } else {
            value
                .find(|c: char| c == '&' || c.is_whitespace())
                .unwrap_or(value.len())
        };
        rest = &value[value_len..];
    }
    out.push_str(rest);
    out
}

/// The position of `key` where it starts a parameter (at the start, or after `?`, `&`
/// or whitespace), so `xpassword=` is not taken for it.
fn find_key(text: &str, key: &str) -> Option<usize> {
    text.match_indices(key).map(|(i, _)| i).find(|&i| {
        i == 0
            || text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c == '?' || c == '&' || c.is_whitespace())
    })
}

/// Length of a single-quoted value up to and including its closing quote (`\'` escapes
/// a quote); the whole rest when it is not closed.
fn quoted_len(quoted: &str) -> usize {
    let mut escaped = false;
    for (i, c) in quoted.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '\'' if !escaped => return i + 1,
            _ => escaped = false,
        }
    }
    quoted.len()
}

#[cfg(test)]
mod tests {
    use super::redacted_url;

    #[test]
    fn hides_passwords_in_every_form() {
        let cases = [
            (
                "postgres://app:s3cret@db:5432/tasks",
                "postgres://app:***@db:5432/tasks",
            ),
            (
                "postgresql://app:p@ss/w0rd@db/tasks?sslmode=require",
                "postgresql://app:***@db/tasks?sslmode=require",
            ),
            (
                "postgres://app@db/tasks?password=s3cret&sslmode=require",
                "postgres://app@db/tasks?password=***&sslmode=require",
            ),
            (
                "host=db user=app password=s3cret dbname=tasks",
                "host=db user=app password=*** dbname=tasks",
            ),
            (
                "host=db password='s3 \\' cret' dbname=tasks",
                "host=db password=*** dbname=tasks",
            ),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted_url(url), shown, "{url}");
            assert!(!redacted_url(url).contains("s3"), "{url}");
        }
    }

    #[test]
    fn leaves_urls_without_a_password_alone() {
        for url in [
            "postgres://postgres@127.0.0.1:5432/postgres",
            "postgres://127.0.0.1/tasks",
            "host=/tmp user=postgres dbname=tasks",
            "host=db xpassword=kept",
        ] {
            assert_eq!(redacted_url(url), url);
        }
    }
}
