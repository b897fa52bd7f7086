//! Splits a filter into tokens on demand (the parser pulls them, so the leftmost problem is
//! the one reported).
//!
//! Lexical rules:
//! - whitespace (any Unicode whitespace) separates tokens and is otherwise ignored;
//! - a word is `[A-Za-z_][A-Za-z0-9_]*`; keywords (`AND`, `IN`, …) are words the parser
//!   recognises by position, case-insensitively, so a field may be called `and` or `in`;
//! - a path is a word directly followed (no whitespace) by accessors `.word`, `[i]`, `[#-k]`;
//! - a string is `'…'` or `"…"`; inside, a backslash escapes `\`, `'` or `"` (any other
//!   character after a backslash is an error, so `C:\dir` must be written `C:\\dir`);
//! - a number is `-?digits(.digits)?([eE][+-]?digits)?`, and must not run into a letter,
//!   digit, `_` or `.` (`12abc` is an error, not `12` then `abc`);
//! - `=`, `!=`, `<`, `<=`, `>`, `>=`, `(`, `)`, `,`.

use super::ast::{CompareOp, Path, Segment};
use super::error::{FilterError, FilterErrorKind, column_of};
use serde_json::Number;

/// One token and its byte span in the source.
#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) kind: Tok,
    pub(super) start: usize,
    pub(super) end: usize,
}

#[derive(Debug, Clone)]
pub(super) enum Tok {
    /// A bare word: a keyword, `true`/`false`, or a one-segment path.
    Word,
    /// A word with accessors.
    Path(Path),
    /// A string literal, unescaped; `escaped` when the source held a backslash escape.
    Str {
        value: String,
        escaped: bool,
    },
    /// A number literal.
    Num(Number),
    LParen,
    RParen,
    Comma,
    Op(CompareOp),
    /// A character that starts no token.
    Other,
    Eof,
}

pub(super) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'s> Lexer<'s> {
    pub(super) fn new(src: &'s str) -> Self {
        Lexer { src, pos: 0 }
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_byte(&self, ahead: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + ahead).copied()
    }

    fn error(&self, at: usize, message: impl Into<String>) -> FilterError {
        FilterError::syntax(column_of(self.src, at), message)
    }

    /// The next token; `Tok::Eof` (repeatedly) at the end.
    pub(super) fn next_token(&mut self) -> Result<Token, FilterError> {
        while let Some(c) = self.peek_char() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                kind: Tok::Eof,
                start,
                end: start,
            });
        };
        let kind = match c {
            '(' | ')' | ',' | '=' => {
                self.pos += 1;
                match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    ',' => Tok::Comma,
                    _ => Tok::Op(CompareOp::Eq),
                }
            }
            '!' => {
                if self.peek_byte(1) != Some(b'=') {
                    return Err(self.error(start + 1, "expected '=' after '!'"));
                }
                self.pos += 2;
                Tok::Op(CompareOp::Ne)
            }
            '<' | '>' => {
                let or_equal = self.peek_byte(1) == Some(b'=');
                self.pos += 1 + usize::from(or_equal);
                Tok::Op(match (c, or_equal) {
                    ('<', false) => CompareOp::Lt,
                    ('<', true) => CompareOp::Le,
                    (_, false) => CompareOp::Gt,
                    (_, true) => CompareOp::Ge,
                })
            }
            '\'' | '"' => self.string(c)?,
            '-' | '0'..='9' => self.number()?,
            c if is_word_start(c) => self.word_or_path()?,
            other => {
                self.pos += other.len_utf8();
                Tok::Other
            }
        };
        Ok(Token {
            kind,
            start,
            end: self.pos,
        })
    }

    fn string(&mut self, quote: char) -> Result<Tok, FilterError> {
        let open = self.pos;
        self.pos += 1;
        let mut value = String::new();
        let mut escaped = false;
        loop {
            let Some(c) = self.peek_char() else {
                return Err(self.error(
                    self.src.len(),
                    format!(
                        "expected a closing {quote} for the string at column {}",
                        column_of(self.src, open)
                    ),
                ));
            };
            self.pos += c.len_utf8();
            if c == quote {
                return Ok(Tok::Str { value, escaped });
            }
            if c == '\\' {
                match self.peek_char() {
                    Some(e @ ('\\' | '\'' | '"')) => {
                        value.push(e);
                        escaped = true;
                        self.pos += 1;
                    }
                    _ => {
                        return Err(self.error(
                            self.pos - 1,
                            "expected \\, ' or \" after a backslash in a string",
                        ));
                    }
                }
            } else {
                value.push(c);
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Result<Tok, FilterError> {
        let start = self.pos;
        if self.peek_byte(0) == Some(b'-') {
            self.pos += 1;
            if !self.peek_byte(0).is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.error(self.pos, "expected a digit after '-'"));
            }
        }
        self.digits();
        let mut is_float = false;
        if self.peek_byte(0) == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error(self.pos, "expected a digit after '.' in a number"));
            }
            is_float = true;
        }
        if matches!(self.peek_byte(0), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.peek_byte(1), Some(b'+' | b'-')));
            if self.peek_byte(1 + sign).is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1 + sign;
                self.digits();
                is_float = true;
            }
        }
        if let Some(c) = self.peek_char()
            && (is_word_char(c) || c == '.')
        {
            let mut end = self.pos;
            for c in self.src[self.pos..].chars() {
                if !(is_word_char(c) || c == '.') {
                    break;
                }
                end += c.len_utf8();
            }
            return Err(self.error(
                start,
                format!(
                    "expected a number, found '{}'",
                    snippet(&self.src[start..end])
                ),
            ));
        }
        let text = &self.src[start..self.pos];
        if !is_float {
            let integer = if text.starts_with('-') {
                text.parse::<i64>().ok().map(Number::from)
            } else {
                text.parse::<u64>().ok().map(Number::from)
            };
            if let Some(n) = integer {
                return Ok(Tok::Num(n));
            }
        }
        // Integers beyond 64 bits become floats, as serde_json reads them.
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Tok::Num(n)),
            None => Err(FilterError {
                column: column_of(self.src, start),
                message: format!(
                    "expected a number within the range of a 64-bit float, found '{}'",
                    snippet(text)
                ),
                kind: FilterErrorKind::NumberOutOfRange,
            }),
        }
    }

    fn word(&mut self) -> &'s str {
        let start = self.pos;
        while self.peek_char().is_some_and(is_word_char) {
            self.pos += 1;
        }
        &self.src[start..self.pos]
    }

    fn word_or_path(&mut self) -> Result<Tok, FilterError> {
        let first = self.word();
        if !matches!(self.peek_byte(0), Some(b'.' | b'[')) {
            return Ok(Tok::Word);
        }
        let mut segments = vec![Segment::Field(first.into())];
        loop {
            match self.peek_byte(0) {
                Some(b'.') => {
                    self.pos += 1;
                    if !self.peek_char().is_some_and(is_word_start) {
                        return Err(self.error(self.pos, "expected a field name after '.'"));
                    }
                    segments.push(Segment::Field(self.word().into()));
                }
                Some(b'[') => {
                    self.pos += 1;
                    let from_end = self.peek_byte(0) == Some(b'#');
                    if from_end {
                        self.pos += 1;
                        if self.peek_byte(0) != Some(b'-') {
                            return Err(self.error(self.pos, "expected '-' after '#'"));
                        }
                        self.pos += 1;
                    }
                    let digits_at = self.pos;
                    if self.digits() == 0 {
                        let message = if from_end {
                            "expected a number after '#-'"
                        } else {
                            "expected an array index (a number or #-N) after '['"
                        };
                        return Err(self.error(digits_at, message));
                    }
                    let digits = &self.src[digits_at..self.pos];
                    let Ok(index) = digits.parse::<usize>() else {
                        return Err(self.error(
                            digits_at,
                            format!("expected an array index that fits in usize, found {digits}"),
                        ));
                    };
                    if from_end && index == 0 {
                        return Err(self.error(
                            digits_at,
                            "expected a number of at least 1 after '#-' ([#-1] is the last element)",
                        ));
                    }
                    if self.peek_byte(0) != Some(b']') {
                        return Err(self.error(self.pos, "expected ']' after the array index"));
                    }
                    self.pos += 1;
                    segments.push(if from_end {
                        Segment::FromEnd(index)
                    } else {
                        Segment::Index(index)
                    });
                }
                _ => return Ok(Tok::Path(Path::from_segments(segments))),
            }
        }
    }
}

/// At most 40 characters of `text`, with `…` when cut, for quoting in error messages.
pub(super) fn snippet(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
