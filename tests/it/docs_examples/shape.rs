//! Compares a documented JSON answer with the live one by shape: the set of member
//! names, recursively; values may differ. `null` on either side matches anything (a
//! field shown with a value may be null in a given run, and the reverse). An object with
//! a `...` member may have more members. An array's documented items are merged into one
//! shape and every live item must fit in it: a list shows what its items can hold, a
//! live list may hold fewer kinds (an event stream before its progress events).
//!
//! Also pairs the ids of the documented answer with the live ones, so a later example's
//! request can name the live task by the id the documentation shows.

use std::collections::HashMap;

use serde_json::Value;

use super::answer::ELIDED;

/// Every difference between `documented` and `live`, each naming its path.
pub fn differences(documented: &Value, live: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(documented, live, "body", true, &mut found);
    found
}

fn compare(doc: &Value, live: &Value, path: &str, all_required: bool, found: &mut Vec<String>) {
    match (doc, live) {
        (Value::Null, _) | (_, Value::Null) => {}
        (Value::Object(doc), Value::Object(live)) => {
            let open = doc.contains_key(ELIDED);
            for (key, value) in doc.iter().filter(|(k, _)| *k != ELIDED) {
                match live.get(key) {
                    Some(live) => {
                        compare(value, live, &format!("{path}.{key}"), all_required, found)
                    }
                    None if all_required => {
                        found.push(format!("`{path}.{key}` is documented but not sent"))
                    }
                    None => {}
                }
            }
            for key in live.keys().filter(|k| !open && !doc.contains_key(*k)) {
                found.push(format!("`{path}.{key}` is sent but not documented"));
            }
        }
        (Value::Array(doc), Value::Array(live)) => {
            let shown = doc.iter().filter(|v| v.as_str() != Some(ELIDED));
            let Some(merged) = shown.cloned().reduce(merge) else {
                return;
            };
            for item in live {
                compare(&merged, item, &format!("{path}[]"), false, found);
            }
        }
        (Value::Object(_), other) | (Value::Array(_), other) => {
            found.push(format!(
                "`{path}` is documented as {}, sent as {other}",
                kind(doc)
            ));
        }
        (_, Value::Object(_) | Value::Array(_)) => {
            found.push(format!(
                "`{path}` is documented as {doc}, sent as {}",
                kind(live)
            ));
        }
        _ => {}
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        _ => "a value",
    }
}

/// One shape holding what `a` and `b` hold.
fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (key, value) in b {
                let merged = match a.remove(&key) {
                    Some(old) => merge(old, value),
                    None => value,
                };
                a.insert(key, merged);
            }
            Value::Object(a)
        }
        (Value::Array(mut a), Value::Array(b)) => {
            a.extend(b);
            Value::Array(a)
        }
        (Value::Null, b) => b,
        (a, _) => a,
    }
}

/// Documented ids and the live ids found at the same places.
#[derive(Default)]
pub struct Ids(HashMap<String, String>);

impl Ids {
    /// Pairs the ids of `doc` with those of `live` at the same places; an id documented
    /// earlier for another live id is a difference (the same task twice in the
    /// documentation, two tasks on the server).
    pub fn learn(&mut self, doc: &Value, live: &Value, found: &mut Vec<String>) {
        match (doc, live) {
            (Value::String(doc), Value::String(live)) => self.pair(doc, live, found),
            (Value::Object(doc), Value::Object(live)) => {
                for (key, value) in doc {
                    if let Some(live) = live.get(key) {
                        self.learn(value, live, found);
                    }
                }
            }
            (Value::Array(doc), Value::Array(live)) => {
                let shown = doc.iter().filter(|v| v.as_str() != Some(ELIDED));
                for (doc, live) in shown.zip(live) {
                    self.learn(doc, live, found);
                }
            }
            _ => {}
        }
    }

    /// Pairs the ids inside two texts (a header value, a link), in order.
    pub fn pair(&mut self, doc: &str, live: &str, found: &mut Vec<String>) {
        for (doc, live) in uuids(doc).into_iter().zip(uuids(live)) {
            match self.0.get(&doc) {
                Some(known) if *known != live => found.push(format!(
                    "the documentation shows {doc} again, but the server answered {live}, not {known}"
                )),
                _ => {
                    self.0.insert(doc, live);
                }
            }
        }
    }

    /// `text` with every documented id replaced by its live one.
    pub fn substitute(&self, text: &str) -> String {
        self.0
            .iter()
            .fold(text.to_owned(), |text, (doc, live)| text.replace(doc, live))
    }
}

/// The hyphenated UUIDs in `text`, in order.
fn uuids(text: &str) -> Vec<String> {
    (0..text.len())
        .filter_map(|at| text.get(at..at + 36))
        .filter(|candidate| {
            candidate.as_bytes()[8] == b'-' && uuid::Uuid::try_parse(candidate).is_ok()
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn shapes_compare_names_not_values_and_ids_pair_up() {
    let doc = serde_json::json!({"a": 1, "b": {"c": 2}, "l": [{"x": 1}, {"y": 2}], "n": {"m": 1}});
    let same = serde_json::json!({"a": 9, "b": {"c": null}, "l": [{"x": 3}], "n": null});
    assert_eq!(differences(&doc, &same), Vec::<String>::new());
    let other = serde_json::json!({"b": {"c": 2, "d": 3}, "l": [{"z": 1}], "n": {"m": 1}, "e": 1});
    assert_eq!(
        differences(&doc, &other),
        [
            "`body.a` is documented but not sent",
            "`body.b.d` is sent but not documented",
            "`body.l[].z` is sent but not documented",
            "`body.e` is sent but not documented",
        ]
    );
    let open = serde_json::json!({"a": 1, "...": null});
    assert!(differences(&open, &serde_json::json!({"a": 1, "z": 2})).is_empty());

    let mut ids = Ids::default();
    let mut found = Vec::new();
    let d = "01a22f72-7382-7081-b5de-a10d9986c3a4";
    let l = "0193a5d0-0000-7000-8000-000000000001";
    ids.learn(
        &serde_json::json!({"id": d}),
        &serde_json::json!({"id": l}),
        &mut found,
    );
    assert_eq!(
        ids.substitute(&format!("/v1/tasks/{d}/cancel")),
        format!("/v1/tasks/{l}/cancel")
    );
    ids.pair(
        &format!("/v1/tasks/{d}"),
        "/v1/tasks/0193a5d0-0000-7000-8000-000000000002",
        &mut found,
    );
    assert_eq!(found.len(), 1, "{found:?}");
}
