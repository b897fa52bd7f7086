//! `Upstash-Retry-Delay`: a publisher's own delay between retries, as an arithmetic expression
//! of `retried` (how many retries were made before this one: 0 before the first), in
//! milliseconds. The reference's functions are supported: `pow`, `sqrt`, `abs`, `exp`,
//! `floor`, `ceil`, `round`, `min`, `max` (these two take one or more arguments), with `+`,
//! `-`, `*`, `/`, unary minus and parentheses.
//!
//! The expression is checked when the message is published (a bad one is a 400 naming the
//! header) and kept as text on the [`Message`](super::Message); the host evaluates it when a
//! delivery fails, to choose the `retry_at` it logs, so the state machine stays deterministic
//! whatever the float functions of the host's platform return. A result that is negative or
//! not a number counts as 0, and every delay is capped at one day, as the reference caps its
//! own backoff.
//!
//! # Examples
//! ```
//! use flowvec::wire::RetryDelay;
//! let linear = RetryDelay::parse("1000 * (1 + retried)")?;
//! assert_eq!((0..4).map(|r| linear.delay_ms(r)).collect::<Vec<_>>(), [1000, 2000, 3000, 4000]);
//! let exponential = RetryDelay::parse("max(1000, pow(2, retried) * 100)")?;
//! assert_eq!(exponential.delay_ms(5), 3200);
//! assert!(RetryDelay::parse("pow(2, tries)").is_err());
//! # Ok::<(), flowvec::wire::RetryDelayError>(())
//! ```

/// The longest delay an expression can ask for: one day, in ms.
pub const MAX_RETRY_DELAY_MS: u64 = 86_400_000;
/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 1_000;
/// The deepest nesting of parentheses, calls and unary signs accepted.
const MAX_DEPTH: usize = 64;

/// A parsed `Upstash-Retry-Delay` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryDelay {
    root: Node,
}

/// Why an expression was refused: what was found where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct RetryDelayError {
    problem: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Number(f64),
    Retried,
    Negate(Box<Node>),
    Binary(Op, Box<Node>, Box<Node>),
    Call(Function, Vec<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Function {
    Pow,
    Sqrt,
    Abs,
    Exp,
    Floor,
    Ceil,
    Round,
    Min,
    Max,
}

impl Function {
    fn named(name: &str) -> Option<Function> {
        Some(match name {
            "pow" => Function::Pow,
            "sqrt" => Function::Sqrt,
            "abs" => Function::Abs,
            "exp" => Function::Exp,
            "floor" => Function::Floor,
            "ceil" => Function::Ceil,
            "round" => Function::Round,
            "min" => Function::Min,
            "max" => Function::Max,
            _ => return None,
        })
    }

    /// The number of arguments it takes: exactly `.0`, or at least `.0` when `.1`.
    fn arity(self) -> (usize, bool) {
        match self {
            Function::Pow => (2, false),
            Function::Min | Function::Max => (1, true),
            _ => (1, false),
        }
    }

    fn apply(self, args: &[f64]) -> f64 {
        match self {
            Function::Pow => args[0].powf(args[1]),
            Function::Sqrt => args[0].sqrt(),
            Function::Abs => args[0].abs(),
            Function::Exp => args[0].exp(),
            Function::Floor => args[0].floor(),
            Function::Ceil => args[0].ceil(),
            Function::Round => args[0].round(),
            Function::Min => args.iter().copied().fold(f64::INFINITY, f64::min),
            Function::Max => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

impl RetryDelay {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`RetryDelayError`] naming the offending token and its byte offset, and what was
    /// expected there: an unknown name or function, a wrong number of arguments, an unclosed
    /// parenthesis, trailing text, an empty or over-long expression, or nesting deeper than
    /// 64.
    pub fn parse(text: &str) -> Result<RetryDelay, RetryDelayError> {
        if text.len() > MAX_EXPRESSION_LEN {
            return Err(RetryDelayError {
                problem: format!(
                    "the expression is {} bytes long; at most {MAX_EXPRESSION_LEN} are accepted",
                    text.len()
                ),
            });
        }
        let mut parser = Parser {
            text,
            at: 0,
            depth: 0,
        };
        let root = parser.sum()?;
        parser.skip_space();
        if parser.at < text.len() {
            return Err(parser.unexpected("an operator (+ - * /) or the end"));
        }
        Ok(RetryDelay { root })
    }

    /// The delay before the retry that follows `retried` earlier ones, in ms: the expression's
    /// value rounded down, 0 if it is negative or not a number, at most one day.
    #[must_use]
    pub fn delay_ms(&self, retried: u32) -> u64 {
        let value = eval(&self.root, f64::from(retried));
        if value.is_nan() || value <= 0.0 {
            0
        } else {
            // `as` saturates; the cap is far below u64::MAX.
            (value as u64).min(MAX_RETRY_DELAY_MS)
        }
    }
}

fn eval(node: &Node, retried: f64) -> f64 {
    match node {
        Node::Number(n) => *n,
        Node::Retried => retried,
        Node::Negate(inner) => -eval(inner, retried),
        Node::Binary(op, a, b) => {
            let (a, b) = (eval(a, retried), eval(b, retried));
            match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
            }
        }
        Node::Call(function, args) => {
            let values: Vec<f64> = args.iter().map(|a| eval(a, retried)).collect();
            function.apply(&values)
        }
    }
}

/// A recursive-descent parser over the expression's bytes (every token is ASCII; any other
/// byte is refused where it stands).
struct Parser<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self
            .text
            .as_bytes()
            .get(self.at)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.as_bytes().get(self.at).copied()
    }

    /// The error for what stands at the current position.
    fn unexpected(&self, expected: &str) -> RetryDelayError {
        let rest = &self.text[self.at..];
        let found = match rest.chars().next() {
            None => "the end of the expression".to_owned(),
            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '.' => {
                let token: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                    .collect();
                format!("{token:?} at byte {}", self.at)
            }
            Some(c) => format!("{c:?} at byte {}", self.at),
        };
        RetryDelayError {
            problem: format!("found {found}; expected {expected}"),
        }
    }

    /// Runs `inner` one nesting level deeper; refused past `MAX_DEPTH`.
    fn nested<T>(
        &mut self,
        inner: impl FnOnce(&mut Self) -> Result<T, RetryDelayError>,
    ) -> Result<T, RetryDelayError> {
        if self.depth == MAX_DEPTH {
            return Err(RetryDelayError {
                problem: format!(
                    "the expression nests deeper than {MAX_DEPTH} levels at byte {}",
                    self.at
                ),
            });
        }
        self.depth += 1;
        let result = inner(self);
        self.depth -= 1;
        result
    }

    /// `product (('+' | '-') product)*`
    fn sum(&mut self) -> Result<Node, RetryDelayError> {
        self.left_to_right([(b'+', Op::Add), (b'-', Op::Sub)], Self::product)
    }

    /// `unary (('*' | '/') unary)*`
    fn product(&mut self) -> Result<Node, RetryDelayError> {
        self.left_to_right([(b'*', Op::Mul), (b'/', Op::Div)], Self::unary)
    }

    /// `operand (op operand)*` for the two operators of one strength, grouped from the left.
    fn left_to_right(
        &mut self,
        ops: [(u8, Op); 2],
        operand: fn(&mut Self) -> Result<Node, RetryDelayError>,
    ) -> Result<Node, RetryDelayError> {
        let mut left = operand(self)?;
        loop {
            let next = self.peek();
            let Some(&(_, op)) = ops.iter().find(|(byte, _)| Some(*byte) == next) else {
                return Ok(left);
            };
            self.at += 1;
            let right = operand(self)?;
            left = Node::Binary(op, Box::new(left), Box::new(right));
        }
    }

    /// `('-' | '+') unary | primary`
    fn unary(&mut self) -> Result<Node, RetryDelayError> {
        match self.peek() {
            Some(sign @ (b'-' | b'+')) => {
                self.at += 1;
                let inner = self.nested(Self::unary)?;
                Ok(if sign == b'-' {
                    Node::Negate(Box::new(inner))
                } else {
                    inner
                })
            }
            _ => self.primary(),
        }
    }

    /// A number, `retried`, a call, or a parenthesised expression.
    fn primary(&mut self) -> Result<Node, RetryDelayError> {
        const EXPECTED: &str =
            "a number, retried, a function call (pow sqrt abs exp floor ceil round min max) or (";
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let inner = self.nested(Self::sum)?;
                self.close()?;
                Ok(inner)
            }
            Some(b) if b.is_ascii_digit() || b == b'.' => self.number(),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                let start = self.at;
                let len = self.text[start..]
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                let name = &self.text[start..start + len];
                if name == "retried" {
                    self.at += len;
                    return Ok(Node::Retried);
                }
                let Some(function) = Function::named(name) else {
                    return Err(self.unexpected(EXPECTED));
                };
                self.at += len;
                self.call(function, name, start)
            }
            _ => Err(self.unexpected(EXPECTED)),
        }
    }

    fn number(&mut self) -> Result<Node, RetryDelayError> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
            end += 1;
        }
        // An exponent: `1e3`, `2.5E-1`.
        if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
            let mut e = end + 1;
            if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
                e += 1;
            }
            if e < bytes.len() && bytes[e].is_ascii_digit() {
                while e < bytes.len() && bytes[e].is_ascii_digit() {
                    e += 1;
                }
                end = e;
            }
        }
        match self.text[start..end].parse::<f64>() {
            Ok(n) if n.is_finite() => {
                self.at = end;
                Ok(Node::Number(n))
            }
            _ => Err(RetryDelayError {
                problem: format!(
                    "found {:?} at byte {start}; expected a finite number such as 1000 or 2.5",
                    &self.text[start..end]
                ),
            }),
        }
    }

    /// The arguments of `function` (its name already read at `start`).
    fn call(
        &mut self,
        function: Function,
        name: &str,
        start: usize,
    ) -> Result<Node, RetryDelayError> {
        if self.peek() != Some(b'(') {
            return Err(self.unexpected(&format!("( after the function {name}")));
        }
        self.at += 1;
        let args = self.nested(|p| {
            let mut args = Vec::new();
            if p.peek() != Some(b')') {
                loop {
                    args.push(p.sum()?);
                    if p.peek() == Some(b',') {
                        p.at += 1;
                    } else {
                        break;
                    }
                }
            }
            Ok(args)
        })?;
        self.close()?;
        let (want, or_more) = function.arity();
        if args.len() < want || (!or_more && args.len() > want) {
            return Err(RetryDelayError {
                problem: format!(
                    "{name} at byte {start} was given {} argument(s); it takes {}{want}",
                    args.len(),
                    if or_more { "at least " } else { "" }
                ),
            });
        }
        Ok(Node::Call(function, args))
    }

    fn close(&mut self) -> Result<(), RetryDelayError> {
        if self.peek() == Some(b')') {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected("an operator, a comma between arguments, or )"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An expression as the oracle sees it: built directly, printed with the fewest
    /// parentheses the grammar needs, evaluated without the parser.
    #[derive(Debug, Clone)]
    enum Expr {
        Number(f64),
        Retried,
        Negate(Box<Expr>),
        Binary(char, Box<Expr>, Box<Expr>),
        Call(&'static str, Vec<Expr>),
    }

    impl Expr {
        /// Binding strength: sums 1, products 2, unary minus 3, atoms 4.
        fn strength(&self) -> u8 {
            match self {
                Expr::Binary('+' | '-', ..) => 1,
                Expr::Binary(..) => 2,
                Expr::Negate(_) => 3,
                _ => 4,
            }
        }

        fn render(&self, out: &mut String) {
            let wrapped = |e: &Expr, parens: bool, out: &mut String| {
                if parens {
                    out.push('(');
                }
                e.render(out);
                if parens {
                    out.push(')');
                }
            };
            match self {
                Expr::Number(n) => out.push_str(&n.to_string()),
                Expr::Retried => out.push_str("retried"),
                Expr::Negate(e) => {
                    out.push('-');
                    wrapped(e, e.strength() < 3, out);
                }
                Expr::Binary(op, a, b) => {
                    let own = self.strength();
                    // Left-associative: an equal right operand keeps its parentheses.
                    wrapped(a, a.strength() < own, out);
                    out.push_str(&format!(" {op} "));
                    wrapped(b, b.strength() <= own, out);
                }
                Expr::Call(name, args) => {
                    out.push_str(name);
                    out.push('(');
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        a.render(out);
                    }
                    out.push(')');
                }
            }
        }

        fn value(&self, retried: f64) -> f64 {
            match self {
                Expr::Number(n) => *n,
                Expr::Retried => retried,
                Expr::Negate(e) => -e.value(retried),
                Expr::Binary(op, a, b) => {
                    let (a, b) = (a.value(retried), b.value(retried));
                    match op {
                        '+' => a + b,
                        '-' => a - b,
                        '*' => a * b,
                        _ => a / b,
                    }
                }
                Expr::Call(name, args) => {
                    let v: Vec<f64> = args.iter().map(|a| a.value(retried)).collect();
                    match *name {
                        "pow" => v[0].powf(v[1]),
                        "sqrt" => v[0].sqrt(),
                        "abs" => v[0].abs(),
                        "exp" => v[0].exp(),
                        "floor" => v[0].floor(),
                        "ceil" => v[0].ceil(),
                        "round" => v[0].round(),
                        "min" => v.iter().copied().fold(f64::INFINITY, f64::min),
                        _ => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    }
                }
            }
        }
    }

    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            (0u32..100_000, 0u32..4).prop_map(|(n, scale)| {
                Expr::Number(f64::from(n) / f64::from(10u32.pow(scale)))
            }),
            Just(Expr::Retried),
        ];
        leaf.prop_recursive(5, 40, 3, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Negate(Box::new(e))),
                (
                    prop::sample::select(vec!['+', '-', '*', '/']),
                    inner.clone(),
                    inner.clone()
                )
                    .prop_map(|(op, a, b)| Expr::Binary(
                        op,
                        Box::new(a),
                        Box::new(b)
                    )),
                (
                    prop::sample::select(vec!["sqrt", "abs", "exp", "floor", "ceil", "round"]),
                    inner.clone()
                )
                    .prop_map(|(f, a)| Expr::Call(f, vec![a])),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Call("pow", vec![a, b])),
                (
                    prop::sample::select(vec!["min", "max"]),
                    prop::collection::vec(inner, 1..4)
                )
                    .prop_map(|(f, args)| Expr::Call(f, args)),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x4E7_4D1A),
            ..ProptestConfig::default()
        })]

        /// Printed with the fewest parentheses, every expression parses back to the value the
        /// oracle computes, bit for bit, for several `retried`; the delay is that value
        /// floored and clamped.
        #[test]
        fn parsing_agrees_with_direct_evaluation(e in expr()) {
            let mut text = String::new();
            e.render(&mut text);
            prop_assume!(text.len() <= MAX_EXPRESSION_LEN);
            let parsed = RetryDelay::parse(&text).map_err(|err| TestCaseError::fail(format!("{text:?}: {err}")))?;
            for retried in [0u32, 1, 2, 5, 30] {
                let want = e.value(f64::from(retried));
                let got = eval(&parsed.root, f64::from(retried));
                prop_assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{text:?} at retried {retried}: parsed {got}, oracle {want}"
                );
                let clamped = if want.is_nan() || want <= 0.0 { 0 } else { (want as u64).min(MAX_RETRY_DELAY_MS) };
                prop_assert_eq!(parsed.delay_ms(retried), clamped);
            }
        }
    }

    fn delays(text: &str, upto: u32) -> Vec<u64> {
        let e = RetryDelay::parse(text).unwrap();
        (0..upto).map(|r| e.delay_ms(r)).collect()
    }

    #[test]
    fn the_reference_examples_give_the_documented_delays() {
        assert_eq!(delays("1000", 3), [1000, 1000, 1000]);
        assert_eq!(delays("1000 * (1 + retried)", 4), [1000, 2000, 3000, 4000]);
        assert_eq!(
            delays("pow(2, retried) * 1000", 4),
            [1000, 2000, 4000, 8000]
        );
        assert_eq!(
            delays("max(1000, pow(2, retried) * 100)", 6),
            [1000, 1000, 1000, 1000, 1600, 3200]
        );
    }

    #[test]
    fn precedence_signs_and_every_function() {
        assert_eq!(delays("2 + 3 * 4 - 10 / 5", 1), [12]);
        assert_eq!(delays("(2 + 3) * 4", 1), [20]);
        assert_eq!(delays("10 - 2 - 3", 1), [5], "left to right");
        assert_eq!(delays("100 / 10 / 2", 1), [5], "left to right");
        assert_eq!(delays("-(-5) * +2", 1), [10]);
        assert_eq!(delays("--3", 1), [3]);
        assert_eq!(
            delays(
                "sqrt(16) + abs(-3) + floor(2.7) + ceil(2.2) + round(2.5)",
                1
            ),
            [15]
        );
        assert_eq!(delays("exp(0) + min(4, 2, 3) + max(1)", 1), [4]);
        assert_eq!(delays("1e3 + 2.5E1 + .5 * 2", 1), [1026]);
        assert_eq!(delays(" retried*retried ", 4), [0, 1, 4, 9]);
    }

    #[test]
    fn results_outside_zero_to_a_day_are_clamped() {
        assert_eq!(delays("0 - 1000", 1), [0], "negative");
        assert_eq!(delays("sqrt(-1)", 1), [0], "not a number");
        assert_eq!(delays("1 / 0", 1), [MAX_RETRY_DELAY_MS], "infinite");
        assert_eq!(delays("0 / 0", 1), [0], "0/0 is not a number");
        assert_eq!(
            delays("pow(10, retried)", 12)[11],
            MAX_RETRY_DELAY_MS,
            "capped at a day"
        );
        assert_eq!(delays("999.9", 1), [999], "rounded down");
        let big = RetryDelay::parse("pow(2, retried)").unwrap();
        assert_eq!(big.delay_ms(u32::MAX), MAX_RETRY_DELAY_MS);
    }

    #[test]
    fn bad_expressions_name_what_was_found_and_what_was_expected() {
        for (text, found, expected) in [
            ("", "the end of the expression", "a number"),
            ("pow(2, tries)", "\"tries\" at byte 7", "retried"),
            ("2 ^ retried", "'^' at byte 2", "an operator"),
            ("(1 + 2", "the end of the expression", ")"),
            ("1 +", "the end of the expression", "a number"),
            ("1000 1000", "\"1000\" at byte 5", "the end"),
            ("pow 2", "\"2\" at byte 4", "( after the function pow"),
            ("1..2", "\"1..2\" at byte 0", "a finite number"),
            ("1e999", "\"1e999\" at byte 0", "a finite number"),
            ("retried(1)", "'(' at byte 7", "the end"),
            ("1 + é", "'é' at byte 4", "a number"),
        ] {
            let err = RetryDelay::parse(text).unwrap_err().to_string();
            assert!(err.contains(found), "{text:?}: {err}");
            assert!(err.contains(expected), "{text:?}: {err}");
        }
        for (text, problem) in [
            (
                "pow(2)",
                "pow at byte 0 was given 1 argument(s); it takes 2",
            ),
            (
                "sqrt(1, 2)",
                "sqrt at byte 0 was given 2 argument(s); it takes 1",
            ),
            (
                "min()",
                "min at byte 0 was given 0 argument(s); it takes at least 1",
            ),
        ] {
            assert_eq!(RetryDelay::parse(text).unwrap_err().to_string(), problem);
        }
    }

    #[test]
    fn hostile_input_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(65), ")".repeat(65));
        let err = RetryDelay::parse(&deep).unwrap_err().to_string();
        assert!(err.contains("nests deeper than 64"), "{err}");
        let ok = format!("{}1{}", "(".repeat(64), ")".repeat(64));
        assert_eq!(RetryDelay::parse(&ok).unwrap().delay_ms(0), 1);
        assert!(RetryDelay::parse(&"-".repeat(100)).is_err());
        let long = "1+".repeat(500) + "1";
        assert!(
            RetryDelay::parse(&long)
                .unwrap_err()
                .to_string()
                .contains("at most 1000")
        );
    }
}
