//! Property tests for the filter language: printing round-trips, the parser never panics,
//! the GLOB matcher agrees with a naive backtracking oracle, and `IN`/`NOT IN`/`HAS FIELD`
//! agree with their definitions in DESIGN §2.4.

use flowvec::vector::filter::{CompareOp, Expr, Filter, GlobPattern, Literal, Path};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Number, Value, json};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    }
}

/// Field names, with keywords mixed in: keywords are positional, so they are valid names.
fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z_][a-zA-Z0-9_]{0,5}",
        1 => prop::sample::select(vec![
            "and", "OR", "not", "NOT", "in", "has", "HAS", "field", "Field", "true", "False",
            "glob", "contains", "null",
        ])
        .prop_map(str::to_owned),
    ]
}

fn path() -> impl Strategy<Value = Path> {
    let accessor = prop_oneof![
        ident().prop_map(|name| format!(".{name}")),
        (0usize..20).prop_map(|i| format!("[{i}]")),
        (1usize..20).prop_map(|k| format!("[#-{k}]")),
        Just(format!("[{}]", usize::MAX)),
    ];
    (ident(), prop::collection::vec(accessor, 0..4)).prop_map(|(head, tail)| {
        let text = format!("{head}{}", tail.concat());
        Path::parse(&text).unwrap_or_else(|e| panic!("generated path {text:?} must parse: {e}"))
    })
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
        (-1000i32..1000).prop_map(|x| Number::from_f64(f64::from(x) / 8.0).unwrap()),
        Just(Number::from_f64(-0.0).unwrap()),
    ]
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        any::<String>().prop_map(Literal::String),
        "[a'\"\\\\ ]{0,6}".prop_map(Literal::String),
        number().prop_map(Literal::Number),
        any::<bool>().prop_map(Literal::Bool),
    ]
}

fn glob_source() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'é', '*', '?', '[', ']', '^', '-', '\\', '\'', '"',
        ]),
        0..10,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn leaf() -> impl Strategy<Value = Expr> {
    let op = prop::sample::select(vec![
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
    ]);
    prop_oneof![
        (path(), op, literal()).prop_map(|(path, op, value)| {
            // Ordering operators take numbers only (a parse error otherwise).
            let value = match value {
                Literal::Number(_) => value,
                _ if op.is_ordering() => Literal::Number(Number::from(7)),
                _ => value,
            };
            Expr::Compare { path, op, value }
        }),
        (
            path(),
            any::<bool>(),
            prop::collection::vec(literal(), 1..5)
        )
            .prop_map(|(path, negated, values)| Expr::In {
                path,
                negated,
                values: values.into(),
            }),
        (path(), any::<bool>(), literal()).prop_map(|(path, negated, value)| Expr::Contains {
            path,
            negated,
            value
        }),
        (path(), any::<bool>(), glob_source()).prop_filter_map(
            "valid pattern",
            |(path, negated, source)| {
                GlobPattern::new(&source).ok().map(|pattern| Expr::Glob {
                    path,
                    negated,
                    pattern,
                })
            }
        ),
        (path(), any::<bool>()).prop_map(|(path, negated)| Expr::HasField { path, negated }),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..5).prop_map(Expr::And),
            prop::collection::vec(inner, 2..5).prop_map(Expr::Or),
        ]
    })
}

/// Pieces of filter syntax, valid and broken.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a", "b.c", "d[0]", "e[#-1]", "f[", "g.", "[#-", "=", "!=", "<", "<=", ">", ">=", "!",
        "AND", "or", "NOT", "IN", "in", "CONTAINS", "GLOB", "HAS", "FIELD", "(", ")", ",", "'x'",
        "\"y\"", "'", "\"", "\\", "'[a-'", "'[z-a]'", "1", "-2.5", "1e3", "1e999", "-", "true",
        "FALSE", "null", "@", "é", " ", "\t",
    ])
}

/// Filter fragments glued at random.
fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec((fragment(), any::<bool>()), 0..24).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(f, space)| if space { format!("{f} ") } else { f.to_owned() })
            .collect()
    })
}

/// Whatever parses prints to a fixed point of parse ∘ print.
fn check_round_trip(source: &str) -> Result<(), TestCaseError> {
    if let Ok(filter) = Filter::parse(source) {
        let printed = filter.to_string();
        let reparsed = Filter::parse(&printed)
            .map_err(|e| TestCaseError::fail(format!("{printed:?} from {source:?}: {e}")))?;
        prop_assert_eq!(&reparsed, &filter, "{:?} printed as {:?}", source, printed);
        prop_assert_eq!(reparsed.to_string(), printed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn printed_ast_parses_back_to_itself(ast in expr()) {
        let printed = ast.to_string();
        let parsed = Filter::parse(&printed)
            .map_err(|e| TestCaseError::fail(format!("{printed:?}: {e}")))?;
        prop_assert_eq!(parsed.expr(), &ast, "printed as {:?}", printed);
        prop_assert_eq!(parsed.to_string(), printed);
    }

    #[test]
    fn arbitrary_text_never_panics(source in any::<String>()) {
        check_round_trip(&source)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_round_trip(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn token_soup_never_panics_and_round_trips(source in token_soup()) {
        check_round_trip(&source)?;
    }

    #[test]
    fn mutated_filters_never_panic_and_round_trip(
        ast in expr(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, fragment()), 1..4),
    ) {
        // Near-valid input reaches deep error paths that random text rarely gets to.
        let mut text: Vec<char> = ast.to_string().chars().collect();
        for (at, kind, fragment) in edits {
            let at = at.index(text.len() + 1);
            match kind {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 => text.truncate(at),
                _ => {
                    text.splice(at..at, fragment.chars());
                }
            }
        }
        check_round_trip(&text.into_iter().collect::<String>())?;
    }

    #[test]
    fn glob_agrees_with_naive_backtracking(
        pattern in glob_source(),
        text in prop::collection::vec(prop::sample::select(vec!['a', 'b', 'é', '-', ']', '*']), 0..8),
    ) {
        let text: String = text.into_iter().collect();
        let naive = naive_glob(&pattern.chars().collect::<Vec<_>>(), &text.chars().collect::<Vec<_>>());
        match GlobPattern::new(&pattern) {
            Ok(compiled) => prop_assert_eq!(Some(compiled.matches(&text)), naive, "{:?} on {:?}", pattern, text),
            Err(_) => prop_assert_eq!(naive, None, "{:?} rejected but naive accepts", pattern),
        }
    }

    #[test]
    fn in_and_has_field_follow_their_definitions(
        path in prop::sample::select(vec!["a", "b", "a[0]", "a[#-1]", "c.d"]),
        values in small_literals(),
        metadata in metadata(),
    ) {
        let list: Vec<String> = values.iter().map(ToString::to_string).collect();
        let any_eq: Vec<String> = list.iter().map(|v| format!("{path} = {v}")).collect();
        let all_ne: Vec<String> = list.iter().map(|v| format!("{path} != {v}")).collect();
        let eval = |source: &str| Filter::parse(source).unwrap().matches(&metadata);
        prop_assert_eq!(eval(&format!("{path} IN ({})", list.join(", "))), eval(&any_eq.join(" OR ")));
        prop_assert_eq!(eval(&format!("{path} NOT IN ({})", list.join(", "))), eval(&all_ne.join(" AND ")));
        prop_assert_ne!(eval(&format!("HAS FIELD {path}")), eval(&format!("HAS NOT FIELD {path}")));
        // A missing field makes every other predicate false.
        if !eval(&format!("HAS FIELD {path}")) {
            let not_contains = format!("{path} NOT CONTAINS {}", list[0]);
            let not_glob = format!("{path} NOT GLOB '*'");
            for source in [&any_eq[0], &all_ne[0], &not_contains, &not_glob] {
                prop_assert!(!eval(source), "{} holds on a missing field", source);
            }
        }
    }
}

/// Literals from the same small domain as [`metadata`], so they often match; lists long
/// enough to use the sorted lookup, and single-typed ones so `NOT IN` can hold.
fn small_literals() -> impl Strategy<Value = Vec<Literal>> {
    let int = (-3i64..3).prop_map(|x| Literal::Number(Number::from(x)));
    let half =
        (-3i32..3).prop_map(|x| Literal::Number(Number::from_f64(f64::from(x) / 2.0).unwrap()));
    let string = "[a'\"]{0,2}".prop_map(Literal::String);
    let boolean = any::<bool>().prop_map(Literal::Bool);
    let mixed = prop_oneof![int.clone(), half.clone(), string.clone(), boolean.clone()];
    prop_oneof![
        prop::collection::vec(mixed, 1..24),
        prop::collection::vec(prop_oneof![int, half], 1..24),
        prop::collection::vec(string, 1..24),
        prop::collection::vec(boolean, 1..3),
    ]
}

proptest! {
    // Few random filters both match and pin a field, so this one runs more cases.
    #![proptest_config(config(20_000))]

    #[test]
    fn constraints_are_necessary(filter in small_filter(), metadata in dense_metadata()) {
        // Every record the filter matches satisfies every extracted constraint.
        if filter.matches(&metadata) {
            for constraint in filter.constraints() {
                prop_assert!(constraint.admits(&metadata), "{} matches but {:?} does not", filter, constraint);
            }
        }
    }
}

/// A tiny value domain shared by [`tiny_literals`] and [`dense_metadata`], so filters match
/// often.
fn tiny_scalar() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!(-1),
        json!(0),
        json!(1),
        json!(0.5),
        json!("a"),
        json!("'"),
        json!(true),
        json!(false),
        Value::Null,
    ])
}

fn tiny_literals() -> impl Strategy<Value = Vec<Literal>> {
    let literal = tiny_scalar().prop_filter_map("no null literal", |v| match v {
        Value::String(s) => Some(Literal::String(s)),
        Value::Number(n) => Some(Literal::Number(n)),
        Value::Bool(b) => Some(Literal::Bool(b)),
        _ => None,
    });
    prop::collection::vec(literal, 1..4)
}

/// Metadata with `a`, `b` and `c` present most of the time, over the tiny domain.
fn dense_metadata() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        3 => tiny_scalar(),
        1 => prop::collection::vec(tiny_scalar(), 0..3).prop_map(Value::Array),
        1 => tiny_scalar().prop_map(|v| json!({"d": v})),
    ];
    prop::collection::vec(value, 3).prop_map(|v| json!({"a": v[0], "b": v[1], "c": v[2]}))
}

/// Filters over the fields and values of [`dense_metadata`].
fn small_filter() -> impl Strategy<Value = Filter> {
    let path = prop::sample::select(vec!["a", "b", "a[0]", "a[#-1]", "c.d"]);
    let op = prop::sample::select(vec!["=", "=", "=", "!=", "<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        (path.clone(), op, tiny_literals()).prop_map(|(p, op, values)| {
            let value = match &values[0] {
                Literal::Number(_) => values[0].clone(),
                _ if op != "=" && op != "!=" => Literal::Number(Number::from(0)),
                other => other.clone(),
            };
            format!("{p} {op} {value}")
        }),
        (path.clone(), any::<bool>(), tiny_literals()).prop_map(|(p, negated, values)| {
            let list: Vec<String> = values.iter().map(ToString::to_string).collect();
            format!(
                "{p} {}IN ({})",
                if negated { "NOT " } else { "" },
                list.join(", ")
            )
        }),
        (
            path.clone(),
            prop::sample::select(vec!["a*", "*", "'*", "a'?", "[a']*"])
        )
            .prop_map(|(p, pattern)| format!("{p} GLOB {}", Literal::String(pattern.into()))),
        (path.clone(), tiny_literals()).prop_map(|(p, v)| format!("{p} CONTAINS {}", v[0])),
        path.prop_map(|p| format!("HAS FIELD {p}")),
    ];
    let leaf = prop_oneof![
        3 => leaf,
        1 => prop::collection::vec(tiny_literals(), 2..4).prop_map(|lists| {
            // An OR of one field's values: what `Constraint::OneOf` unions.
            let branches: Vec<String> = lists.iter().map(|l| format!("b = {}", l[0])).collect();
            format!("({})", branches.join(" OR "))
        }),
    ];
    let expr = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|c| format!("({})", c.join(" AND "))),
            prop::collection::vec(inner, 2..4).prop_map(|c| format!("({})", c.join(" OR "))),
        ]
    });
    expr.prop_map(|source| {
        Filter::parse(&source).unwrap_or_else(|e| panic!("generated {source:?} must parse: {e}"))
    })
}

/// Small random metadata over the keys the properties above use.
fn metadata() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(|x| json!(x)),
        (-3i32..3).prop_map(|x| json!(f64::from(x) / 2.0)),
        "[a'\"]{0,2}".prop_map(Value::String),
    ];
    let value = scalar.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            inner.prop_map(|v| json!({"d": v})),
        ]
    });
    prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]), value, 0..3).prop_map(
        |fields| Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
    )
}

/// Independent reference for the documented GLOB rules: plain exponential backtracking over
/// characters. `None` when the pattern is malformed.
fn naive_glob(pattern: &[char], text: &[char]) -> Option<bool> {
    let Some((&first, rest)) = pattern.split_first() else {
        return Some(text.is_empty());
    };
    match first {
        '*' => {
            for skip in 0..=text.len() {
                if naive_glob(rest, &text[skip..])? {
                    return Some(true);
                }
            }
            Some(false)
        }
        '?' => {
            // Still validate the rest of the pattern when the text is exhausted.
            let tail = naive_glob(rest, text.get(1..).unwrap_or(&[]))?;
            Some(!text.is_empty() && tail)
        }
        '[' => {
            let mut i = 1;
            let negated = pattern.get(i) == Some(&'^');
            if negated {
                i += 1;
            }
            let start = i;
            let mut inside = false;
            let c = text.first();
            loop {
                let &lo = pattern.get(i)?;
                if lo == ']' && i > start {
                    break;
                }
                let (hi, width) = match (pattern.get(i + 1), pattern.get(i + 2)) {
                    (Some('-'), Some(&hi)) if hi != ']' => (hi, 3),
                    _ => (lo, 1),
                };
                if hi < lo {
                    return None;
                }
                inside |= c.is_some_and(|&c| lo <= c && c <= hi);
                i += width;
            }
            let tail = naive_glob(&pattern[i + 1..], text.get(1..).unwrap_or(&[]))?;
            Some(c.is_some() && inside != negated && tail)
        }
        literal => {
            let tail = naive_glob(rest, text.get(1..).unwrap_or(&[]))?;
            Some(text.first() == Some(&literal) && tail)
        }
    }
}
