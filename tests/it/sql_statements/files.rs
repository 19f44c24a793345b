//! The statements under `sql/`, read from disk so a new file is checked without anyone
//! listing it, plus the claim variants `build.rs` renders from `sql/claim.sql`.

use std::path::{Path, PathBuf};

/// One statement file: its path under `sql/` (`api/delete_tasks.sql`) and its text.
pub struct SqlFile {
    pub name: String,
    pub text: String,
}

/// Files under `sql/` that are not statements of their own, with the reason. Every other
/// file is checked.
pub const NOT_STATEMENTS: &[(&str, &str)] = &[
    (
        "claim.sql",
        "the claim template: its four rendered variants are checked instead",
    ),
    (
        "schema.sql",
        "a dump of the migrated schema (DDL), compared with the migrations by its own test",
    ),
];

/// Every statement: the files under `sql/` (recursively) but [`NOT_STATEMENTS`], and the
/// rendered claim variants under their file names.
pub fn all() -> Vec<SqlFile> {
    let root = root();
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    let mut files: Vec<SqlFile> = paths
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            SqlFile { name, text }
        })
        .filter(|f| !NOT_STATEMENTS.iter().any(|(name, _)| *name == f.name))
        .collect();
    files.extend(
        tasklane::store::claim::VARIANTS
            .iter()
            .map(|(name, text)| SqlFile {
                name: (*name).to_owned(),
                text: (*text).to_owned(),
            }),
    );
    assert!(files.len() > 50, "found only {} statements", files.len());
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sql")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "sql") {
            out.push(path);
        }
    }
}
