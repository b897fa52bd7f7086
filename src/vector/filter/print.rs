//! Canonical printing: `Display` for the AST, such that parsing the output gives the same AST.
//!
//! Canonical form: keywords upper-case, one space around operators and keywords, strings in
//! single quotes (escaping `'` and `\`), booleans `true`/`false`, integers as written without
//! leading zeros, floats in shortest round-trip decimal form and always with a `.` (`2.0`, so
//! they re-parse as floats), `IN` lists as `(a, b)`. Parentheses appear only where the tree
//! needs them: around an `OR` inside an `AND`, and around an `AND`/`OR` nested directly in
//! one of the same kind (explicit grouping the parser keeps).

use super::ast::{CompareOp, Expr, Literal, Path, Segment};
use std::fmt::{self, Display, Formatter, Write};

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::And(children) => join(f, children, " AND ", |c| {
                matches!(c, Expr::And(_) | Expr::Or(_))
            }),
            Expr::Or(children) => join(f, children, " OR ", |c| matches!(c, Expr::Or(_))),
            Expr::Compare { path, op, value } => write!(f, "{path} {op} {value}"),
            Expr::In {
                path,
                negated,
                values,
            } => {
                write!(f, "{path} {}IN (", not(*negated))?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{value}")?;
                }
                f.write_char(')')
            }
            Expr::Contains {
                path,
                negated,
                value,
            } => {
                write!(f, "{path} {}CONTAINS {value}", not(*negated))
            }
            Expr::Glob {
                path,
                negated,
                pattern,
            } => {
                write!(f, "{path} {}GLOB ", not(*negated))?;
                quoted(f, pattern.as_str())
            }
            Expr::HasField { path, negated } => write!(f, "HAS {}FIELD {path}", not(*negated)),
        }
    }
}

fn not(negated: bool) -> &'static str {
    if negated { "NOT " } else { "" }
}

fn join(
    f: &mut Formatter<'_>,
    children: &[Expr],
    separator: &str,
    needs_parens: impl Fn(&Expr) -> bool,
) -> fmt::Result {
    for (i, child) in children.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        if needs_parens(child) {
            write!(f, "({child})")?;
        } else {
            write!(f, "{child}")?;
        }
    }
    Ok(())
}

fn quoted(f: &mut Formatter<'_>, text: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in text.chars() {
        if c == '\'' || c == '\\' {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('\'')
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => quoted(f, s),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Number(n) => match n.as_f64() {
                Some(x) if n.is_f64() => {
                    // Rust prints the shortest round-trip decimal, never an exponent.
                    let text = x.to_string();
                    f.write_str(&text)?;
                    if text.contains('.') {
                        Ok(())
                    } else {
                        f.write_str(".0")
                    }
                }
                _ => write!(f, "{n}"),
            },
        }
    }
}

impl Display for CompareOp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Display for Path {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments().iter().enumerate() {
            match segment {
                Segment::Field(name) if i == 0 => f.write_str(name)?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::FromEnd(k) => write!(f, "[#-{k}]")?,
            }
        }
        Ok(())
    }
}
