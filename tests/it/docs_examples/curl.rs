//! Reads a documented `curl` command as the request it sends: words split as a shell
//! splits them (quotes, `$VAR` outside single quotes), then the few options the
//! documentation uses: `-i`, `-s`, `-N`, `-X METHOD`, `-H HEADER`, `-d BODY` and the URL.

use std::collections::HashMap;

/// The request of one example.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub method: String,
    /// The URL as written, variables substituted.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// `-i`: the documented answer starts with its status line.
    pub shows_status: bool,
}

/// Parses `command` (`curl ...`), substituting `vars`; an unknown variable or option
/// is an error naming it.
pub fn parse(command: &str, vars: &HashMap<&str, String>) -> Result<Request, String> {
    let words = split(command, vars)?;
    let mut words = words.into_iter();
    if words.next().as_deref() != Some("curl") {
        return Err("not a curl command".into());
    }
    let mut request = Request {
        method: String::new(),
        url: String::new(),
        headers: Vec::new(),
        body: None,
        shows_status: false,
    };
    while let Some(word) = words.next() {
        let mut value = |option: &str| words.next().ok_or(format!("{option} without a value"));
        match word.as_str() {
            "-i" => request.shows_status = true,
            "-s" | "-N" => {}
            "-X" => request.method = value("-X")?,
            "-H" => {
                let header = value("-H")?;
                let (name, text) = header
                    .split_once(':')
                    .ok_or(format!("header {header:?} without a colon"))?;
                request
                    .headers
                    .push((name.trim().into(), text.trim().into()));
            }
            "-d" => request.body = Some(value("-d")?),
            option if option.starts_with('-') => return Err(format!("option {option}")),
            url => request.url = url.to_owned(),
        }
    }
    if request.method.is_empty() {
        request.method = match request.body {
            Some(_) => "POST".into(),
            None => "GET".into(),
        };
    }
    Ok(request)
}

/// Shell words: `'...'` literal, `"..."` with `$VAR`, bare words with `$VAR`.
fn split(command: &str, vars: &HashMap<&str, String>) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                let escaped = chars.next().ok_or("a trailing backslash")?;
                word.get_or_insert_with(String::new).push(escaped);
            }
            (None | Some('"'), '$') => {
                let mut name = String::new();
                while let Some(&n) = chars
                    .peek()
                    .filter(|n| n.is_ascii_alphanumeric() || **n == '_')
                {
                    name.push(n);
                    chars.next();
                }
                let value = vars
                    .get(name.as_str())
                    .ok_or(format!("${name} is not set"))?;
                word.get_or_insert_with(String::new).push_str(value);
            }
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err("an unclosed quote".into());
    }
    words.extend(word);
    Ok(words)
}

#[test]
fn options_quotes_and_variables_become_the_request() {
    let vars = HashMap::from([("B", "http://h".to_owned()), ("APP", "tl_a".to_owned())]);
    let request = parse(
        r#"curl -i -X PUT "$B/v1/x?a=1" -H "Authorization: Bearer $APP" -d '{"k":"$no"}'"#,
        &vars,
    )
    .unwrap();
    assert_eq!(
        request,
        Request {
            method: "PUT".into(),
            url: "http://h/v1/x?a=1".into(),
            headers: vec![("Authorization".into(), "Bearer tl_a".into())],
            body: Some(r#"{"k":"$no"}"#.into()),
            shows_status: true,
        }
    );
    assert_eq!(parse("curl $B/y -d '{}'", &vars).unwrap().method, "POST");
    assert_eq!(
        parse("curl $NOPE/y", &vars).unwrap_err(),
        "$NOPE is not set"
    );
}
