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

/// The task view's fields in the order the API defines them (its JSON object reaches
/// the command line with its keys sorted): the identity first, then the state, times
/// and outcome.
const TASK_FIELDS: [&str; 21] = [
    "id",
    "task_type",
    "scope_id",
    "source_id",
    "usage_subject",
    "state",
    "priority",
    "attempt",
    "max_attempts",
    "progress",
    "phase",
    "created_at",
    "started_at",
    "finished_at",
    "released_at",
    "deadline_at",
    "result",
    "error",
    "usage",
    "provenance",
    "links",
];

/// One task, a field a line (its links left out): how `tasks get` and `tasks submit`
/// show a task. Fields in the view's order; any field this binary does not know (a
/// newer server's) after them.
pub fn print_task(task: &Value) {
    for (key, value) in task_fields(task) {
        if key != "links" {
            output::line(format_args!("{key:<14} {}", cell(value)));
        }
    }
}

fn task_fields(task: &Value) -> Vec<(&str, &Value)> {
    let Some(fields) = task.as_object() else {
        return Vec::new();
    };
    let known = TASK_FIELDS
        .iter()
        .filter_map(|key| fields.get(*key).map(|value| (*key, value)));
    let other = fields
        .iter()
        .filter(|(key, _)| !TASK_FIELDS.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), value));
    known.chain(other).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_printed_in_the_views_order_then_unknown_fields() {
        let task = serde_json::json!({"attempt": 1, "zeta": 0, "state": "queued", "id": "x"});
        let keys: Vec<&str> = task_fields(&task).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["id", "state", "attempt", "zeta"]);
    }
}
