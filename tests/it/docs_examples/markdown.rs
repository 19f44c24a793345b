//! Finds the HTTP examples of a Markdown document: every fenced block whose first line
//! is a `$ curl` command. A block may hold several commands, each followed by the answer
//! shown for it. A block right after `<!-- not run: why -->` is skipped, and says why.

/// One `$ curl` command of a document and the answer it documents.
#[derive(Debug, Clone)]
pub struct Example {
    /// The nearest heading above it, to name it in a failure.
    pub heading: String,
    /// The 1-based line of its `$ curl`.
    pub line: usize,
    /// The command, continuation lines joined (without the `$ `).
    pub command: String,
    /// The answer shown: status line, headers and body, as written.
    pub answer: String,
}

/// A block that is not run, and why.
#[derive(Debug)]
pub struct Skipped {
    pub line: usize,
    pub why: String,
}

/// The examples of `text` in order, and the blocks marked not to run.
pub fn examples(text: &str) -> (Vec<Example>, Vec<Skipped>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut examples, mut skipped) = (Vec::new(), Vec::new());
    let mut heading = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with('#') {
            heading = line.trim_start_matches('#').trim().to_owned();
        }
        if !line.trim_start().starts_with("```") {
            i += 1;
            continue;
        }
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        let block = &lines[i + 1..end];
        let is_example = block.first().is_some_and(|l| l.starts_with("$ curl"));
        let marker = i
            .checked_sub(1)
            .and_then(|p| lines[p].trim().strip_prefix("<!-- not run:"))
            .map(|rest| rest.trim_end_matches("-->").trim().to_owned());
        match (is_example, marker) {
            (true, Some(why)) => skipped.push(Skipped { line: i + 2, why }),
            (true, None) => examples.extend(split(block, i + 2, &heading)),
            (false, _) => {}
        }
        i = end + 1;
    }
    (examples, skipped)
}

/// The commands of one block (`first` is the line number of its first line).
fn split(block: &[&str], first: usize, heading: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut k = 0;
    while k < block.len() {
        let Some(start) = block[k].strip_prefix("$ ") else {
            k += 1;
            continue;
        };
        let line = first + k;
        let mut command = start.to_owned();
        // A command goes on while a line ends with `\` or a quote is open.
        while command.ends_with('\\') || open_quote(&command) {
            k += 1;
            let Some(next) = block.get(k) else { break };
            match command.strip_suffix('\\') {
                Some(head) => command = format!("{} {}", head.trim_end(), next.trim_start()),
                None => command = format!("{command}\n{next}"),
            }
        }
        k += 1;
        let answer_end = (k..block.len())
            .find(|&j| block[j].starts_with("$ "))
            .unwrap_or(block.len());
        examples.push(Example {
            heading: heading.to_owned(),
            line,
            command,
            answer: block[k..answer_end].join("\n"),
        });
        k = answer_end;
    }
    examples
}

/// Whether `text` ends inside a single- or double-quoted shell string.
fn open_quote(text: &str) -> bool {
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    quote.is_some()
}

#[test]
fn a_block_splits_into_commands_with_their_answers_and_a_marker_skips_one() {
    let text = "# T\n\n```\n$ curl -i $B/a \\\n    -d '{\"x\":\n 1}'\nHTTP/1.1 202 Accepted\n\n{}\n$ curl $B/b\n{\"y\":2}\n```\n\n<!-- not run: no -->\n```\n$ curl $B/c\n```\n";
    let (examples, skipped) = examples(text);
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[0].command, "curl -i $B/a -d '{\"x\":\n 1}'");
    assert_eq!(examples[0].answer, "HTTP/1.1 202 Accepted\n\n{}");
    assert_eq!((examples[1].line, examples[1].heading.as_str()), (10, "T"));
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].why, "no");
}
