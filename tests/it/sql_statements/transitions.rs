//! The SQL copy of the transition table, checked against the one in Rust. Every statement
//! that writes `tasks.state` carries a header naming the transitions it makes:
//!
//! ```text
//! -- transition: Claim
//! -- transition: RetryLater, Fail, Fallback, AckCancel
//! --   except queued, waiting_for_retry, waiting_for_external_fallback
//! --   (ends an attempt: only a leased task has one)
//! -- transition: Fail only queued (a cold start fails the queued tasks of policy fail)
//! -- transition: Requeue, Fail, AckCancel via lost_expired.sql, lost_handback.sql
//! ```
//!
//! (lines indented under a header continue it). The sources a header expects are the
//! states any named transition leaves from (`Transition::sources`), minus the `except`
//! states, or just the `only` states; both narrowings need a reason in parentheses and
//! may only name states the table allows. Every `state IN (...)` or `state = '...'` guard
//! on the tasks table (after WHERE, AND, OR or an opening parenthesis) must equal what
//! one header expects, and each header must match a guard. A statement that writes rows
//! another statement locked (`via`) has no guard of its own: the named statements carry
//! it, and their headers may only name transitions it makes. Statements that lock rows
//! for a transition (lease_lock.sql, lost_*.sql) carry headers too. A statement fenced
//! `by lease` (with a reason) tests the lease token instead of the state: a task holds
//! one only while running or cancelling (V17's CHECK tasks_lease_only_while_running),
//! so its transitions must leave from exactly those and it must test `lease_token =`.

use std::collections::BTreeMap;

use tasklane::task::{TaskState, Transition};

use super::files::{self, SqlFile};
use super::headers::{headers, in_order, state, Header};
use super::tokens::{is_word, tokens, Token};

/// The states a task may hold a lease token in (V17's CHECK).
const LEASED: [TaskState; 2] = [TaskState::Running, TaskState::Cancelling];

#[test]
fn every_state_guard_in_sql_equals_the_transition_table() {
    let files = files::all();
    let problems = check(&files);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn every_transition_is_made_by_some_statement() {
    let mut named: Vec<Transition> = Vec::new();
    for file in files::all() {
        for header in headers(&file.text).unwrap() {
            named.extend(header.transitions);
        }
    }
    for transition in Transition::ALL {
        assert!(
            named.contains(&transition),
            "no statement makes {transition:?}"
        );
    }
}

/// The check bites: an edited guard, a stale narrowing and a missing header each fail.
#[test]
fn the_check_refuses_drift() {
    let cancel = files::all()
        .into_iter()
        .find(|f| f.name == "cancel.sql")
        .unwrap();
    assert!(check(std::slice::from_ref(&cancel)).is_empty());
    let doctored = |from: &str, to: &str| {
        assert!(
            cancel.text.contains(from),
            "cancel.sql no longer has {from:?}"
        );
        vec![SqlFile {
            name: cancel.name.clone(),
            text: cancel.text.replace(from, to),
        }]
    };
    let widened = doctored("'running')", "'running', 'cancelling')");
    assert_eq!(check(&widened).len(), 1, "a widened guard");
    let unnamed = doctored("-- transition: Cancel\n", "");
    assert_eq!(check(&unnamed).len(), 1, "a write without a header");
    let stale = doctored(
        "-- transition: Cancel\n",
        "-- transition: Cancel except succeeded (not a source)\n",
    );
    assert!(
        !check(&stale).is_empty(),
        "an exception the table does not have"
    );
    let unexplained = doctored(
        "-- transition: Cancel\n",
        "-- transition: Cancel except running\n",
    );
    assert!(
        !check(&unexplained).is_empty(),
        "a narrowing without a reason"
    );
    let settle = files::all()
        .into_iter()
        .find(|f| f.name == "functions/complete_tasks_claiming.sql")
        .unwrap();
    assert!(check(std::slice::from_ref(&settle)).is_empty());
    let unfenced = SqlFile {
        name: settle.name.clone(),
        text: settle
            .text
            .replace("t.lease_token = i.lease_token", "t.worker_id = i.route"),
    };
    assert_eq!(check(&[unfenced]).len(), 1, "by lease without a token test");
}

/// Every problem in `files`, one line each.
fn check(files: &[SqlFile]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut parsed = BTreeMap::new();
    for file in files {
        match headers(&file.text) {
            Ok(h) => {
                parsed.insert(file.name.as_str(), h);
            }
            Err(e) => problems.push(format!("{}: {e}", file.name)),
        }
    }
    for file in files {
        let Some(headers) = parsed.get(file.name.as_str()) else {
            continue;
        };
        if let Err(e) = check_file(file, headers, &parsed) {
            problems.push(format!("{}: {e}", file.name));
        }
    }
    problems
}

fn check_file(
    file: &SqlFile,
    headers: &[Header],
    all: &BTreeMap<&str, Vec<Header>>,
) -> Result<(), String> {
    let tokens = tokens(&file.text);
    if headers.is_empty() {
        return match writes_state(&tokens) {
            true => Err("writes tasks.state without a `-- transition:` header".into()),
            false => Ok(()),
        };
    }
    let guards = guards(&tokens)?;
    for guard in &guards {
        if !headers.iter().any(|h| h.expects.as_ref() == Some(guard)) {
            return Err(format!(
                "guard {} matches no header (expected {})",
                names(guard),
                expectations(headers)
            ));
        }
    }
    for header in headers {
        match &header.expects {
            Some(expects) if header.by_lease => check_by_lease(expects, &tokens)?,
            Some(expects) if !guards.contains(expects) => {
                return Err(format!("no guard {} as a header expects", names(expects)));
            }
            Some(_) => {}
            None => check_via(header, &guards, all)?,
        }
    }
    Ok(())
}

/// A `by lease` header: its transitions leave from the leased states exactly, and the
/// statement tests the token.
fn check_by_lease(expects: &[TaskState], tokens: &[Token]) -> Result<(), String> {
    if !in_order(|s| LEASED.contains(s)).eq(expects) {
        return Err(format!(
            "fenced by lease, but its transitions leave from {}, not {}",
            names(expects),
            names(&LEASED)
        ));
    }
    // `lease_token =` as a condition (after WHERE or AND, the column maybe qualified),
    // not a SET target.
    let fenced = tokens.iter().enumerate().any(|(i, t)| {
        is_word(t, "lease_token")
            && tokens.get(i + 1) == Some(&Token::Punct('='))
            && column_at(tokens, i)
                .1
                .is_some_and(|b| ["WHERE", "AND"].iter().any(|w| is_word(b, w)))
    });
    match fenced {
        true => Ok(()),
        false => Err("fenced by lease, but no `lease_token =` test".into()),
    }
}

/// A `via` header: no guard here; the named statements exist and make only these.
fn check_via(
    header: &Header,
    guards: &[Vec<TaskState>],
    all: &BTreeMap<&str, Vec<Header>>,
) -> Result<(), String> {
    if !guards.is_empty() {
        return Err("a `via` statement has guards of its own".into());
    }
    for name in &header.via {
        let Some(theirs) = all.get(name.as_str()).filter(|h| !h.is_empty()) else {
            return Err(format!("via {name}: no such statement with a header"));
        };
        for transition in theirs.iter().flat_map(|h| &h.transitions) {
            if !header.transitions.contains(transition) {
                return Err(format!(
                    "via {name}: it names {transition:?}, this does not"
                ));
            }
        }
    }
    Ok(())
}

/// For the column named at `i`: whether it is qualified (`t.state`), and the token
/// before it (before its qualifier, if any).
fn column_at(tokens: &[Token], i: usize) -> (bool, Option<&Token>) {
    let qualified = i >= 2 && tokens[i - 1] == Token::Punct('.');
    let before = if qualified {
        i.checked_sub(3)
    } else {
        i.checked_sub(1)
    };
    (qualified, before.map(|b| &tokens[b]))
}

/// Each guard on the tasks table's state, as a set in `TaskState::ALL` order.
fn guards(tokens: &[Token]) -> Result<Vec<Vec<TaskState>>, String> {
    let aliases = task_aliases(tokens);
    let mut guards = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if !is_word(token, "state") {
            continue;
        }
        let (qualified, before) = column_at(tokens, i);
        let opens_condition = before.is_some_and(|t| {
            ["WHERE", "AND", "OR"].iter().any(|w| is_word(t, w)) || *t == Token::Punct('(')
        });
        let on_tasks =
            !qualified || matches!(&tokens[i - 2], Token::Word(q) if aliases.contains(q));
        if !opens_condition || !on_tasks {
            continue; // a SET target, a CASE, or another relation's column
        }
        let states = listed(&tokens[i + 1..])?
            .into_iter()
            .map(state)
            .collect::<Result<Vec<_>, _>>()?;
        guards.push(in_order(|s| states.contains(s)));
    }
    Ok(guards)
}

/// The states after `state` in a guard: `= 'x'` or `IN ('x', 'y')`.
fn listed(after: &[Token]) -> Result<Vec<&str>, String> {
    let mut listed = Vec::new();
    match after {
        [Token::Punct('='), Token::Str(s), ..] => listed.push(s.as_str()),
        [Token::Word(w), Token::Punct('('), rest @ ..] if w.eq_ignore_ascii_case("IN") => {
            for t in rest {
                match t {
                    Token::Str(s) => listed.push(s.as_str()),
                    Token::Punct(',') => {}
                    Token::Punct(')') => break,
                    other => return Err(format!("unexpected {other:?} in a state list")),
                }
            }
        }
        rest => {
            return Err(format!(
                "a state guard that is not `IN (...)` or `= '...'`: {:?}; write the \
                 allowed sources as a positive list",
                &rest[..rest.len().min(3)]
            ))
        }
    }
    Ok(listed)
}

/// The names `tasklane.tasks` goes by in the statement (`t` in `tasklane.tasks t`).
fn task_aliases(tokens: &[Token]) -> Vec<String> {
    const NOT_ALIASES: [&str; 12] = [
        "WHERE",
        "SET",
        "JOIN",
        "USING",
        "ON",
        "LEFT",
        "INNER",
        "FOR",
        "ORDER",
        "LIMIT",
        "GROUP",
        "RETURNING",
    ];
    let mut aliases = vec!["tasks".to_owned()];
    for window in tokens.windows(5) {
        if let [Token::Word(schema), Token::Punct('.'), Token::Word(table), next, after] = window {
            if schema == "tasklane" && table == "tasks" {
                let alias = if is_word(next, "AS") { after } else { next };
                if let Token::Word(a) = alias {
                    if !NOT_ALIASES.iter().any(|k| a.eq_ignore_ascii_case(k)) {
                        aliases.push(a.clone());
                    }
                }
            }
        }
    }
    aliases
}

/// Whether the statement assigns `state` (`SET state =` or `, state =` in a SET list).
/// Whether the statement assigns a `state` column of `tasklane.tasks`. The queue mirror's
/// trigger (`sync_task_queue`) assigns `task_queue.state` from rows the transition
/// already wrote, which is a copy, not a transition: a file counts only when it also
/// updates or inserts into `tasklane.tasks` itself.
fn writes_state(tokens: &[Token]) -> bool {
    let assigns = tokens.windows(3).any(|w| {
        (is_word(&w[0], "SET") || w[0] == Token::Punct(','))
            && is_word(&w[1], "state")
            && w[2] == Token::Punct('=')
    });
    let writes_tasks = tokens.windows(4).any(|w| {
        (is_word(&w[0], "UPDATE") || is_word(&w[0], "INTO"))
            && is_word(&w[1], "tasklane")
            && w[2] == Token::Punct('.')
            && is_word(&w[3], "tasks")
    });
    assigns && writes_tasks
}

fn names(states: &[TaskState]) -> String {
    let names: Vec<_> = states.iter().map(|s| s.as_str()).collect();
    format!("({})", names.join(", "))
}

fn expectations(headers: &[Header]) -> String {
    let all: Vec<_> = headers
        .iter()
        .filter_map(|h| h.expects.as_deref())
        .map(names)
        .collect();
    all.join(" or ")
}
