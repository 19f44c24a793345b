//! The one normaliser: turns `pg_dump --schema-only` of a migrated database into the
//! committed reference files, `sql/schema.sql` (tables and views, each followed by its
//! constraints, indexes and triggers) and `sql/functions/<name>.sql` (one file per
//! function name, overloads together, with its grants).
//!
//! Everything that varies by machine is dropped: the preamble (`SET` lines, version
//! comments, `\restrict` keys), owners (pg_dump runs with `--no-owner`) and pg_dump's
//! own `-- Name: ...; Owner: ...` headers. The SQL of every object is pg_dump's text,
//! unchanged, in pg_dump's order (which is stable: by type, then name, dependencies
//! first). A `--` comment above each object names the migrations that wrote it,
//! because pg_dump keeps comments only inside function bodies and `COMMENT ON` text.
//! A function's `COMMENT ON FUNCTION` text (its `pg_description`, which pg_dump prints
//! as a `COMMENT` entry) becomes the header of its file, as `--` lines, in place of
//! that entry.

use std::collections::BTreeMap;

/// How to rewrite the files; printed in every generated header and failure message.
pub const REGENERATE: &str = "TASKLANE_BLESS=1 cargo test --test it schema::";

/// The file holding everything but functions.
pub const SCHEMA_FILE: &str = "sql/schema.sql";
/// The directory holding one file per function.
pub const FUNCTIONS_DIR: &str = "sql/functions";

/// One object of the dump: pg_dump's header fields and its SQL.
struct Entry {
    name: String,
    kind: String,
    sql: String,
}

/// Where an entry belongs.
enum Place {
    /// With the schema itself, at the top of `sql/schema.sql`.
    Top,
    /// With a table or view (a new group when the entry is the table itself).
    Table(String),
    /// In `sql/functions/<name>.sql`.
    Function(String),
}

/// A migration source file: its path relative to the crate root and its text.
pub struct Source {
    pub path: String,
    pub text: String,
}

/// The reference files for `dump` of a PostgreSQL `server_major` server, keyed by path
/// relative to the crate root. `sources` (migrations, in version order) are searched
/// for the statements that wrote each object, see [`written_by`].
pub fn render(dump: &str, server_major: u32, sources: &[Source]) -> BTreeMap<String, String> {
    let searchable: Vec<(String, String)> = sources
        .iter()
        .map(|s| (s.path.clone(), searchable(&s.text)))
        .collect();
    let mut top = Vec::new();
    let mut tables: Vec<(String, Vec<String>)> = Vec::new();
    let mut functions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut comments: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for entry in parse(dump) {
        if let Some((signature, text)) = function_comment(&entry) {
            let name = function_name(&signature);
            comments.entry(name).or_default().push((signature, text));
            continue;
        }
        let note = annotation(&entry, &searchable);
        let block = format!("{note}{}", entry.sql);
        match place(&entry, &tables) {
            Place::Top => top.push(block),
            Place::Table(table) => match tables.iter_mut().find(|(t, _)| *t == table) {
                Some((_, blocks)) => blocks.push(block),
                None => tables.push((table, vec![block])),
            },
            Place::Function(name) => functions.entry(name).or_default().push(block),
        }
    }
    let mut files = BTreeMap::new();
    let body: Vec<String> = top
        .into_iter()
        .chain(tables.into_iter().map(|(_, blocks)| blocks.join("\n\n")))
        .collect();
    files.insert(
        SCHEMA_FILE.to_owned(),
        format!("{}\n{}\n", schema_header(server_major), body.join("\n\n\n")),
    );
    for (name, blocks) in functions {
        let path = format!("{FUNCTIONS_DIR}/{name}.sql");
        let described = comments.get(&name).map_or(&[][..], Vec::as_slice);
        let header = function_header(&name, described);
        let text = format!("{header}\n{}\n", blocks.join("\n\n"));
        files.insert(path, text);
    }
    files
}

/// Names the server version: another major version may print some definitions
/// differently, and the diff then starts with this line.
fn schema_header(server_major: u32) -> String {
    format!(
        "-- GENERATED from the migrations by tests/schema/: do not edit. To change the
-- schema, add a migration, then run `{REGENERATE}`.
--
-- The current definition of every table and view in the tasklane schema, each
-- followed by its constraints, indexes and triggers: what migrations/ leave after
-- the last one ran (pg_dump --schema-only of PostgreSQL {server_major}, normalised).
-- Functions, including the trigger functions, are in {FUNCTIONS_DIR}/<name>.sql.
-- The line above each object names the migrations that wrote it; their comments
-- say why (pg_dump keeps only comments inside function bodies).
"
    )
}

/// The file's header: the generated-file notice, then the function's comment (each
/// overload's, under its signature, when there are several), then what follows it.
fn function_header(name: &str, comments: &[(String, String)]) -> String {
    let mut described = String::new();
    for (signature, text) in comments {
        if comments.len() > 1 {
            described.push_str(&format!("-- tasklane.{signature}:\n"));
        }
        for line in text.lines() {
            let line = line.trim_end();
            described.push_str(if line.is_empty() { "--" } else { "-- " });
            described.push_str(line);
            described.push('\n');
        }
        described.push_str("--\n");
    }
    if comments.is_empty() {
        described
            .push_str("-- (no COMMENT ON FUNCTION: the migration that writes it adds one)\n--\n");
    }
    format!(
        "-- GENERATED from the migrations by tests/schema/: do not edit. To change
-- tasklane.{name}, add a migration that replaces it (and its COMMENT ON FUNCTION,
-- printed below), then run `{REGENERATE}`.
--
{described}-- Above: its COMMENT ON FUNCTION. Below: its current definition (pg_dump
-- --schema-only, normalised); the line above it names the migrations that wrote it.
"
    )
}

/// `(signature, text)` of a `COMMENT ON FUNCTION` entry: pg_dump prints the comment as
/// one standard string literal (`'...'`, quotes doubled) after `IS`.
fn function_comment(entry: &Entry) -> Option<(String, String)> {
    if entry.kind != "COMMENT" {
        return None;
    }
    let signature = entry.name.strip_prefix("FUNCTION ")?;
    let literal = entry.sql.split_once(" IS '")?.1;
    let literal = literal.trim_end().strip_suffix("';")?;
    Some((signature.to_owned(), literal.replace("''", "'")))
}

/// Splits the dump at pg_dump's object headers (`--` / `-- Name: n; Type: t; ...` /
/// `--`) and cleans each object's SQL. The preamble and the trailer are dropped.
fn parse(dump: &str) -> Vec<Entry> {
    let lines: Vec<&str> = dump.lines().collect();
    let mut entries: Vec<Entry> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let header = lines.get(i + 1).and_then(|l| header_fields(l));
        match header {
            Some((name, kind)) if lines[i] == "--" && lines.get(i + 2) == Some(&"--") => {
                entries.push(Entry {
                    name,
                    kind,
                    sql: String::new(),
                });
                i += 3;
            }
            _ if lines[i] == "--"
                && lines.get(i + 1) == Some(&"-- PostgreSQL database dump complete") =>
            {
                break;
            }
            _ => {
                if let Some(entry) = entries.last_mut() {
                    entry.sql.push_str(lines[i]);
                    entry.sql.push('\n');
                }
                i += 1;
            }
        }
    }
    for entry in &mut entries {
        entry.sql = clean(&entry.sql);
    }
    entries
}

/// `(name, type)` of a `-- Name: n; Type: t; Schema: s; Owner: o` line.
fn header_fields(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("-- Name: ")?;
    let (name, rest) = rest.split_once("; Type: ")?;
    let (kind, _) = rest.split_once("; Schema: ")?;
    Some((name.to_owned(), kind.to_owned()))
}

/// An object's SQL without the session settings pg_dump emits between objects (they
/// follow the object's final `;`, so a `SET` inside a function body is kept), the
/// `\restrict` lines of newer pg_dump releases, and surrounding blank lines.
fn clean(sql: &str) -> String {
    let mut lines: Vec<&str> = sql
        .lines()
        .filter(|l| !l.starts_with("\\restrict ") && !l.starts_with("\\unrestrict "))
        .collect();
    while let Some(last) = lines.last() {
        if last.trim().is_empty() || last.starts_with("SET ") {
            lines.pop();
        } else {
            break;
        }
    }
    let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    lines[start..].join("\n")
}

/// Where `entry` goes, given the table groups seen so far (pg_dump emits a table
/// before its constraints, indexes and triggers).
fn place(entry: &Entry, tables: &[(String, Vec<String>)]) -> Place {
    let known = |table: String| {
        if tables.iter().any(|(t, _)| *t == table) {
            Place::Table(table)
        } else {
            Place::Top
        }
    };
    let first_word = || entry.name.split(' ').next().unwrap_or("").to_owned();
    match entry.kind.as_str() {
        "FUNCTION" | "PROCEDURE" | "AGGREGATE" => Place::Function(function_name(&entry.name)),
        "TABLE" | "VIEW" | "MATERIALIZED VIEW" => Place::Table(entry.name.clone()),
        "CONSTRAINT" | "FK CONSTRAINT" | "TRIGGER" | "DEFAULT" | "POLICY" | "RULE" => {
            known(first_word())
        }
        "INDEX" => known(qualified_after(&entry.sql, " ON ").unwrap_or_default()),
        "SEQUENCE" | "SEQUENCE OWNED BY" => known(
            qualified_after(&entry.sql, "ALTER TABLE ")
                .or_else(|| qualified_after(&entry.sql, "OWNED BY "))
                .unwrap_or_default(),
        ),
        // `Name: FUNCTION f(...)`, `TABLE t`, `COLUMN t.c` ...
        "ACL" | "COMMENT" => match entry.name.split_once(' ') {
            Some(("FUNCTION" | "PROCEDURE", signature)) => {
                Place::Function(function_name(signature))
            }
            Some(("TABLE" | "VIEW" | "COLUMN" | "SEQUENCE", object)) => {
                known(object.split('.').next().unwrap_or("").to_owned())
            }
            _ => Place::Top,
        },
        _ => Place::Top,
    }
}

fn function_name(signature: &str) -> String {
    signature.split('(').next().unwrap_or(signature).to_owned()
}

/// The table named `tasklane.<table>` right after the first `marker` in `sql`.
fn qualified_after(sql: &str, marker: &str) -> Option<String> {
    let rest = &sql[sql.find(marker)? + marker.len()..];
    let rest = rest.strip_prefix("ONLY ").unwrap_or(rest);
    let rest = rest.strip_prefix("tasklane.")?;
    let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `-- <object>: <migrations>` for the objects a reader looks up by name; empty for
/// constraints and grants, which read as part of their table or function.
fn annotation(entry: &Entry, sources: &[(String, String)]) -> String {
    let (keyword, name) = match entry.kind.as_str() {
        "FUNCTION" | "PROCEDURE" => ("function", function_name(&entry.name)),
        "TABLE" => ("table", entry.name.clone()),
        "VIEW" | "MATERIALIZED VIEW" => ("view", entry.name.clone()),
        "INDEX" => ("index", entry.name.clone()),
        // `Name: <table> <trigger>`
        "TRIGGER" => (
            "trigger",
            entry.name.split(' ').nth(1).unwrap_or("").to_owned(),
        ),
        _ => return String::new(),
    };
    let paths = written_by(keyword, &name, sources);
    let paths = if paths.is_empty() {
        "no migration names it in a CREATE/ALTER/DROP".to_owned()
    } else {
        paths.join(", ")
    };
    format!("-- {keyword} {name}: {paths}\n")
}

/// The sources holding a `CREATE`, `ALTER` or `DROP` of `<keyword> [tasklane.]<name>`,
/// in the order given. A lookup for the reader, not a parser: it matches the
/// statement's words after comments are removed and whitespace collapsed.
fn written_by(keyword: &str, name: &str, sources: &[(String, String)]) -> Vec<String> {
    let needles = [
        format!("{keyword} tasklane.{name}"),
        format!("{keyword} {name}"),
    ];
    sources
        .iter()
        .filter(|(_, text)| {
            needles.iter().any(|needle| {
                text.match_indices(needle.as_str()).any(|(at, _)| {
                    let next = text[at + needle.len()..].chars().next();
                    !next.is_some_and(is_ident)
                })
            })
        })
        .map(|(path, _)| path.clone())
        .collect()
}

/// `text` lowercased, without `--` and `//` comments, whitespace collapsed, and the
/// words that may stand between a statement's keyword and its object's name removed.
fn searchable(text: &str) -> String {
    let code: Vec<&str> = text
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let collapsed = code
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    [" if not exists", " if exists", " concurrently"]
        .iter()
        .fold(collapsed, |text, filler| text.replace(filler, ""))
}
