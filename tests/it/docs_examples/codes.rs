//! The error-code tables of `docs/api.md` list exactly the codes the server can send: a
//! task's `error.code` (`tasklane::task::codes::ALL`) and an error answer's `code`
//! (`tasklane::http::error::CODES`).

use std::collections::BTreeSet;

/// The backticked codes in the column `column` of the first table under `heading`.
fn table_codes(text: &str, heading: &str, column: usize) -> BTreeSet<String> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("docs/api.md has no {heading:?}"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .filter_map(|row| row.split('|').nth(column + 1).map(str::to_owned))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn differences(documented: &BTreeSet<String>, code: &[&str]) -> String {
    let code: BTreeSet<String> = code.iter().map(|c| c.to_string()).collect();
    format!(
        "undocumented: {:?}; documented but never sent: {:?}",
        code.difference(documented).collect::<Vec<_>>(),
        documented.difference(&code).collect::<Vec<_>>()
    )
}

#[test]
fn the_error_code_tables_list_every_code_the_server_sends() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let task = table_codes(&text, "### Task error codes", 0);
    let expected: BTreeSet<String> = tasklane::task::codes::ALL
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert!(
        task == expected,
        "docs/api.md, Task error codes: {}",
        differences(&task, &tasklane::task::codes::ALL)
    );
    let http = table_codes(&text, "## Errors", 1);
    let expected: BTreeSet<String> = tasklane::http::error::CODES
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert!(
        http == expected,
        "docs/api.md, Errors: {}",
        differences(&http, &tasklane::http::error::CODES)
    );
}
