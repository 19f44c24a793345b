//! The steady submits of the failover test: one client submitting short `sleep` tasks
//! round-robin over the replicas, as an application would. A submit that fails or times
//! out is retried with the same effect key (on the other replica) until acknowledged:
//! if the first try committed after all, the retry joins that task.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::api::Api;

/// How long one submit may take before the client gives up and retries it.
const SUBMIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A submit the API acknowledged: the task's id, when, and whether it joined a task
/// (200: an earlier try of the same key had committed after all) or made one (202).
#[derive(Clone)]
pub struct Ack {
    pub id: String,
    pub at: Instant,
    pub joined: bool,
}

#[derive(Default)]
struct Tally {
    acks: Vec<Ack>,
    /// When each failed or timed-out try ended.
    failed: Vec<Instant>,
}

/// The running client; stopped by [`Flow::stop`].
pub struct Flow {
    tally: Arc<Mutex<Tally>>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Flow {
    /// Starts submitting through `apis`.
    pub fn start(apis: Vec<Api>) -> Flow {
        let (tally, stop) = (Arc::<Mutex<Tally>>::default(), CancellationToken::new());
        let task = tokio::spawn(submit(apis, tally.clone(), stop.clone()));
        Flow { tally, stop, task }
    }

    /// Every acknowledged submit so far.
    pub fn acks(&self) -> Vec<Ack> {
        self.tally.lock().unwrap().acks.clone()
    }

    /// The ids of the submits acknowledged after `at`, in order.
    pub fn acked_after(&self, at: Instant) -> Vec<String> {
        let tally = self.tally.lock().unwrap();
        let after = tally.acks.iter().filter(|a| a.at > at);
        after.map(|a| a.id.clone()).collect()
    }

    /// How many tries failed after `at`.
    pub fn failed_after(&self, at: Instant) -> usize {
        let tally = self.tally.lock().unwrap();
        tally.failed.iter().filter(|t| **t > at).count()
    }

    /// Stops submitting (a try in flight is dropped unacknowledged); every acknowledged
    /// submit.
    pub async fn stop(self) -> Vec<Ack> {
        self.stop.cancel();
        self.task.await.expect("the submit flow");
        std::mem::take(&mut self.tally.lock().unwrap().acks)
    }
}

/// Submits a `sleep` of 300 ms in two steps about every 20 ms, each key until
/// acknowledged.
async fn submit(apis: Vec<Api>, tally: Arc<Mutex<Tally>>, stop: CancellationToken) {
    let mut turn = 0usize;
    for n in 0.. {
        let key = format!("flow-{n}");
        loop {
            turn += 1;
            let api = &apis[turn % apis.len()];
            let input = json!({"input": {"ms": 300, "steps": 2}});
            let submitted =
                tokio::time::timeout(SUBMIT_TIMEOUT, api.submit("sleep", "flow", &key, input));
            let answer = tokio::select! {
                answer = submitted => answer,
                _ = stop.cancelled() => return,
            };
            match answer {
                Ok(answer) if matches!(answer.status, 200 | 202) => {
                    let id = answer.body["id"].as_str().expect("an id").to_owned();
                    tally.lock().unwrap().acks.push(Ack {
                        id,
                        at: Instant::now(),
                        joined: answer.status == 200,
                    });
                    break;
                }
                // A refusal would be refused again: no retry can help.
                Ok(answer) if answer.status < 500 => {
                    panic!("submit {key} refused: {} {}", answer.status, answer.body)
                }
                _ => tally.lock().unwrap().failed.push(Instant::now()),
            }
            // Pacing, not synchronisation: the database may be away for a while.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = stop.cancelled() => return,
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = stop.cancelled() => return,
        }
    }
}
