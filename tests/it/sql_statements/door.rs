//! The store runs statements given as text only through its door
//! (`tasklane::store::Statements`: unnamed statements, which work behind a pooler in
//! transaction mode). tokio-postgres's own `query`/`execute` on a text would prepare a
//! named statement per call, which such a pooler cannot carry; a call on a statement
//! prepared once per connection (`&statement`) is kept for direct connections only, as
//! `store::cached` decides.

use std::path::Path;

const DRIVER_METHODS: [&str; 6] = [
    ".query(",
    ".query_one(",
    ".query_opt(",
    ".execute(",
    ".prepare(",
    ".query_raw(",
];

/// The door itself, and the per-connection cache that falls back to it.
const DOOR: [&str; 2] = ["statement.rs", "cached.rs"];

#[test]
fn the_store_runs_text_statements_only_through_its_door() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() > 20, "found only {} store files", files.len());
    let mut found = Vec::new();
    for path in files {
        if DOOR.iter().any(|name| path.ends_with(name)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for method in DRIVER_METHODS {
            for (at, _) in text.match_indices(method) {
                let argument = text[at + method.len()..].trim_start();
                if !argument.starts_with("&statement") {
                    let line = text[..at].lines().count();
                    found.push(format!("{}:{line}: {method}", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "driver calls on text: {found:#?}");
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
