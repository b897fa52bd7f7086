//! Recursive-descent parser: tokens → [`Expr`].
//!
//! ```text
//! expr       := or
//! or         := and ( OR and )*
//! and        := unary ( AND unary )*
//! unary      := '(' expr ')' | HAS FIELD path | HAS NOT FIELD path | comparison
//! comparison := path op literal | path [NOT] IN '(' literal (',' literal)* ')'
//!             | path [NOT] CONTAINS literal | path [NOT] GLOB string
//! ```
//!
//! Keywords are recognised by position, so fields may share their names (`in = 1`,
//! `has NOT IN (1)`). `HAS` starts a presence test only when followed by `FIELD` or
//! `NOT FIELD`. Depth is checked on every `(` before recursing, so no input can overflow the
//! stack; `AND`/`OR` chains are loops, not recursion.

use super::ast::{Expr, Literal, Path, Segment};
use super::error::{FilterError, FilterErrorKind, column_of};
use super::glob::GlobPattern;
use super::lexer::{Lexer, Tok, Token, snippet};
use super::limits::{MAX_DEPTH, MAX_FILTER_LEN, MAX_IN_VALUES};
use std::collections::VecDeque;

type Result<T> = std::result::Result<T, FilterError>;

/// Parses a whole filter.
pub(super) fn parse(src: &str) -> Result<Expr> {
    check_length(src)?;
    let mut parser = Parser::new(src);
    let expr = parser.or("")?;
    let next = parser.peek(0)?;
    if !matches!(next.kind, Tok::Eof) {
        return Err(parser.unexpected(&next, "expected AND, OR or the end of the filter"));
    }
    Ok(expr)
}

/// Parses exactly one path.
pub(super) fn parse_path(src: &str) -> Result<Path> {
    check_length(src)?;
    let mut parser = Parser::new(src);
    let token = parser.bump()?;
    let Some(path) = parser.path_of(&token) else {
        return Err(parser.unexpected(&token, "expected a field path"));
    };
    let next = parser.peek(0)?;
    if !matches!(next.kind, Tok::Eof) {
        return Err(parser.unexpected(&next, "expected the end of the path"));
    }
    Ok(path)
}

fn check_length(src: &str) -> Result<()> {
    if src.len() > MAX_FILTER_LEN {
        return Err(FilterError {
            column: column_of(src, MAX_FILTER_LEN),
            message: format!(
                "expected a filter of at most {MAX_FILTER_LEN} bytes, found {} bytes",
                src.len()
            ),
            kind: FilterErrorKind::TooLong {
                length: src.len(),
                limit: MAX_FILTER_LEN,
            },
        });
    }
    Ok(())
}

/// How a condition starts.
enum Start {
    Group,
    Word,
    Path,
    Other,
}

struct Parser<'s> {
    src: &'s str,
    lexer: Lexer<'s>,
    ahead: VecDeque<Token>,
    depth: usize,
}

impl<'s> Parser<'s> {
    fn new(src: &'s str) -> Self {
        Parser {
            src,
            lexer: Lexer::new(src),
            ahead: VecDeque::new(),
            depth: 0,
        }
    }

    /// Lexes until the token `n` places ahead (0 = next) is buffered.
    fn fill(&mut self, n: usize) -> Result<&Token> {
        while self.ahead.len() <= n {
            let token = self.lexer.next_token()?;
            self.ahead.push_back(token);
        }
        Ok(&self.ahead[n])
    }

    /// A copy of the token `n` places ahead.
    fn peek(&mut self, n: usize) -> Result<Token> {
        self.fill(n).cloned()
    }

    fn bump(&mut self) -> Result<Token> {
        self.fill(0)?;
        Ok(self
            .ahead
            .pop_front()
            .expect("peek(0) filled the lookahead"))
    }

    fn text(&self, token: &Token) -> &'s str {
        &self.src[token.start..token.end]
    }

    /// Whether the token `n` ahead is the keyword `kw` (any case).
    fn is_keyword(&mut self, n: usize, kw: &str) -> Result<bool> {
        let src = self.src;
        let token = self.fill(n)?;
        Ok(matches!(token.kind, Tok::Word) && src[token.start..token.end].eq_ignore_ascii_case(kw))
    }

    /// `expected …, found <token>` at the token's column (no "found" at the end of input).
    fn unexpected(&self, token: &Token, expected: &str) -> FilterError {
        let found = match &token.kind {
            Tok::Eof => String::new(),
            Tok::Str { .. } => format!(", found string {}", snippet(self.text(token))),
            Tok::Num(_) => format!(", found number {}", snippet(self.text(token))),
            _ => format!(", found '{}'", snippet(self.text(token))),
        };
        FilterError::syntax(
            column_of(self.src, token.start),
            format!("{expected}{found}"),
        )
    }

    fn path_of(&self, token: &Token) -> Option<Path> {
        match &token.kind {
            Tok::Word => Some(Path::from_segments(vec![Segment::Field(
                self.text(token).into(),
            )])),
            Tok::Path(path) => Some(path.clone()),
            _ => None,
        }
    }

    /// `or := and ( OR and )*`; `after` names what precedes, for messages.
    fn or(&mut self, after: &str) -> Result<Expr> {
        let first = self.and(after)?;
        if !self.is_keyword(0, "OR")? {
            return Ok(first);
        }
        let mut children = vec![first];
        while self.is_keyword(0, "OR")? {
            self.bump()?;
            children.push(self.and(" after 'OR'")?);
        }
        Ok(Expr::Or(children))
    }

    /// `and := unary ( AND unary )*`
    fn and(&mut self, after: &str) -> Result<Expr> {
        let first = self.unary(after)?;
        if !self.is_keyword(0, "AND")? {
            return Ok(first);
        }
        let mut children = vec![first];
        while self.is_keyword(0, "AND")? {
            self.bump()?;
            children.push(self.unary(" after 'AND'")?);
        }
        Ok(Expr::And(children))
    }

    fn unary(&mut self, after: &str) -> Result<Expr> {
        // Classify without cloning the token: this runs once per condition.
        let token = self.fill(0)?;
        let (start, end) = (token.start, token.end);
        let class = match token.kind {
            Tok::LParen => Start::Group,
            Tok::Word => Start::Word,
            Tok::Path(_) => Start::Path,
            _ => Start::Other,
        };
        let word = &self.src[start..end];
        match class {
            Start::Group => self.group(start),
            Start::Word if word.eq_ignore_ascii_case("HAS") => {
                if self.is_keyword(1, "FIELD")? {
                    self.bump()?;
                    self.bump()?;
                    let path = self.field_after("HAS FIELD")?;
                    Ok(Expr::HasField {
                        path,
                        negated: false,
                    })
                } else if self.is_keyword(1, "NOT")? && self.is_keyword(2, "FIELD")? {
                    self.bump()?;
                    self.bump()?;
                    self.bump()?;
                    let path = self.field_after("HAS NOT FIELD")?;
                    Ok(Expr::HasField {
                        path,
                        negated: true,
                    })
                } else {
                    self.comparison()
                }
            }
            Start::Word if word.eq_ignore_ascii_case("NOT") && !self.operator_at(1)? => {
                let token = self.peek(0)?;
                Err(self.unexpected(
                    &token,
                    &format!(
                        "expected a condition{after} (there is no prefix NOT: use !=, NOT IN, \
                         NOT CONTAINS, NOT GLOB or HAS NOT FIELD)"
                    ),
                ))
            }
            Start::Word | Start::Path => self.comparison(),
            Start::Other => {
                let token = self.peek(0)?;
                Err(self.unexpected(&token, &format!("expected a condition{after}")))
            }
        }
    }

    /// Whether the token `n` ahead can follow a field path (an operator or operator keyword).
    fn operator_at(&mut self, n: usize) -> Result<bool> {
        if matches!(self.fill(n)?.kind, Tok::Op(_)) {
            return Ok(true);
        }
        for kw in ["IN", "NOT", "CONTAINS", "GLOB"] {
            if self.is_keyword(n, kw)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `'(' expr ')'`, with the depth cap checked before recursing.
    fn group(&mut self, open: usize) -> Result<Expr> {
        if self.depth >= MAX_DEPTH {
            return Err(FilterError {
                column: column_of(self.src, open),
                message: format!("expected at most {MAX_DEPTH} levels of nested parentheses"),
                kind: FilterErrorKind::TooDeep { limit: MAX_DEPTH },
            });
        }
        self.bump()?;
        self.depth += 1;
        let inner = self.or(" after '('")?;
        self.depth -= 1;
        let close = self.bump()?;
        match close.kind {
            Tok::RParen => Ok(inner),
            Tok::Eof => Err(self.unexpected(
                &close,
                &format!(
                    "expected ')' to close the '(' at column {}",
                    column_of(self.src, open)
                ),
            )),
            _ => Err(self.unexpected(&close, "expected AND, OR or ')'")),
        }
    }

    fn field_after(&mut self, what: &str) -> Result<Path> {
        let token = self.bump()?;
        self.path_of(&token).ok_or_else(|| {
            self.unexpected(&token, &format!("expected a field name after '{what}'"))
        })
    }

    fn comparison(&mut self) -> Result<Expr> {
        let field = self.bump()?;
        let field_text = &self.src[field.start..field.end];
        let path = match field.kind {
            Tok::Path(path) => path,
            Tok::Word => Path::from_segments(vec![Segment::Field(field_text.into())]),
            _ => unreachable!("unary() calls comparison() on a word or path only"),
        };
        let token = self.bump()?;
        if let Tok::Op(op) = token.kind {
            let value = self.literal(op.as_str())?;
            if op.is_ordering() && !matches!(value.1, Literal::Number(_)) {
                return Err(self.unexpected(
                    &value.0,
                    &format!("expected a number after '{}'", op.as_str()),
                ));
            }
            return Ok(Expr::Compare {
                path,
                op,
                value: value.1,
            });
        }
        let negated = self.is_word(&token, "NOT");
        let keyword = if negated { self.bump()? } else { token.clone() };
        if self.is_word(&keyword, "IN") {
            let values = self.in_list()?.into();
            Ok(Expr::In {
                path,
                negated,
                values,
            })
        } else if self.is_word(&keyword, "CONTAINS") {
            let value = self.literal("CONTAINS")?.1;
            Ok(Expr::Contains {
                path,
                negated,
                value,
            })
        } else if self.is_word(&keyword, "GLOB") {
            let pattern = self.glob()?;
            Ok(Expr::Glob {
                path,
                negated,
                pattern,
            })
        } else if negated {
            Err(self.unexpected(&keyword, "expected IN, CONTAINS or GLOB after 'NOT'"))
        } else {
            Err(self.unexpected(
                &token,
                &format!(
                    "expected an operator (=, !=, <, <=, >, >=, IN, CONTAINS, GLOB or NOT …) \
                     after '{}'",
                    snippet(field_text)
                ),
            ))
        }
    }

    fn is_word(&self, token: &Token, kw: &str) -> bool {
        matches!(token.kind, Tok::Word) && self.text(token).eq_ignore_ascii_case(kw)
    }

    /// A literal after `after` (`'='`, `CONTAINS`, …); returns its token for messages.
    fn literal(&mut self, after: &str) -> Result<(Token, Literal)> {
        let mut token = self.bump()?;
        let text = &self.src[token.start..token.end];
        let literal = match &mut token.kind {
            // Moved out: messages quote the source text, not the value.
            Tok::Str { value, .. } => Literal::String(std::mem::take(value)),
            Tok::Num(n) => Literal::Number(n.clone()),
            Tok::Word if text.eq_ignore_ascii_case("true") => Literal::Bool(true),
            Tok::Word if text.eq_ignore_ascii_case("false") => Literal::Bool(false),
            Tok::Word | Tok::Path(_) => {
                return Err(FilterError::syntax(
                    column_of(self.src, token.start),
                    format!(
                        "expected a value after '{after}', found bare word '{}' \
                         (quote strings: '…')",
                        snippet(self.text(&token))
                    ),
                ));
            }
            _ => {
                return Err(self.unexpected(&token, &format!("expected a value after '{after}'")));
            }
        };
        Ok((token, literal))
    }

    /// `'(' literal (',' literal)* ')'` after `IN`.
    fn in_list(&mut self) -> Result<Vec<Literal>> {
        let open = self.bump()?;
        if !matches!(open.kind, Tok::LParen) {
            return Err(self.unexpected(&open, "expected '(' after 'IN'"));
        }
        let mut values = vec![self.literal("(")?.1];
        loop {
            let token = self.bump()?;
            match token.kind {
                Tok::RParen => return Ok(values),
                Tok::Comma => {
                    let (token, value) = self.literal(",")?;
                    if values.len() == MAX_IN_VALUES {
                        return Err(FilterError {
                            column: column_of(self.src, token.start),
                            message: format!(
                                "expected at most {MAX_IN_VALUES} values in an IN list"
                            ),
                            kind: FilterErrorKind::TooManyValues {
                                limit: MAX_IN_VALUES,
                            },
                        });
                    }
                    values.push(value);
                }
                _ => return Err(self.unexpected(&token, "expected ',' or ')' in the IN list")),
            }
        }
    }

    /// The quoted pattern after `GLOB`, compiled.
    fn glob(&mut self) -> Result<GlobPattern> {
        let token = self.bump()?;
        let Tok::Str { value, escaped } = &token.kind else {
            let message = if matches!(token.kind, Tok::Word | Tok::Path(_)) {
                format!(
                    "expected a quoted pattern after 'GLOB', found bare word '{}'",
                    snippet(self.text(&token))
                )
            } else {
                return Err(self.unexpected(&token, "expected a quoted pattern after 'GLOB'"));
            };
            return Err(FilterError::syntax(
                column_of(self.src, token.start),
                message,
            ));
        };
        GlobPattern::new(value).map_err(|e| {
            // Map the offset in the unescaped pattern back to a column in the source.
            let raw = &self.src[token.start + 1..token.end];
            let mut chars = raw.chars();
            let mut raw_chars = 0;
            for _ in 0..e.offset {
                if chars.next() == Some('\\') && *escaped {
                    chars.next();
                    raw_chars += 1;
                }
                raw_chars += 1;
            }
            FilterError {
                column: column_of(self.src, token.start) + 1 + raw_chars,
                message: format!("{} in the GLOB pattern", e.message),
                kind: FilterErrorKind::InvalidGlob,
            }
        })
    }
}
