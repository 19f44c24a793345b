//! Plain aligned tables for people: a header row and one row per item.

use serde_json::Value;

use super::output;

/// Prints `rows` under `header`, each column as wide as its widest cell.
pub fn print(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        output::line(padded.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_uppercase()).collect());
    for row in rows {
        line(row.clone());
    }
}

/// A JSON value as a table cell: strings bare, null as `-`, anything else as JSON.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One task, a field a line (its links left out): how `tasks get` and `tasks submit`
/// show a task.
pub fn print_task(task: &Value) {
    for (key, value) in task.as_object().into_iter().flatten() {
        if key != "links" {
            output::line(format_args!("{key:<14} {}", cell(value)));
        }
    }
}
