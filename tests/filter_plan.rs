//! Planning helpers: which necessary conditions a filter yields for a value index, and its
//! cost figure.

use flowvec::vector::filter::{Constraint, Filter, Literal};
use serde_json::{Number, json};
use std::ops::Bound;

fn described(source: &str) -> Vec<String> {
    let filter = Filter::parse(source).unwrap();
    filter
        .constraints()
        .iter()
        .map(|c| match c {
            Constraint::OneOf { path, values } => {
                let values: Vec<String> = values.iter().map(ToString::to_string).collect();
                format!("{path} in [{}]", values.join(", "))
            }
            Constraint::Range { path, lower, upper } => {
                let bound = |b: &Bound<&Number>, open: char, closed: char| match b {
                    Bound::Included(n) => format!("{closed}{n}"),
                    Bound::Excluded(n) => format!("{open}{n}"),
                    Bound::Unbounded => "*".to_owned(),
                };
                format!(
                    "{path} in {}..{}",
                    bound(lower, '(', '['),
                    bound(upper, ')', ']')
                )
            }
            Constraint::Prefix { path, prefix } => format!("{path} starts with {prefix:?}"),
            Constraint::Element { path, value } => format!("{path} has element {value}"),
        })
        .collect()
}

#[test]
fn constraints_from_and_trees() {
    assert_eq!(
        described("genre = 'drama' AND year >= 2000 AND tags CONTAINS 'classic'"),
        [
            "genre in ['drama']",
            "year in [2000..*",
            "tags has element 'classic'"
        ]
    );
    assert_eq!(
        described("a > 1 AND (a <= 5 AND a > 2) AND a < 5"),
        ["a in (2..)5"]
    );
    assert_eq!(described("a >= 2 AND a > 2"), ["a in (2..*"]);
    assert_eq!(
        described("a IN (1, 'x') AND b GLOB 'pre*fix'"),
        ["a in [1, 'x']", "b starts with \"pre\""]
    );
    assert_eq!(
        described("(genre = 'a' OR genre IN ('b', 'c')) AND x != 1"),
        ["genre in ['a', 'b', 'c']"]
    );
    assert_eq!(
        described("genre = 'a' AND y = 1 OR genre = 'b'"),
        ["genre in ['a', 'b']"]
    );
}

#[test]
fn no_constraints_where_none_is_necessary() {
    for source in [
        "a != 1",
        "a NOT IN (1, 2)",
        "a NOT GLOB 'x*'",
        "a GLOB '*x'",
        "HAS FIELD a",
        "HAS NOT FIELD a",
        "a NOT CONTAINS 1",
        "a = 1 OR b = 1",
        "a = 1 OR a > 5",
    ] {
        assert_eq!(described(source), Vec::<String>::new(), "{source}");
    }
}

#[test]
fn constraints_admit_what_the_filter_matches() {
    let filter = Filter::parse("(k = 1 OR k = 2.5) AND n > 3 AND n <= 4 AND s GLOB 'ab*'").unwrap();
    let record = json!({"k": 2.5, "n": 4, "s": "abc"});
    assert!(filter.matches(&record));
    let constraints = filter.constraints();
    assert_eq!(constraints.len(), 3);
    assert!(constraints.iter().all(|c| c.admits(&record)));
    let outside = json!({"k": 3, "n": 3, "s": "xabc"});
    assert!(constraints.iter().all(|c| !c.admits(&outside)));
    assert!(matches!(&constraints[0], Constraint::OneOf { values, .. }
        if values[0] == &Literal::Number(1.into())));
}

#[test]
fn complexity_counts_predicates_and_list_values() {
    let cost = |s: &str| Filter::parse(s).unwrap().complexity();
    assert_eq!(cost("a = 1"), 1);
    assert_eq!(cost("a = 1 AND (b = 2 OR HAS FIELD c)"), 3);
    assert_eq!(cost("a IN (1, 2, 3) OR b NOT IN ('x')"), 6);
}
