//! Compares a documented JSON answer with the live one by shape: the set of member
//! names, recursively; values may differ. A documented `null` stands for a value
//! (`null`, a string, a number, a boolean), never for an object or an array: one the
//! server sends where the documentation shows `null` is a difference, so the
//! documentation cannot hide members behind a `null`. A live `null` matches anything (a
//! field shown with its value may not have it yet in the test's run: a result before
//! the task finished). An object with a `...` member may have more members. Every
//! live item of an array must have the shape of one of the documented items (those
//! other than `...`): a list shows the kinds its items can be, a live list may hold
//! fewer kinds (an event stream before its progress events), never a kind not shown.
//!
//! Also pairs the ids of the documented answer with the live ones, so a later example's
//! request can name the live task by the id the documentation shows.

use std::collections::HashMap;

use serde_json::Value;

use super::answer::ELIDED;

/// Every difference between `documented` and `live`, each naming its path.
pub fn differences(documented: &Value, live: &Value) -> Vec<String> {
    let mut found = Vec::new();
    compare(documented, live, "body", &mut found);
    found
}

fn compare(doc: &Value, live: &Value, path: &str, found: &mut Vec<String>) {
    match (doc, live) {
        (Value::Object(doc), Value::Object(live)) => {
            let open = doc.contains_key(ELIDED);
            for (key, value) in doc.iter().filter(|(k, _)| *k != ELIDED) {
                match live.get(key) {
                    Some(live) => compare(value, live, &format!("{path}.{key}"), found),
                    None => found.push(format!("`{path}.{key}` is documented but not sent")),
                }
            }
            for key in live.keys().filter(|k| !open && !doc.contains_key(*k)) {
                found.push(format!("`{path}.{key}` is sent but not documented"));
            }
        }
        (Value::Array(doc), Value::Array(live)) => {
            let shown: Vec<&Value> = doc.iter().filter(|v| v.as_str() != Some(ELIDED)).collect();
            for (i, item) in live.iter().enumerate() {
                found.extend(closest(&shown, item, &format!("{path}[{i}]")));
            }
        }
        (_, Value::Null) => {}
        _ if kind(doc) != kind(live) => {
            found.push(format!(
                "`{path}` is documented as {}, sent as {}",
                kind(doc),
                kind(live)
            ));
        }
        _ => {}
    }
}

/// No difference when `live` has the shape of one of `shown`; else the differences
/// from the documented item it comes closest to.
fn closest(shown: &[&Value], live: &Value, path: &str) -> Vec<String> {
    let mut best: Option<Vec<String>> = None;
    for doc in shown {
        let mut found = Vec::new();
        compare(doc, live, path, &mut found);
        if found.is_empty() {
            return found;
        }
        if best.as_ref().is_none_or(|b| found.len() < b.len()) {
            best = Some(found);
        }
    }
    best.unwrap_or_default()
}

/// A value's kind as shapes go: `null` is a value like a string or a number.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        _ => "a value",
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
    let doc = serde_json::json!({"a": 1, "b": {"c": 2}, "l": [{"x": 1}, {"y": 2}], "v": null});
    let same = serde_json::json!({"a": 9, "b": {"c": null}, "l": [{"x": 3}], "v": "text"});
    assert_eq!(differences(&doc, &same), Vec::<String>::new());
    let other = serde_json::json!({"b": {"c": 2, "d": 3}, "l": [{"x": 1, "y": 2}, {"z": 1}], "v": {"hidden": 1}, "e": 1});
    assert_eq!(
        differences(&doc, &other),
        [
            "`body.a` is documented but not sent",
            "`body.b.d` is sent but not documented",
            "`body.l[0].y` is sent but not documented",
            "`body.l[1].x` is documented but not sent",
            "`body.l[1].z` is sent but not documented",
            "`body.v` is documented as a value, sent as an object",
            "`body.e` is sent but not documented",
        ]
    );
    let shown = serde_json::json!({"n": {"m": 1}, "l": [1]});
    assert!(differences(&shown, &serde_json::json!({"n": null, "l": null})).is_empty());
    assert_eq!(
        differences(
            &serde_json::json!({"n": null}),
            &serde_json::json!({"n": []})
        ),
        ["`body.n` is documented as a value, sent as an array"]
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
