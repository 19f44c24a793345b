//! The repository must stand alone: no comment or doc cites a document or a tracker a
//! clone does not have. A comment says the thing itself instead of pointing elsewhere.
//!
//! Skipped: `sql/api/`, whose text migration V4 installs and refinery checksums, so it
//! is frozen like `migrations/`.
//! The patterns are built from pieces so that this file does not match itself.

use std::path::Path;

const DIRS: &str = "src sql tests benches docs helm scripts ui demo clients";
const FILES: &str = "README.md Dockerfile build.rs Cargo.toml .ci/run";
const SKIP_DIRS: &str = "node_modules target .venv build dist __pycache__";
const SKIP_PATHS: &str = "sql/api";
const CITED: [&str; 6] = [
    concat!("DESIGN", ".md"),
    concat!("STYLE", ".md"),
    concat!("API", ".md"),
    concat!("..", "/shared"),
    concat!("DESIGN", " §"),
    concat!("STYLE", " §"),
];

/// The word "issue" (or "issues"), then optional spaces or `#`, then a digit.
fn cites_issue(line: &str) -> bool {
    let line = line.to_ascii_lowercase();
    let in_word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices("issue").any(|(at, word)| {
        let rest = &line[at + word.len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let rest = rest.trim_start_matches([' ', '#']);
        !line[..at].ends_with(in_word) && rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn walk(root: &Path, path: &Path, found: &mut Vec<String>) {
    let relative = path.strip_prefix(root).unwrap().to_string_lossy();
    if SKIP_PATHS.split(' ').any(|skip| skip == relative) {
        return;
    }
    if path.is_dir() {
        let name = path.file_name().unwrap().to_string_lossy();
        if !SKIP_DIRS.split(' ').any(|skip| skip == name) {
            for entry in std::fs::read_dir(path).unwrap() {
                walk(root, &entry.unwrap().path(), found);
            }
        }
        return;
    }
    // Not UTF-8, or holding a NUL byte: a binary file.
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    if text.contains('\0') {
        return;
    }
    for (n, line) in text.lines().enumerate() {
        if CITED.iter().any(|cited| line.contains(cited)) || cites_issue(line) {
            found.push(format!("{relative}:{}: {}", n + 1, line.trim()));
        }
    }
}

#[test]
fn no_comment_or_doc_cites_what_a_clone_does_not_have() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for name in DIRS.split(' ').chain(FILES.split(' ')) {
        let path = root.join(name);
        assert!(path.exists(), "{name} is gone: update the lists");
        walk(root, &path, &mut found);
    }
    assert!(
        found.is_empty(),
        "say the thing itself instead of citing a document or a tracker:\n{}",
        found.join("\n")
    );
}

/// A migration number as a word: `V` then digits (`V27`, `V3__admission`); a path's
/// segment (`IpAddr::V4`) is not one.
fn names_migration(comment: &str) -> bool {
    let bytes = comment.as_bytes();
    (0..bytes.len()).any(|at| {
        let starts_word =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || b"_:".contains(&bytes[at - 1]));
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let after = bytes.get(at + 1 + digits);
        bytes[at] == b'V'
            && starts_word
            && digits > 0
            && after.is_none_or(|b| !b.is_ascii_alphanumeric() || *b == b'_')
    })
}

fn rust_files(path: &Path, found: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), found);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        found.push(path.to_path_buf());
    }
}

/// Comments in the code say why it is as it is now; which migration made a change is
/// history, kept in the migrations and the commit log.
#[test]
fn code_comments_name_no_migration() {
    assert!(names_migration("written since V27, now V31__x"));
    assert!(!names_migration("IpAddr::V4 or a V-shaped curve"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let comment = line.trim_start();
            if comment.starts_with("//") && names_migration(comment) {
                let relative = file.strip_prefix(root).unwrap().display();
                found.push(format!("{relative}:{}: {}", n + 1, comment));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say why the code is so, not which migration changed it:\n{}",
        found.join("\n")
    );
}
