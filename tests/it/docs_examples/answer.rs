//! Reads a documented answer: an optional status line (`HTTP/1.1 202 Accepted`) and
//! headers, then a JSON body in which `...` stands for what was left out, or a stream of
//! Server-Sent Events (`id:`, `event:`, `data:` lines), read as the array of its `data`.

use serde_json::Value;

/// A member name or array item that stands for "more was left out here".
pub const ELIDED: &str = "...";

/// What an example says the server answers.
#[derive(Debug)]
pub struct Answer {
    /// From the status line; without one, a problem's `status`, else 200.
    pub status: u16,
    /// Header names shown, lower case.
    pub headers: Vec<String>,
    /// `None` when no body is shown.
    pub body: Option<Value>,
}

pub fn parse(text: &str, shows_status: bool) -> Result<Answer, String> {
    let mut lines = text.lines().peekable();
    let mut status = None;
    let mut headers = Vec::new();
    if shows_status {
        let line = lines.next().ok_or("`-i` but no status line")?;
        let code = line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|code| code.parse().ok())
            .ok_or(format!("`-i` but no status line: {line:?}"))?;
        status = Some(code);
        while let Some(line) = lines.next_if(|l| !l.trim().is_empty()) {
            let name = line.split_once(':').ok_or(format!("header {line:?}"))?.0;
            headers.push(name.trim().to_ascii_lowercase());
        }
    }
    let rest: Vec<&str> = lines.collect();
    let body = rest.join("\n");
    let body = body.trim();
    let body = match body {
        "" => None,
        sse if sse.starts_with("id:") || sse.starts_with("event:") => Some(events(sse)?),
        json => Some(elided_json(json)?),
    };
    let problem_status = body
        .as_ref()
        .filter(|b| b.get("code").is_some())
        .and_then(|b| b["status"].as_u64())
        .map(|s| s as u16);
    Ok(Answer {
        status: status.or(problem_status).unwrap_or(200),
        headers,
        body,
    })
}

/// A stream's events: the JSON of every `data:` line, in order.
pub fn events(text: &str) -> Result<Value, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).map_err(|e| format!("data: {e}")))
        .collect::<Result<Vec<Value>, String>>()
        .map(Value::Array)
}

/// JSON where a bare `...` is a member (`{"id": 1, ...}`, `{...}`) or an item
/// (`[1, ..., 9]`) left out: it becomes the member `"...": null` or the item `"..."`.
pub fn elided_json(text: &str) -> Result<Value, String> {
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<char> = Vec::new();
    let mut in_string = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next().map(|(_, e)| e)),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => stack.push(c),
            '}' | ']' => drop(stack.pop()),
            '.' if text[at..].starts_with("...") => {
                chars.next();
                chars.next();
                out.push_str(match stack.last() {
                    Some('{') => "\"...\": null",
                    _ => "\"...\"",
                });
                // An elided line between items may go without its comma.
                let next = text[at + 3..].trim_start().chars().next();
                if !matches!(next, None | Some(',' | ']' | '}')) {
                    out.push(',');
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    serde_json::from_str(&out).map_err(|e| format!("the documented body is not JSON: {e}"))
}

#[test]
fn elisions_status_lines_and_problems_are_read() {
    let body = elided_json(r#"{"a":{...},"b":[{"c":"x..."}, ...],...}"#).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"a": {"...": null}, "b": [{"c": "x..."}, "..."], "...": null})
    );
    let lines = elided_json("[1,\n ...\n 9]").unwrap();
    assert_eq!(lines, serde_json::json!([1, "...", 9]));
    let shown = parse("HTTP/1.1 202 Accepted\nlocation: /x\n\n{\"id\":1}", true).unwrap();
    assert_eq!(
        (shown.status, shown.headers),
        (202, vec!["location".to_owned()])
    );
    let problem = parse(r#"{"status":410,"code":"scope_deleted"}"#, false).unwrap();
    assert_eq!(problem.status, 410);
    assert_eq!(parse(r#"{"status":1}"#, false).unwrap().status, 200);
    let stream = parse(
        "id: 5\nevent: e\ndata: {\"seq\":5}\n\nid: 6\ndata: {\"seq\":6}",
        false,
    );
    assert_eq!(
        stream.unwrap().body,
        Some(serde_json::json!([{"seq": 5}, {"seq": 6}]))
    );
}
