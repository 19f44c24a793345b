//! A tokenizer just good enough to find state guards and writes in our statements:
//! words, string literals and punctuation, with comments and whitespace dropped.

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Word(String),
    Str(String),
    Punct(char),
}

pub fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.eq_ignore_ascii_case(word))
}

/// Words, string literals and punctuation; comments and whitespace dropped.
pub fn tokens(sql: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => while chars.next_if(|&n| n != '\n').is_some() {},
            '\'' => {
                let mut s = String::new();
                while let Some(n) = chars.next() {
                    if n == '\'' && chars.next_if_eq(&'\'').is_none() {
                        break;
                    }
                    s.push(n);
                }
                out.push(Token::Str(s));
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' => {
                let mut w = c.to_string();
                while let Some(n) = chars.next_if(|&n| n.is_alphanumeric() || n == '_' || n == '$')
                {
                    w.push(n);
                }
                out.push(Token::Word(w));
            }
            c if c.is_whitespace() => {}
            c => out.push(Token::Punct(c)),
        }
    }
    out
}
