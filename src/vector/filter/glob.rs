//! `GLOB` patterns: compiled once at parse time, matched in `O(pattern × text)` time.
//!
//! Syntax (the reference service's UNIX-style glob, case-sensitive):
//! - `*` matches any run of characters, including none (no special treatment of `/`);
//! - `?` matches exactly one character (a Unicode scalar value, not a byte);
//! - `[abc]` one of the listed characters, `[a-z]` one in the inclusive range,
//!   `[^…]` any one character *not* in the class; classes may mix both (`[a-cx_]`);
//! - inside a class, a `]` right after `[` or `[^` is a literal `]`, and a `-` first or last is
//!   a literal `-`; outside a class `]` is an ordinary character;
//! - every other character matches itself. There is no escape character in patterns (a
//!   backslash in the filter string only escapes the quote and itself); write `[*]`, `[?]` or
//!   `[[]` to match those characters literally.
//!
//! Decisions the reference leaves open: an unclosed `[` and a reversed range such as `[z-a]`
//! are errors at parse time (rather than silently matching nothing), and `[!…]` is not a
//! negation (the reference documents only `^`), so `[!a]` matches `!` or `a`.
//!
//! Matching uses the classic single-backtrack-point algorithm: every token other than `*`
//! matches a fixed piece of text, so only the most recent `*` ever needs to absorb more
//! characters. Worst case is `O(pattern × text)` steps, with no recursion and no allocation;
//! patterns like `*a*a*a*a*b` cannot blow up the way naive backtracking does. Two shortcuts
//! keep common patterns near `memchr` speed: a trailing literal is checked with `ends_with`
//! first, and a star followed by a literal jumps to the literal's next occurrence (`find`)
//! instead of absorbing one character at a time.

use std::fmt;

/// A compiled `GLOB` pattern.
///
/// Two patterns are equal when their source text is equal.
///
/// # Examples
/// ```
/// use flowvec::vector::filter::GlobPattern;
///
/// let pattern = GlobPattern::new("?[sz]*[^m-z]").unwrap();
/// assert!(pattern.matches("Istanbul")); // 's' second, ends in 'l' (before 'm')
/// assert!(!pattern.matches("Izmir")); // ends in 'r', inside m-z
/// assert!(!pattern.matches("Ankara")); // second character is 'n'
/// ```
#[derive(Clone)]
pub struct GlobPattern {
    source: Box<str>,
    tokens: Box<[Token]>,
}

/// A malformed glob pattern: the 0-based character offset in the pattern and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at pattern character {offset}")]
pub struct GlobError {
    /// 0-based offset, in characters, into the pattern.
    pub offset: usize,
    /// What is wrong, e.g. `expected ']' to close the character class`.
    pub message: String,
}

#[derive(Debug, Clone)]
enum Token {
    /// A run of ordinary characters, matched byte for byte.
    Literal(Box<str>),
    /// `?`
    Any,
    /// `*` (consecutive stars are merged)
    Star,
    /// `[…]`: inclusive ranges; a single character `c` is `(c, c)`.
    Class {
        negated: bool,
        ranges: Box<[(char, char)]>,
    },
}

impl GlobPattern {
    /// Compiles a pattern.
    ///
    /// # Errors
    /// [`GlobError`] for an unclosed `[` or a reversed range like `[z-a]`.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::GlobPattern;
    ///
    /// assert!(GlobPattern::new("[a-z]*").is_ok());
    /// assert_eq!(GlobPattern::new("ab[cd").unwrap_err().offset, 2);
    /// ```
    pub fn new(source: &str) -> Result<GlobPattern, GlobError> {
        let chars: Vec<char> = source.chars().collect();
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '*' | '?' | '[' if !literal.is_empty() => {
                    tokens.push(Token::Literal(
                        std::mem::take(&mut literal).into_boxed_str(),
                    ));
                    continue;
                }
                '*' => {
                    if !matches!(tokens.last(), Some(Token::Star)) {
                        tokens.push(Token::Star);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::Any);
                    i += 1;
                }
                '[' => {
                    let (token, next) = parse_class(&chars, i)?;
                    tokens.push(token);
                    i = next;
                }
                _ => {
                    literal.push(c);
                    i += 1;
                }
            }
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal.into_boxed_str()));
        }
        Ok(GlobPattern {
            source: source.into(),
            tokens: tokens.into_boxed_slice(),
        })
    }

    /// The pattern as written (after string-literal unescaping).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `text` matches the whole pattern. No allocation; `O(pattern × text)` worst case.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::filter::GlobPattern;
    ///
    /// let p = GlobPattern::new("*imgur.com*").unwrap();
    /// assert!(p.matches("https://imgur.com/z9AVZLb"));
    /// assert!(!p.matches("https://IMGUR.com/z9AVZLb"));
    /// ```
    #[must_use]
    pub fn matches(&self, text: &str) -> bool {
        let tokens = &self.tokens;
        // A trailing literal must end the text: reject most non-matches without scanning.
        if let Some(Token::Literal(last)) = tokens.last()
            && !text.ends_with(&**last)
        {
            return false;
        }
        let (mut p, mut t) = (0usize, 0usize);
        // The token after the most recent `*`, and where in `text` that star's absorption ends.
        let mut resume: Option<(usize, usize)> = None;
        loop {
            if let Some(token) = tokens.get(p) {
                let rest = &text[t..];
                let advanced = match token {
                    Token::Star => {
                        resume = Some((p + 1, t));
                        p += 1;
                        continue;
                    }
                    Token::Literal(lit) => rest.starts_with(&**lit).then_some(lit.len()),
                    Token::Any => rest.chars().next().map(char::len_utf8),
                    Token::Class { negated, ranges } => rest.chars().next().and_then(|c| {
                        let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                        (inside != *negated).then_some(c.len_utf8())
                    }),
                };
                if let Some(len) = advanced {
                    t += len;
                    p += 1;
                    continue;
                }
            } else if t == text.len() {
                return true;
            }
            // Mismatch: let the last star absorb one more character and retry after it.
            let Some((after_star, absorbed_to)) = resume else {
                return false;
            };
            let Some(c) = text[absorbed_to..].chars().next() else {
                return false;
            };
            let mut next = absorbed_to + c.len_utf8();
            // When a literal follows the star, jump straight to its next occurrence: every
            // position before it would fail on the literal anyway.
            if let Some(Token::Literal(lit)) = tokens.get(after_star) {
                match text[next..].find(&**lit) {
                    Some(offset) => next += offset,
                    None => return false,
                }
            }
            resume = Some((after_star, next));
            p = after_star;
            t = next;
        }
    }

    /// The literal text every match must start with (empty when the pattern starts with a
    /// wildcard); a value index can turn `GLOB 'abc*'` into a prefix range scan.
    #[must_use]
    pub fn literal_prefix(&self) -> &str {
        match self.tokens.first() {
            Some(Token::Literal(lit)) => lit,
            _ => "",
        }
    }
}

/// Parses the class starting at `chars[open] == '['`; returns the token and the index after `]`.
fn parse_class(chars: &[char], open: usize) -> Result<(Token, usize), GlobError> {
    let unclosed = || GlobError {
        offset: open,
        message: "expected ']' to close the character class".to_owned(),
    };
    let mut i = open + 1;
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let first = i;
    loop {
        let &c = chars.get(i).ok_or_else(unclosed)?;
        if c == ']' && i > first {
            i += 1;
            break;
        }
        // `c-d` is a range unless the `-` is the last character before `]`.
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&d| d != ']') {
            let d = chars[i + 2];
            if d < c {
                return Err(GlobError {
                    offset: i,
                    message: format!("expected a range from low to high, found '{c}-{d}'"),
                });
            }
            ranges.push((c, d));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    Ok((
        Token::Class {
            negated,
            ranges: ranges.into_boxed_slice(),
        },
        i,
    ))
}

impl PartialEq for GlobPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for GlobPattern {}

impl fmt::Debug for GlobPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("GlobPattern").field(&self.source).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        GlobPattern::new(pattern).unwrap().matches(text)
    }

    #[test]
    fn wildcards_and_classes() {
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("?", "é"));
        assert!(!m("??", "é"));
        assert!(m("[]]", "]"));
        assert!(m("[^]]", "a"));
        assert!(!m("[^]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("[-a]", "-"));
        assert!(m("[!a]", "!"));
        assert!(m("a]", "a]"));
        assert!(m("[*]", "*"));
        assert!(!m("[*]", "x"));
    }

    #[test]
    fn reference_example() {
        // Second character s or z, last character not in m-z.
        assert!(m("?[sz]*[^m-z]", "Osaka"));
        assert!(m("?[sz]*[^m-z]", "Istanbul"));
        assert!(!m("?[sz]*[^m-z]", "Izmir"));
        assert!(!m("?[sz]*[^m-z]", "Ankara"));
    }

    #[test]
    fn pathological_pattern_stays_fast() {
        let text = "a".repeat(10_000);
        // Exponential for naive backtracking; quadratic at worst here.
        assert!(!m("*a*a*a*a*a*a*a*a*a*b", &text));
    }

    #[test]
    fn errors_point_at_the_problem() {
        assert_eq!(GlobPattern::new("ab[").unwrap_err().offset, 2);
        assert_eq!(GlobPattern::new("x[^").unwrap_err().offset, 1);
        assert_eq!(GlobPattern::new("[]").unwrap_err().offset, 0);
        let reversed = GlobPattern::new("a[z-a]").unwrap_err();
        assert_eq!(reversed.offset, 2);
        assert_eq!(
            reversed.message,
            "expected a range from low to high, found 'z-a'"
        );
    }

    #[test]
    fn literal_prefix() {
        assert_eq!(GlobPattern::new("abc*d").unwrap().literal_prefix(), "abc");
        assert_eq!(GlobPattern::new("*abc").unwrap().literal_prefix(), "");
    }
}
