//! Live output across real replicas: the attempt runs on one replica process, the
//! observers read `GET /v1/tasks/{id}/output` on another (roles `api`, so it cannot run
//! it), the mock streaming its answer in many chunks. The exact text arrives in order,
//! a late observer gets the same text, a kill -9 of the running replica resets the
//! stream to the next attempt's text, and a cancel ends it with `task.cancelled`.

use std::time::Duration;

use serde_json::{json, Value};
use tasklane::mockllm::{MockLlm, Reply};

use crate::common::api::{self, Api, ALL};
use crate::common::serve::{Options, Serve};
use crate::common::{self, eventually};
use crate::openai::{local_type, submit};

/// The bound on any one event of a stream (a busy two-core box).
const EVENT_WITHIN: Duration = Duration::from_secs(30);

/// One event of an output stream.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub kind: String,
    pub data: Value,
}

/// An open output stream, read event by event.
pub(crate) struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    pub async fn open(api: &Api, id: &str) -> Stream {
        let request = api.http.get(format!("{}/v1/tasks/{id}/output", api.base));
        let response = api.execute(request).await;
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        Stream {
            response,
            buffer: String::new(),
        }
    }

    /// The next event; `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut kind = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        kind = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if kind.is_empty() {
                    continue; // a keep-alive comment
                }
                let data = serde_json::from_str(&data).expect("JSON data");
                return Some(Sse { kind, data });
            }
            let chunk = tokio::time::timeout(EVENT_WITHIN, self.response.chunk())
                .await
                .expect("an event in time")
                .expect("the stream reads");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk?));
        }
    }

    /// Every event up to the end of the stream.
    pub async fn rest(&mut self) -> Vec<Sse> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// The text of `attempt` told by `events`, checking that its deltas are contiguous.
pub(crate) fn text_of(events: &[Sse], attempt: i64) -> String {
    let mut text = String::new();
    for e in events.iter().filter(|e| e.kind == "output.delta") {
        if e.data["attempt"] != attempt {
            continue;
        }
        assert_eq!(
            e.data["offset"].as_u64().unwrap(),
            text.chars().count() as u64,
            "deltas in order, without gaps or repeats"
        );
        text.push_str(e.data["text"].as_str().unwrap());
    }
    text
}

/// A long answer with multi-byte characters, as `n` chunks will split it.
fn answer(n: usize) -> String {
    (0..n).map(|i| format!("tök{i:03} ")).collect()
}

/// A type streaming from `mock`'s model `model`, a short lease.
fn types(mock: &MockLlm, model: &str) -> &'static str {
    let toml = local_type(
        "chat",
        "lease_seconds = 2\nmax_attempts = 3\non_restart = \"retry\"",
        mock,
        model,
    );
    Box::leak(toml.into_boxed_str())
}

/// A replica running the attempts (all roles), and an observer replica with role `api`.
async fn replicas(db: &common::TestDb, types: &'static str) -> (Serve, Serve, Api, Api) {
    let worker = Serve::start(
        &db.url,
        Options {
            task_types: Some(types),
            name: Some("runner".into()),
            ..Default::default()
        },
    )
    .await;
    let observer = Serve::start(
        &db.url,
        Options {
            roles: Some("api"),
            task_types: Some(types),
            name: Some("observer".into()),
            ..Default::default()
        },
    )
    .await;
    let token = api::token(&db.url, "ai", None, ALL).await;
    let (wa, oa) = (worker.api(&token), observer.api(&token));
    (worker, observer, wa, oa)
}

pub(crate) async fn first_delta(stream: &mut Stream) -> Sse {
    loop {
        let event = stream.next().await.expect("a delta before the end");
        if event.kind == "output.delta" {
            return event;
        }
        assert!(event.kind.starts_with("output."), "{event:?}");
    }
}

#[tokio::test]
async fn observers_on_another_replica_get_the_exact_text_in_order() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let text = answer(200);
    mock.set_default(
        "sm",
        Reply::completion(&text, 10, 200).chunks(200, Duration::from_millis(15)),
    );
    let (_worker, _observer, _wa, oa) = replicas(&db, types(&mock, "sm")).await;
    let id = submit(&oa, "chat", "k1", json!({})).await;
    let mut first = Stream::open(&oa, &id).await;
    let head = first_delta(&mut first).await;
    // The second observer joins mid-way: its first delta is the text so far.
    let mut late = Stream::open(&oa, &id).await;
    let late_head = first_delta(&mut late).await;
    let (mut a, mut b) = (vec![head], vec![late_head]);
    a.extend(first.rest().await);
    b.extend(late.rest().await);
    for events in [&a, &b] {
        assert_eq!(text_of(events, 1), text);
        assert!(events.iter().all(|e| e.kind != "output.reset"));
        let last = events.last().unwrap();
        assert_eq!(last.kind, "task.succeeded", "{last:?}");
        assert_eq!(last.data["result"]["message"]["content"], text.as_str());
        assert_eq!(last.data["id"], id.as_str());
    }
    assert!(
        a.iter().filter(|e| e.kind == "output.delta").count() > 1,
        "the text came in several deltas"
    );
    // Streamed with its usage asked for, and recorded.
    let request = mock.last_request("sm").unwrap();
    assert_eq!(request["stream"], true);
    assert_eq!(request["stream_options"]["include_usage"], true);
    assert_eq!(b.last().unwrap().data["usage"]["output_tokens"], 200);
    // Finished: the terminal event at once, and nothing left stored.
    let done = Stream::open(&oa, &id).await.rest().await;
    assert_eq!(
        done.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["task.succeeded"]
    );
    let c = db.client().await;
    let stored: i64 = c
        .query_one("SELECT count(*) FROM tasklane.task_output", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 0);
    // Another app's token: 404 as for the task.
    let other = api::token(&db.url, "other", None, ALL).await;
    let answer = oa
        .with_token(&other)
        .get(&format!("/v1/tasks/{id}/output"))
        .await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn a_killed_replica_resets_the_stream_to_the_next_attempt() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let second = answer(20);
    // The first attempt streams slowly (it is killed mid-way), the next one quickly.
    mock.script(
        "km",
        [Reply::completion(&answer(200), 10, 200).chunks(200, Duration::from_millis(100))],
    );
    mock.set_default(
        "km",
        Reply::completion(&second, 10, 20).chunks(20, Duration::from_millis(10)),
    );
    let types = types(&mock, "km");
    let (mut worker, _observer, _wa, oa) = replicas(&db, types).await;
    let id = submit(&oa, "chat", "k2", json!({})).await;
    let mut stream = Stream::open(&oa, &id).await;
    let head = first_delta(&mut stream).await;
    assert_eq!(head.data["attempt"], 1);
    worker.kill9();
    // Another worker replica runs the next attempt once the lease has expired.
    let _next = Serve::workers(&db.url, "next", types, &[]);
    let events = stream.rest().await;
    let reset = events
        .iter()
        .position(|e| e.kind == "output.reset")
        .expect("a reset");
    assert_eq!(events[reset].data["attempt"], 2);
    assert_eq!(text_of(&events[reset..], 2), second);
    let last = events.last().unwrap();
    assert_eq!(last.kind, "task.succeeded", "{last:?}");
    assert_eq!(last.data["attempt"], 2);
}

#[tokio::test]
async fn a_cancel_ends_the_stream_with_task_cancelled() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    mock.set_default(
        "cm",
        Reply::completion(&answer(200), 10, 200).chunks(200, Duration::from_millis(100)),
    );
    let (_worker, _observer, _wa, oa) = replicas(&db, types(&mock, "cm")).await;
    let id = submit(&oa, "chat", "k3", json!({})).await;
    let mut stream = Stream::open(&oa, &id).await;
    first_delta(&mut stream).await;
    let cancel = oa.post(&format!("/v1/tasks/{id}/cancel"), &json!({})).await;
    assert_eq!(cancel.status, 200, "{:?}", cancel.body);
    let events = stream.rest().await;
    let last = events.last().expect("an event");
    assert_eq!(last.kind, "task.cancelled", "{last:?}");
    assert_eq!(last.data["state"], "cancelled");
    eventually(
        Duration::from_secs(20),
        "the mock to see the hang-up",
        || async {
            if mock.disconnects() >= 1 {
                Ok(())
            } else {
                Err(mock.disconnects())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_provider_that_does_not_stream_gives_its_text_in_one_piece() {
    let db = common::test_db().await;
    let mock = MockLlm::start().await.unwrap();
    let text = answer(50);
    mock.set_default(
        "pm",
        Reply::completion(&text, 10, 50)
            .plain()
            .after(Duration::from_millis(1500)),
    );
    let (_worker, _observer, _wa, oa) = replicas(&db, types(&mock, "pm")).await;
    let id = submit(&oa, "chat", "k4", json!({})).await;
    let events = Stream::open(&oa, &id).await.rest().await;
    let deltas: Vec<_> = events.iter().filter(|e| e.kind == "output.delta").collect();
    assert_eq!(deltas.len(), 1, "{events:?}");
    assert_eq!(text_of(&events, 1), text);
    let last = events.last().unwrap();
    assert_eq!(last.kind, "task.succeeded", "{last:?}");
    assert_eq!(last.data["result"]["message"]["content"], text.as_str());
    assert_eq!(last.data["usage"]["output_tokens"], 50);
}
