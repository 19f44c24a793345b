//! The two tables of `tasklane serve`'s settings list exactly what the clap definitions
//! (`tasklane::config::ServeConfig`) take, with their defaults: the variables table of
//! `src/config.rs`'s module comment, and the flag table of `docs/api.md` ("Command line
//! and configuration").

use std::collections::BTreeMap;

use clap::Args as _;

/// One setting as clap defines it: its variable and its default (empty when none).
#[derive(Debug, PartialEq)]
struct Setting {
    variable: String,
    default: String,
}

/// Every flag of `serve` by its long name.
fn defined() -> BTreeMap<String, Setting> {
    let command = tasklane::config::ServeConfig::augment_args(clap::Command::new("serve"));
    command
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let variable = arg.get_env()?.to_string_lossy().into_owned();
            let default = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(",");
            Some((format!("--{long}"), Setting { variable, default }))
        })
        .collect()
}

/// The cells of each row of the first table after `heading` in `text` (header and
/// separator left out), each cell trimmed; `prefix` is what starts every table line.
fn rows(text: &str, heading: &str, prefix: &str) -> Vec<Vec<String>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    text[start..]
        .lines()
        .map(|line| line.strip_prefix(prefix).unwrap_or(line).trim_start())
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| {
            row.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The first backticked word of a cell, or the cell.
fn first_code(cell: &str) -> String {
    cell.split('`').nth(1).unwrap_or(cell).to_owned()
}

/// A documented default agrees with clap's when clap has none (the default is worked
/// out at start), or the cell's first word is it (backticks aside): `16`, `` `local` ``.
fn agrees(documented: &str, defined: &str) -> bool {
    let cell = documented.replace('`', "");
    defined.is_empty() || cell.split_whitespace().next() == Some(defined)
}

#[test]
fn the_config_modules_table_lists_every_variable_with_its_default() {
    let source = include_str!("../../../src/config.rs");
    let mut problems = Vec::new();
    let table: BTreeMap<String, String> = rows(source, "| variable | default |", "//!")
        .into_iter()
        .map(|cells| (first_code(&cells[0]), cells[1].clone()))
        .collect();
    let defined = defined();
    for setting in defined.values() {
        match table.get(&setting.variable) {
            None => problems.push(format!("{} is not in the table", setting.variable)),
            Some(default) if !agrees(default, &setting.default) => problems.push(format!(
                "{}: the table says {default}, clap {:?}",
                setting.variable, setting.default
            )),
            Some(_) => {}
        }
    }
    for variable in table.keys() {
        if !defined.values().any(|s| &s.variable == variable) {
            problems.push(format!("{variable} is in the table but not defined"));
        }
    }
    assert!(problems.is_empty(), "src/config.rs: {problems:#?}");
}

#[test]
fn the_flag_table_of_the_reference_lists_every_flag_with_its_variable_and_default() {
    let text = include_str!("../../../docs/api.md");
    let heading = "| flag | variable | default | meaning |";
    let mut problems = Vec::new();
    let table: BTreeMap<String, (String, String)> = rows(text, heading, "")
        .into_iter()
        .map(|cells| {
            let setting = (first_code(&cells[1]), cells[2].clone());
            (first_code(&cells[0]), setting)
        })
        .collect();
    let defined = defined();
    for (flag, setting) in &defined {
        match table.get(flag) {
            None => problems.push(format!("{flag} is not in the table")),
            Some((variable, _)) if *variable != setting.variable => problems.push(format!(
                "{flag}: the table says {variable}, clap {}",
                setting.variable
            )),
            Some((_, default)) if !agrees(default, &setting.default) => problems.push(format!(
                "{flag}: the table says {default}, clap {:?}",
                setting.default
            )),
            Some(_) => {}
        }
    }
    for flag in table.keys().filter(|flag| !defined.contains_key(*flag)) {
        problems.push(format!("{flag} is in the table but not a flag of serve"));
    }
    assert!(problems.is_empty(), "docs/api.md: {problems:#?}");
}

#[test]
fn a_table_row_is_read_cell_by_cell() {
    let text = "## x\n\n| a | b |\n|---|---|\n| `--x` | `X`, or `Y` |\n\nafter";
    assert_eq!(rows(text, "## x", ""), [["`--x`", "`X`, or `Y`"]]);
    assert_eq!(first_code("`X`, or `Y`"), "X");
    assert!(agrees("`local`", "local") && agrees("2 (or less)", "") && !agrees("16", "1"));
}
