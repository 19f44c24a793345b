//! How one call of the `openai` executor ended, and a transport error in words: shared
//! by the plain and the streamed reading of an answer.

use super::openai_answer::{self, Failure};

/// How one call ended.
pub(super) enum Call {
    Answered(Result<openai_answer::Completion, Failure>),
    /// The attempt's time ran out during the call.
    TimedOut,
    Cancelled,
}

/// A transport error in words, without the URL (the base URL is configuration, but
/// nothing from the request belongs in a stored message) and with its causes (a TLS
/// error says why the certificate was refused).
pub(super) fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
