//! A task's events: JSON pages, or Server-Sent Events (`id:` = seq, resumable with
//! `Last-Event-ID`) that end after the terminal event. A stream waits on the replica's
//! shared listener, so it sees events written by any replica promptly; a client going
//! away drops only its own stream.

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use uuid::Uuid;

use crate::http::auth::{perm, Allowed};
use crate::http::dto::{EventPage, EventView, EventsQuery};
use crate::http::error::{ApiError, Problem};
use crate::http::extract::{task_id, QueryOf};
use crate::http::watch::Waiter;
use crate::http::AppState;
use crate::service::{Event, Owner, ServiceError, TaskEvents};
use crate::task::bounds;

/// Events of one task after a seq, as a JSON page or an event stream.
#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = "tasks", operation_id = "list_task_events", params(("id" = Uuid, Path), EventsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "a page, or with `Accept: text/event-stream` a stream", body = EventPage),
        (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn task_events(
    State(state): State<AppState>,
    caller: Allowed<perm::Read>,
    Path(id): Path<String>,
    QueryOf(query): QueryOf<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = task_id(&id)?;
    let limit = query.limit.unwrap_or(*bounds::PAGE_SIZE.end());
    let wants_stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let mut after = query.after.unwrap_or(0);
    if wants_stream {
        if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
            after = last
                .trim()
                .parse()
                .map_err(|_| ApiError::invalid("Last-Event-ID", "must be an event seq"))?;
        }
    }
    let first = state
        .tasklane
        .events(&caller.owner, id, after, limit)
        .await?;
    if !wants_stream {
        let items = first.events.into_iter().map(EventView::from).collect();
        return Ok(Json(EventPage { items }).into_response());
    }
    let tail = Tail {
        waiter: state.watch.subscribe(id),
        state: state.clone(),
        owner: caller.owner.clone(),
        id,
        after,
        pending: VecDeque::from(first.events),
        done: false,
    };
    let stream = futures_util::stream::unfold(tail, Tail::next);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The state of one event stream.
struct Tail {
    state: AppState,
    owner: Owner,
    id: Uuid,
    after: i32,
    pending: VecDeque<Event>,
    waiter: Waiter,
    done: bool,
}

impl Tail {
    /// The next event, waiting for it if need be; `None` ends the stream (after the
    /// terminal event, when the task is gone, or when the server stops).
    async fn next(mut self) -> Option<(Result<SseEvent, Infallible>, Tail)> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                self.after = event.seq;
                self.done = event.is_terminal();
                return Some((Ok(to_sse(event)), self));
            }
            match self.fetch().await {
                Ok(Some((events, terminal))) => {
                    if events.is_empty() && terminal {
                        return None;
                    }
                    self.pending.extend(events);
                    if !self.pending.is_empty() {
                        continue;
                    }
                }
                Ok(None) => return None,
                Err(error) => {
                    tracing::warn!(task = %self.id, error = %format!("{error:#}"), "event stream read");
                    return None;
                }
            }
            tokio::select! {
                _ = self.waiter.changed() => {}
                _ = self.state.stopping.cancelled() => return None,
            }
        }
    }

    /// New events, and whether the task is terminal; `None` when it is gone.
    async fn fetch(&self) -> Result<Option<(Vec<Event>, bool)>, ServiceError> {
        let limit = *bounds::PAGE_SIZE.end();
        match self
            .state
            .tasklane
            .events(&self.owner, self.id, self.after, limit)
            .await
        {
            Ok(TaskEvents { events, terminal }) => Ok(Some((events, terminal))),
            Err(ServiceError::NotFound) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

fn to_sse(event: Event) -> SseEvent {
    let view = EventView::from(event);
    let data = serde_json::to_string(&view).unwrap_or_else(|_| "{}".to_owned());
    SseEvent::default()
        .id(view.seq.to_string())
        .event(view.kind.clone())
        .data(data)
}
