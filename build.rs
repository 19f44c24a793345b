//! Build steps: refinery embeds `migrations/` at compile time without telling cargo, so a
//! changed or added migration must rebuild the crate; and the claim template
//! `sql/claim.sql` is rendered into its six variants in `OUT_DIR` (the template's own
//! header describes its `--#` lines), so the hot path includes finished `&'static str`
//! statements and builds no SQL at run time.

use std::collections::HashMap;
use std::path::Path;

/// The claim variants: file name and the tags it renders with (route, slots,
/// `floors` for the claims that read the claimable index from the floors, and
/// `fallback` for the external claims of waiting fallbacks only).
const CLAIM_VARIANTS: [(&str, &[&str]); 6] = [
    ("claim_local.sql", &["local", "floors", "aware"]),
    ("claim_external.sql", &["external", "floors", "aware"]),
    ("claim_local_plain.sql", &["local", "floors", "plain"]),
    ("claim_external_plain.sql", &["external", "floors", "plain"]),
    ("claim_fallback.sql", &["external", "fallback", "aware"]),
    (
        "claim_fallback_plain.sql",
        &["external", "fallback", "plain"],
    ),
];

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=sql/claim.sql");
    let template = std::fs::read_to_string("sql/claim.sql").expect("read sql/claim.sql");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for (name, tags) in CLAIM_VARIANTS {
        let sql = render(&template, tags).unwrap_or_else(|e| panic!("sql/claim.sql: {e}"));
        std::fs::write(Path::new(&out_dir).join(name), sql).expect("write a claim variant");
    }
}

/// Keeps the lines whose enclosing `--#if` blocks hold for `tags`, drops every `--#`
/// line, and fills in the `{NAME}` values that `--#set` gave for these tags.
fn render(template: &str, tags: &[&str]) -> Result<String, String> {
    let mut values = HashMap::new();
    // One entry per open `--#if`: whether its branch currently keeps lines.
    let mut open: Vec<bool> = Vec::new();
    let mut kept = Vec::new();
    for (n, line) in template.lines().enumerate() {
        let at = |what: &str| format!("line {}: {what}", n + 1);
        let Some(directive) = line.strip_prefix("--#") else {
            if open.iter().all(|&keep| keep) {
                kept.push(line);
            }
            continue;
        };
        if directive.is_empty() || directive.starts_with(' ') {
            continue; // a template comment
        }
        let words: Vec<&str> = directive.split_whitespace().collect();
        match words.as_slice() {
            ["if", tag] => open.push(tags.contains(tag)),
            ["else"] => {
                let keep = open.last_mut().ok_or_else(|| at("--#else without --#if"))?;
                *keep = !*keep;
            }
            ["end"] => {
                open.pop().ok_or_else(|| at("--#end without --#if"))?;
            }
            ["set", name, tag, value @ ..] if !value.is_empty() => {
                if tags.contains(tag) {
                    values.insert(format!("{{{name}}}"), value.join(" "));
                }
            }
            _ => return Err(at(&format!("unknown directive {line:?}"))),
        }
    }
    if !open.is_empty() {
        return Err("an --#if is never closed".to_owned());
    }
    let mut sql = kept.join("\n") + "\n";
    for (placeholder, value) in &values {
        sql = sql.replace(placeholder.as_str(), value);
    }
    match unfilled(&sql) {
        Some(placeholder) => Err(format!("no --#set value for {placeholder:?}")),
        None => Ok(sql),
    }
}

/// The first `{name}` left in the rendered SQL (a lower-case word in braces: a JSON
/// constant such as `'{"attempt": 1}'` is not one).
fn unfilled(sql: &str) -> Option<&str> {
    sql.match_indices('{').find_map(|(i, _)| {
        let rest = &sql[i + 1..];
        let word = rest.find(|c: char| !(c.is_ascii_lowercase() || c == '_'))?;
        (word > 0 && rest[word..].starts_with('}')).then(|| &sql[i..i + word + 2])
    })
}
