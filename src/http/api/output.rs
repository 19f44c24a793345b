//! A task's live output as Server-Sent Events: the text of its running model call as
//! it arrives (`output.delta`), `output.reset` when another attempt starts, and the
//! task's terminal event (the task view) to end. The deltas come from the replica's
//! shared listener whichever replica runs the attempt; the stored text so far covers a
//! late start and anything missed. Nothing of it is durable: a stream that reconnects
//! starts again from the current attempt's text so far.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::TaskView;
use crate::http::error::{ApiError, Problem};
use crate::http::extract::task_id;
use crate::http::output_watch::{Deltas, Next};
use crate::http::watch::Waiter;
use crate::http::AppState;
use crate::service::{Owner, ServiceError, TaskRecord};
use crate::task::live::{Follower, Seen};

/// How long a stream that holds a delta past its text waits before reading the stored
/// text again (it is stored every 250 ms while the text grows).
const GAP_REREAD: Duration = Duration::from_millis(300);

/// `data` of an `output.delta` event.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutputDelta {
    /// The attempt whose text this is.
    pub attempt: i32,
    /// Characters (Unicode scalar values) of the attempt's text before this delta.
    pub offset: u64,
    pub text: String,
}

/// `data` of an `output.reset` event: a new attempt started; discard the text so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutputReset {
    pub attempt: i32,
}

/// The live output of a task's running model call.
#[utoipa::path(get, path = "/v1/tasks/{id}/output", tag = "tasks", operation_id = "stream_task_output", params(("id" = Uuid, Path)),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream`: `output.delta` events (data: an `OutputDelta`), `output.reset` (data: an `OutputReset`) when another attempt starts, and last the task's terminal event (`task.succeeded`, `task.failed`, `task.cancelled`; data: the task as `GET /v1/tasks/{id}` answers). A finished task answers its terminal event at once.", content_type = "text/event-stream", body = OutputDelta),
        (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem)))]
pub async fn task_output(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = task_id(&id)?;
    // Subscribed before anything is read, so nothing published after a read is missed.
    let waiter = state.watch.subscribe(id);
    let deltas = state.watch.output(id);
    let task = state.tasklane.get(&caller.owner, id).await?;
    let follow = Follow {
        attempt: task.attempt,
        waiter,
        deltas,
        redacted: caller.is_scoped(),
        owner: caller.owner.clone(),
        state,
        id,
        follower: Follower::default(),
        out: VecDeque::new(),
        task: Some(task),
        reread: true,
        gap_since: None,
        done: false,
    };
    let stream = futures_util::stream::unfold(follow, Follow::next);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The state of one output stream.
struct Follow {
    state: AppState,
    owner: Owner,
    redacted: bool,
    id: Uuid,
    waiter: Waiter,
    deltas: Deltas,
    follower: Follower,
    out: VecDeque<SseEvent>,
    /// The task as last read, not yet looked at.
    task: Option<TaskRecord>,
    /// The task's attempt as last read: a stored text of an older one was left by a
    /// replica that died mid-call, and is not shown.
    attempt: i32,
    /// The stored text so far must be read (at the start, after a change of the task
    /// or a missed delta).
    reread: bool,
    /// Since when a delta has waited for text before it: the stored text is read again
    /// [`GAP_REREAD`] after that, however many deltas arrive meanwhile.
    gap_since: Option<tokio::time::Instant>,
    done: bool,
}

impl Follow {
    /// The next event, waiting for it; `None` ends the stream (after the terminal
    /// event, when the task is gone, or when the server stops).
    async fn next(mut self) -> Option<(Result<SseEvent, Infallible>, Follow)> {
        loop {
            if let Some(event) = self.out.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            if let Some(task) = self.task.take() {
                if task.state.is_terminal() {
                    // Deltas that arrived before the terminal event are told first.
                    while let Some(next) = self.deltas.ready() {
                        self.take(next);
                    }
                    self.out.push_back(terminal(task, self.redacted));
                    self.done = true;
                    continue;
                }
            }
            if self.reread {
                self.reread = false;
                match self.state.tasklane.output_so_far(self.id).await {
                    Ok(Some((attempt, text))) if attempt >= self.attempt => {
                        self.seen(attempt, 0, &text)
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(task = %self.id, %error, "read live output"),
                }
                continue;
            }
            let gap = self.follower.has_gap();
            let now = tokio::time::Instant::now();
            self.gap_since = if gap {
                self.gap_since.or(Some(now))
            } else {
                None
            };
            let reread_at = self.gap_since.unwrap_or(now) + GAP_REREAD;
            tokio::select! {
                next = self.deltas.next() => self.take(next),
                _ = self.waiter.changed() => match self.state.tasklane.get(&self.owner, self.id).await {
                    Ok(task) => {
                        self.attempt = task.attempt;
                        self.task = Some(task);
                        self.reread = true;
                    }
                    Err(ServiceError::NotFound) => return None,
                    Err(error) => {
                        tracing::warn!(task = %self.id, %error, "output stream read");
                        return None;
                    }
                },
                _ = tokio::time::sleep_until(reread_at), if gap => {
                    self.reread = true;
                    self.gap_since = None;
                }
                _ = self.state.stopping.cancelled() => return None,
            }
        }
    }

    fn take(&mut self, next: Next) {
        match next {
            Next::Delta(delta) => self.seen(delta.attempt, delta.offset, &delta.text),
            Next::Behind => self.reread = true,
        }
    }

    fn seen(&mut self, attempt: i32, offset: u64, text: &str) {
        for seen in self.follower.take(attempt, offset, text) {
            self.out.push_back(to_sse(seen));
        }
    }
}

fn to_sse(seen: Seen) -> SseEvent {
    let (kind, data) = match seen {
        Seen::Reset { attempt } => ("output.reset", json(&OutputReset { attempt })),
        Seen::Delta {
            attempt,
            offset,
            text,
        } => (
            "output.delta",
            json(&OutputDelta {
                attempt,
                offset,
                text,
            }),
        ),
    };
    SseEvent::default().event(kind).data(data)
}

fn terminal(task: TaskRecord, redacted: bool) -> SseEvent {
    let kind = task.state.event_type();
    SseEvent::default()
        .event(kind)
        .data(json(&TaskView::new(task, redacted)))
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}
