//! Live output: the text a running model call has produced so far, for observers. It is
//! not durable and not an event of the task: the replica running the attempt publishes
//! it in coalesced deltas and keeps a copy of the text so far for late observers; both
//! go when the attempt ends. This module holds the pure parts: what a delta is, how a
//! large one is split to fit a notification, and how an observer puts deltas (which
//! may repeat, overlap or arrive before the copy it read) back into one ordered text.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How often a replica publishes the deltas of its running attempts: every publish of
/// an attempt covers at least this much of its output. A chunk waits up to one period
/// for its publish, so this bounds what an observer waits beyond the notification's own
/// trip: at 25 ms a chunk reaches an observer on another replica within 50 ms at the
/// 99th percentile, for at most 40 notifying commits a second per replica (each for
/// every attempt it runs).
pub const PUBLISH_EVERY: Duration = Duration::from_millis(25);
/// How often a replica writes the text so far of its attempts whose text changed.
pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);
/// The most bytes a delta's text takes once escaped as JSON, so that a notification's
/// payload (text plus ids) stays under PostgreSQL's 8000-byte limit.
pub const PAYLOAD_TEXT_BYTES: usize = 7000;

/// One published piece of an attempt's text: `offset` counts the characters (Unicode
/// scalar values) of the attempt's text before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub task_id: Uuid,
    pub attempt: i32,
    pub offset: u64,
    pub text: String,
}

/// The characters of `text`, the unit of offsets.
pub fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The deltas that publish `text` (starting at `offset`), each small enough for one
/// notification once escaped.
pub fn split(task_id: Uuid, attempt: i32, offset: u64, text: &str) -> Vec<Delta> {
    let mut out = Vec::new();
    let mut piece = String::new();
    let mut piece_bytes = 0;
    let mut at = offset;
    for c in text.chars() {
        let bytes = escaped_len(c);
        if piece_bytes + bytes > PAYLOAD_TEXT_BYTES {
            let text = std::mem::take(&mut piece);
            let n = chars(&text);
            out.push(Delta {
                task_id,
                attempt,
                offset: at,
                text,
            });
            at += n;
            piece_bytes = 0;
        }
        piece.push(c);
        piece_bytes += bytes;
    }
    if !piece.is_empty() {
        out.push(Delta {
            task_id,
            attempt,
            offset: at,
            text: piece,
        });
    }
    out
}

/// The bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// What an observer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A new attempt started: what came before is void.
    Reset { attempt: i32 },
    /// The next characters of the attempt's text, in order and without repeats.
    Delta {
        attempt: i32,
        offset: u64,
        text: String,
    },
}

/// One observer's view of a task's live text. Deltas of an older attempt are dropped;
/// a newer attempt resets; a delta that starts past what was seen waits until the gap
/// is filled (by a delta or by the stored text so far, read again).
#[derive(Debug, Default)]
pub struct Follower {
    attempt: Option<i32>,
    seen: u64,
    waiting: BTreeMap<u64, String>,
}

impl Follower {
    /// Takes `text` at `offset` of `attempt`'s text (the stored text so far is a delta
    /// at offset 0), returning what the observer should be told.
    pub fn take(&mut self, attempt: i32, offset: u64, text: &str) -> Vec<Seen> {
        let mut out = Vec::new();
        match self.attempt {
            Some(current) if attempt < current => return out,
            Some(current) if attempt == current => {}
            previous => {
                if previous.is_some() {
                    out.push(Seen::Reset { attempt });
                }
                self.attempt = Some(attempt);
                self.seen = 0;
                self.waiting.clear();
            }
        }
        self.place(attempt, offset, text, &mut out);
        while let Some((&at, _)) = self.waiting.first_key_value() {
            if at > self.seen {
                break;
            }
            let (at, text) = self.waiting.pop_first().expect("a first entry");
            self.place(attempt, at, &text, &mut out);
        }
        out
    }

    /// Whether a delta waits for text that has not been seen (read the stored text
    /// again).
    pub fn has_gap(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The attempt whose text is followed.
    pub fn attempt(&self) -> Option<i32> {
        self.attempt
    }

    fn place(&mut self, attempt: i32, offset: u64, text: &str, out: &mut Vec<Seen>) {
        if offset > self.seen {
            let slot = self.waiting.entry(offset).or_default();
            if chars(text) > chars(slot) {
                *slot = text.to_owned();
            }
            return;
        }
        let skip = (self.seen - offset) as usize;
        let new: String = text.chars().skip(skip).collect();
        if new.is_empty() {
            return;
        }
        let offset = self.seen;
        self.seen += chars(&new);
        out.push(Seen::Delta {
            attempt,
            offset,
            text: new,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(seen: &[Seen]) -> String {
        seen.iter()
            .filter_map(|s| match s {
                Seen::Delta { text, .. } => Some(text.as_str()),
                Seen::Reset { .. } => None,
            })
            .collect()
    }

    #[test]
    fn large_text_splits_into_payloads_that_fit_and_join_back() {
        let id = Uuid::now_v7();
        let text = "a\"é\u{1}\n".repeat(3000);
        let deltas = split(id, 2, 10, &text);
        assert!(deltas.len() > 1);
        let mut at = 10;
        for d in &deltas {
            assert_eq!(d.offset, at);
            at += chars(&d.text);
            let payload = serde_json::to_string(d).unwrap();
            assert!(payload.len() < 8000, "{}", payload.len());
        }
        let joined: String = deltas.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(joined, text);
        assert!(split(id, 1, 0, "").is_empty());
    }

    #[test]
    fn repeats_and_overlaps_are_cut_and_gaps_wait() {
        let mut f = Follower::default();
        // The stored text so far, then a delta that overlaps it, then a repeat.
        assert_eq!(text_of(&f.take(1, 0, "héllo")), "héllo");
        let seen = f.take(1, 3, "lo wor");
        assert_eq!(
            seen,
            vec![Seen::Delta {
                attempt: 1,
                offset: 5,
                text: " wor".into()
            }]
        );
        assert!(f.take(1, 0, "héllo wor").is_empty());
        // A delta past the end waits for the gap to be filled.
        assert!(f.take(1, 11, "!!").is_empty());
        assert!(f.has_gap());
        assert_eq!(text_of(&f.take(1, 9, "ld")), "ld!!");
        assert!(!f.has_gap());
    }

    #[test]
    fn a_newer_attempt_resets_and_an_older_one_is_dropped() {
        let mut f = Follower::default();
        assert_eq!(text_of(&f.take(1, 0, "one")), "one");
        let seen = f.take(2, 0, "two");
        assert_eq!(seen[0], Seen::Reset { attempt: 2 });
        assert_eq!(text_of(&seen), "two");
        assert!(f.take(1, 3, " more").is_empty());
        assert_eq!(f.attempt(), Some(2));
        // The first attempt an observer sees is not a reset.
        let mut late = Follower::default();
        assert_eq!(
            late.take(3, 0, "x"),
            vec![Seen::Delta {
                attempt: 3,
                offset: 0,
                text: "x".into()
            }]
        );
    }
}
