//! Reading a successful answer of the `openai` executor: an event stream (the request
//! asks for one) chunk by chunk, each content delta handed to the attempt's live
//! output as it arrives; or, from a provider that answers without streaming, the whole
//! JSON body as one piece. Either way the completion is the same.

use super::openai_answer::{self, Failure};
use super::openai_chunks::{SseEvents, StreamedCompletion};
use crate::service::live_output::Writer;

use super::call::{describe, Call};

/// Whether a response is an event stream (else it is read as one JSON body).
pub(super) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Reads a 2xx event stream to its end, publishing its text to `live`.
pub(super) async fn read(mut response: reqwest::Response, live: Option<&Writer>) -> Call {
    let mut events = SseEvents::default();
    let mut completion = StreamedCompletion::default();
    loop {
        let bytes = match response.chunk().await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => break,
            Err(e) if e.is_timeout() => return Call::TimedOut,
            Err(e) => return Call::Answered(Err(cut(&describe(&e)))),
        };
        for data in events.push(&bytes) {
            if let Err(failure) = take(&mut completion, &data, live) {
                return Call::Answered(Err(failure));
            }
        }
    }
    if let Some(data) = events.finish() {
        if let Err(failure) = take(&mut completion, &data, live) {
            return Call::Answered(Err(failure));
        }
    }
    Call::Answered(completion.finish())
}

fn take(
    completion: &mut StreamedCompletion,
    data: &str,
    live: Option<&Writer>,
) -> Result<(), Failure> {
    let text = completion.event(data)?;
    if let Some(live) = live {
        live.push(&text);
    }
    Ok(())
}

/// A stream broken by the transport: transient (the usage read so far is lost with
/// it: a stream reports usage only at its end).
fn cut(message: &str) -> Failure {
    openai_answer::unreachable(&format!("the stream broke: {message}"))
}
