//! The documentation cannot drift from the server: every `$ curl` example of `docs/*.md`
//! is run, in document order, against a live `tasklane serve` (one per document, on its
//! own database), with tokens made here for the variables the documentation uses, and
//! its answer compared with the one documented: the status, the headers shown, and the
//! JSON fields (names, recursively, values aside; see `shape`). Ids an answer shows are
//! paired with the live ones, so a later example naming a task reaches the live task. The
//! error-code tables of `docs/api.md` are compared with the codes the code can send, and
//! the tables of `serve`'s settings (`docs/api.md`, `src/config.rs`) with its flags.
//!
//! A failure names the document, the example (line and heading) and each difference.

mod answer;
mod codes;
mod curl;
mod flags;
mod markdown;
mod shape;

use std::collections::HashMap;
use std::path::Path;

use crate::common;
use common::api::token;
use common::serve::{Options, Serve};

/// The variables of `docs/api.md`'s "Trying it" as tokens: app, permissions, scope.
const TOKENS: &[(&str, &str, &[&str], Option<&str>)] = &[
    (
        "APP",
        "mail",
        &["submit", "read", "cancel", "release", "delete"],
        None,
    ),
    (
        "TOKEN",
        "mail",
        &["submit", "read", "cancel", "release", "delete"],
        None,
    ),
    ("SCOPE", "mail", &["submit", "read"], Some("mailbox-7")),
    ("WORK", "mail", &["work"], None),
    ("HOOKS", "mail", &["webhooks"], None),
    (
        "ADMIN",
        "dev",
        &[
            "submit", "read", "cancel", "release", "delete", "work", "admin", "webhooks",
        ],
        None,
    ),
];

#[tokio::test]
async fn every_curl_example_of_the_docs_answers_as_documented() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut paths: Vec<_> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    let mut run = 0;
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let (examples, skipped) = markdown::examples(&text);
        let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
        for skip in &skipped {
            assert!(
                !skip.why.is_empty(),
                "{name}:{}: a `not run` without a reason",
                skip.line
            );
        }
        if examples.is_empty() {
            continue;
        }
        run += examples.len();
        failures.extend(run_document(&name, &examples).await);
    }
    assert!(run > 0, "no example found under docs/");
    assert!(
        failures.is_empty(),
        "{} documented examples disagree with the server:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Runs one document's examples on a replica of its own; a message per failing example.
async fn run_document(name: &str, examples: &[markdown::Example]) -> Vec<String> {
    let db = common::test_db().await;
    let serve = Serve::start(&db.url, Options::default()).await;
    let mut vars: HashMap<&str, String> = HashMap::from([("B", serve.base.clone())]);
    for (var, app, perms, scope) in TOKENS {
        vars.insert(var, token(&db.url, app, *scope, perms).await);
    }
    let http = reqwest::Client::new();
    let mut ids = shape::Ids::default();
    let mut failures = Vec::new();
    for example in examples {
        let found = run_example(&http, &vars, &mut ids, example).await;
        if !found.is_empty() {
            failures.push(format!(
                "{name}:{} ({}): $ {}\n  - {}",
                example.line,
                example.heading,
                example.command.lines().next().unwrap_or_default(),
                found.join("\n  - ")
            ));
        }
    }
    failures
}

/// Runs one example; its differences from the documented answer.
async fn run_example(
    http: &reqwest::Client,
    vars: &HashMap<&str, String>,
    ids: &mut shape::Ids,
    example: &markdown::Example,
) -> Vec<String> {
    let request = match curl::parse(&ids.substitute(&example.command), vars) {
        Ok(request) => request,
        Err(error) => return vec![format!("the command cannot be read: {error}")],
    };
    let documented = match answer::parse(&example.answer, request.shows_status) {
        Ok(answer) => answer,
        Err(error) => return vec![format!("the answer cannot be read: {error}")],
    };
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap();
    let mut builder = http.request(method, &request.url);
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    if let Some(body) = request.body {
        builder = builder.body(body);
    }
    let response = builder.send().await.expect("send the example's request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let is_stream = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    // A stream ends after the task's terminal event, which the example's task reaches.
    let text = response.text().await.expect("read the example's answer");
    let live = match is_stream {
        true => answer::events(&text).ok(),
        false => serde_json::from_str(&text).ok(),
    };
    let mut found = Vec::new();
    if status != documented.status {
        found.push(format!("status {status}, documented {}", documented.status));
    }
    for header in &documented.headers {
        match headers.get(header.as_str()) {
            None => found.push(format!("header `{header}` is documented but not sent")),
            Some(value) => {
                let shown = shown_header(&example.answer, header);
                ids.pair(&shown, value.to_str().unwrap_or_default(), &mut found);
            }
        }
    }
    match (&documented.body, &live) {
        (Some(doc), Some(live)) => {
            found.extend(shape::differences(doc, live));
            ids.learn(doc, live, &mut found);
        }
        (Some(_), None) => found.push(format!("a body is documented, the server sent {text:?}")),
        (None, Some(_)) if !text.trim().is_empty() => {
            found.push(format!("no body is documented, the server sent {text}"))
        }
        _ => {}
    }
    found
}

/// The value the documented answer shows for `header`.
fn shown_header(answer: &str, header: &str) -> String {
    answer
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case(header)
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default()
}
