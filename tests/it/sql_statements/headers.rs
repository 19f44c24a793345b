//! The `-- transition:` headers of the SQL files, parsed (see transitions.rs for what
//! they say and how the statements are checked against them).

use tasklane::task::{TaskState, Transition};

/// One `-- transition:` header, parsed.
#[derive(Debug)]
pub(super) struct Header {
    pub transitions: Vec<Transition>,
    /// The guard it expects, in `TaskState::ALL` order; `None` for `via`.
    pub expects: Option<Vec<TaskState>>,
    pub via: Vec<String>,
    /// Fenced by the lease token, with no state guard of its own.
    pub by_lease: bool,
}

/// The `-- transition:` headers of a file, continuation lines joined.
pub(super) fn headers(text: &str) -> Result<Vec<Header>, String> {
    let mut joined: Vec<String> = Vec::new();
    let mut continuing = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("-- transition:") {
            joined.push(rest.trim().to_owned());
            continuing = true;
        } else if continuing && line.starts_with("--  ") {
            let last = joined.last_mut().unwrap();
            last.push(' ');
            last.push_str(line[2..].trim());
        } else {
            continuing = false;
        }
    }
    joined.iter().map(|h| parse_header(h)).collect()
}

fn parse_header(text: &str) -> Result<Header, String> {
    let (head, reason) = match text.find('(') {
        Some(at) if text.ends_with(')') => (&text[..at], Some(&text[at + 1..text.len() - 1])),
        _ => (text, None),
    };
    let (names_part, modifier, operand) = ["except", "only", "via", "by"]
        .into_iter()
        .find_map(|word| {
            let at = head.find(&format!(" {word} "))?;
            Some((&head[..at], Some(word), &head[at + word.len() + 2..]))
        })
        .unwrap_or((head, None, ""));
    let transitions = list(names_part)
        .map(transition)
        .collect::<Result<Vec<_>, _>>()?;
    if transitions.is_empty() {
        return Err(format!("header {text:?} names no transition"));
    }
    let sources = in_order(|s| transitions.iter().any(|t| t.sources().any(|f| f == *s)));
    let narrowing = || {
        let states = list(operand).map(state).collect::<Result<Vec<_>, _>>()?;
        if reason.is_none_or(|r| r.trim().is_empty()) {
            return Err(format!("{text:?} narrows the table without a (reason)"));
        }
        match states.iter().find(|s| !sources.contains(s)) {
            Some(s) => Err(format!("{text:?}: {s} is not a source of these")),
            None => Ok(states),
        }
    };
    let expects = match modifier {
        None => Some(sources.clone()),
        Some("except") => {
            let except = narrowing()?;
            Some(in_order(|s| sources.contains(s) && !except.contains(s)))
        }
        Some("only") => {
            let only = narrowing()?;
            Some(in_order(|s| only.contains(s)))
        }
        Some("by") if operand.trim() == "lease" => {
            if reason.is_none_or(|r| r.trim().is_empty()) {
                return Err(format!("{text:?} is fenced by lease without a (reason)"));
            }
            Some(sources.clone())
        }
        Some("by") => return Err(format!("{text:?}: only `by lease` is known")),
        _ => None,
    };
    let via = match modifier {
        Some("via") => list(operand).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    Ok(Header {
        transitions,
        expects,
        via,
        by_lease: modifier == Some("by"),
    })
}

/// The states `keep` accepts, in `TaskState::ALL` order (so sets compare as vectors).
pub(super) fn in_order(keep: impl Fn(&TaskState) -> bool) -> Vec<TaskState> {
    TaskState::ALL.into_iter().filter(|s| keep(s)).collect()
}

fn list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn transition(name: &str) -> Result<Transition, String> {
    Transition::ALL
        .into_iter()
        .find(|t| format!("{t:?}") == name)
        .ok_or_else(|| format!("unknown transition {name:?}"))
}

pub(super) fn state(name: &str) -> Result<TaskState, String> {
    name.parse().map_err(|e| format!("{e}"))
}
