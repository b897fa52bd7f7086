//! Conformance table for the metadata filter language (DESIGN §2.4): what each filter
//! evaluates to on given metadata, and the exact error each malformed filter gives.

use flowvec::vector::filter::{
    Filter, FilterError, FilterErrorKind, MAX_DEPTH, MAX_FILTER_LEN, MAX_IN_VALUES, Path, Segment,
};
use serde_json::{Value, json};

/// The reference service's example document, plus values of every other type.
fn city() -> Value {
    json!({
        "city": "Istanbul",
        "country": "Turkey",
        "is_capital": false,
        "population": 15_460_000,
        "area": 5343.22,
        "neg": -12,
        "big": 18_446_744_073_709_551_615_u64,
        "geography": {
            "continent": "Asia",
            "coordinates": {"latitude": 41.0082, "longitude": 28.9784}
        },
        "economy": {"currency": "TRY", "major_industries": ["Tourism", "Textiles", "Finance"]},
        "scores": [3, 1.5, -2],
        "flags": [true, false],
        "mixed": ["a", 1, true, null, {"k": 1}, [1]],
        "nothing": null,
        "empty": "",
        "empty_list": [],
        "obj": {},
        "quote": "it's \"q\" \\ back",
        "matrix": [[1, 2], [3, 4]],
        "people": [{"name": "Ann", "age": 30}, {"name": "Bob", "age": 25}],
        "in": 1,
        "and": "x",
        "has": 5,
        "unicode": "Zürich ☃"
    })
}

/// `(filter, expected)` on [`city`].
const CITY_CASES: &[(&str, bool)] = &[
    // = on every value type
    ("city = 'Istanbul'", true),
    ("city = \"Istanbul\"", true),
    ("city = 'istanbul'", false),
    ("population = 15460000", true),
    ("population = 15460000.0", true),
    ("area = 5343.22", true),
    ("neg = -12", true),
    ("neg = -12.0", true),
    ("is_capital = false", true),
    ("is_capital = FALSE", true),
    ("is_capital = true", false),
    ("is_capital = 0", false),
    ("population = '15460000'", false),
    ("city = 1", false),
    ("big = 18446744073709551615", true),
    ("big = 18446744073709551614", false),
    ("nothing = 'x'", false),
    ("nothing = 0", false),
    ("nothing = false", false),
    ("missing = 'x'", false),
    ("economy = 'x'", false),
    ("scores = 3", false),
    ("empty = ''", true),
    (r#"quote = 'it\'s "q" \\ back'"#, true),
    (r#"quote = "it's \"q\" \\ back""#, true),
    ("unicode = 'Zürich ☃'", true),
    // !=
    ("city != 'Ankara'", true),
    ("city != 'Istanbul'", false),
    ("population != 1", true),
    ("population != 15460000.0", false),
    ("is_capital != true", true),
    ("is_capital != false", false),
    ("city != 1", false),
    ("missing != 'x'", false),
    ("nothing != 'x'", false),
    ("economy != 'x'", false),
    ("scores != 3", false),
    // ordering
    ("population > 1000000", true),
    ("population < 1000000", false),
    ("population >= 15460000", true),
    ("population <= 15460000", true),
    ("population > 15460000", false),
    ("area < 5343.23", true),
    ("area > 5343.22", false),
    ("neg < -11.5", true),
    ("neg >= -12", true),
    ("geography.coordinates.latitude > 39.5", true),
    ("geography.coordinates.longitude <= 28.9784", true),
    ("city > 1", false),
    ("is_capital < 1", false),
    ("missing < 1", false),
    ("nothing > 0", false),
    ("scores > 0", false),
    ("big > 18446744073709551614", true),
    ("big > 1e19", true),
    ("big < 1.9e19", true),
    ("area > 5e3", true),
    ("population = 1.546E7", true),
    ("neg = -1.2e1", true),
    ("population = 0015460000", true),
    // GLOB / NOT GLOB
    ("city GLOB 'I*'", true),
    ("city GLOB 'i*'", false),
    ("city GLOB '?[sz]*[^m-z]'", true),
    ("city GLOB 'Istanbul'", true),
    ("city GLOB 'Istanbu'", false),
    ("city GLOB '*bul'", true),
    ("city GLOB '*b?l'", true),
    ("city GLOB '[A-H]*'", false),
    ("city GLOB '[^A-H]*'", true),
    ("city GLOB '[HIJ]stanbul'", true),
    ("city GLOB '[a-zI]s*'", true),
    ("city NOT GLOB 'A*'", true),
    ("city NOT GLOB 'I*'", false),
    ("population GLOB '*'", false),
    ("population NOT GLOB 'x*'", false),
    ("missing NOT GLOB 'x*'", false),
    ("nothing GLOB '*'", false),
    ("nothing NOT GLOB 'x'", false),
    ("empty GLOB '*'", true),
    ("empty GLOB '?'", false),
    ("unicode GLOB 'Z?rich ?'", true),
    ("economy.major_industries[0] GLOB 'T*'", true),
    ("economy.major_industries GLOB '*'", false),
    // IN / NOT IN
    ("country IN ('Germany', 'Turkey', 'France')", true),
    ("country IN ('Germany')", false),
    ("population IN (1, 15460000.0)", true),
    ("is_capital IN (true)", false),
    ("is_capital IN (false, 'x')", true),
    ("country IN (1, true)", false),
    ("missing IN ('x')", false),
    ("nothing IN ('x')", false),
    ("economy.currency NOT IN ('USD', 'EUR')", true),
    ("economy.currency NOT IN ('USD', 'TRY')", false),
    ("economy.currency NOT IN ('USD', 1)", false),
    ("missing NOT IN ('x')", false),
    ("nothing NOT IN ('x')", false),
    ("scores NOT IN (1)", false),
    ("population NOT IN (1, 2)", true),
    ("is_capital NOT IN (true)", true),
    // CONTAINS / NOT CONTAINS
    ("economy.major_industries CONTAINS 'Tourism'", true),
    ("economy.major_industries CONTAINS 'tourism'", false),
    (
        "economy.major_industries NOT CONTAINS 'Steel Production'",
        true,
    ),
    ("economy.major_industries NOT CONTAINS 'Finance'", false),
    ("scores CONTAINS 1.5", true),
    ("scores CONTAINS -2.0", true),
    ("scores CONTAINS 2", false),
    ("flags CONTAINS false", true),
    ("mixed CONTAINS 1", true),
    ("mixed CONTAINS true", true),
    ("mixed CONTAINS 'a'", true),
    ("mixed CONTAINS 'k'", false),
    ("mixed NOT CONTAINS 'b'", true),
    ("city CONTAINS 'Ist'", false),
    ("city NOT CONTAINS 'x'", false),
    ("missing NOT CONTAINS 'x'", false),
    ("nothing NOT CONTAINS 'x'", false),
    ("empty_list CONTAINS 1", false),
    ("empty_list NOT CONTAINS 1", true),
    ("matrix[0] CONTAINS 2", true),
    // HAS FIELD / HAS NOT FIELD
    ("HAS FIELD city", true),
    ("HAS FIELD nothing", true),
    ("HAS NOT FIELD nothing", false),
    ("HAS FIELD missing", false),
    ("HAS NOT FIELD missing", true),
    ("has field geography.coordinates.latitude", true),
    ("HAS FIELD geography.coordinates.altitude", false),
    ("HAS FIELD economy.major_industries[2]", true),
    ("HAS FIELD economy.major_industries[3]", false),
    ("HAS NOT FIELD economy.major_industries[#-4]", true),
    ("HAS FIELD economy.major_industries[#-3]", true),
    ("HAS FIELD obj", true),
    ("HAS FIELD empty_list", true),
    // nested objects and arrays
    ("economy.major_industries[0] = 'Tourism'", true),
    ("economy.major_industries[#-1] = 'Finance'", true),
    ("economy.major_industries[#-3] = 'Tourism'", true),
    ("matrix[1][0] = 3", true),
    ("matrix[#-1][#-1] = 4", true),
    ("people[1].name = 'Bob'", true),
    ("people[#-2].age > 29", true),
    ("people.name = 'Ann'", false),
    ("geography[0] = 'x'", false),
    ("city.length = 8", false),
    ("economy.major_industries[99] = 'x'", false),
    ("mixed[3] = 'x'", false),
    ("HAS FIELD mixed[3]", true),
    ("mixed[4].k = 1", true),
    // precedence, grouping, case-insensitivity
    (
        "country = 'Turkey' AND population > 10000000 OR is_capital = true",
        true,
    ),
    (
        "country = 'Germany' AND population > 10000000 OR is_capital = false",
        true,
    ),
    (
        "country = 'Germany' AND (population > 10000000 OR is_capital = false)",
        false,
    ),
    (
        "country = 'Turkey' OR country = 'Germany' AND population < 1",
        true,
    ),
    (
        "(country = 'Turkey' OR country = 'Germany') AND population < 1",
        false,
    ),
    ("((city = 'Istanbul'))", true),
    (
        "city = 'Istanbul' and country = 'Turkey' AnD is_capital = False",
        true,
    ),
    ("city = 'X' or city = 'Y' Or city = 'Istanbul'", true),
    ("city in ('x') OR city not in ('Istanbul')", false),
    (
        "city not glob 'x*' and economy.major_industries not contains 'x'",
        true,
    ),
    ("CITY = 'Istanbul'", false),
    ("city='Istanbul'AND(population>1)", true),
    ("\tcity\n=\r\n'Istanbul'  ", true),
    // fields named like keywords
    ("in = 1", true),
    ("and = 'x' AND in = 1", true),
    ("has = 5", true),
    ("has NOT IN (1, 2)", true),
    ("HAS FIELD has", true),
];

/// `(filter, metadata, expected)` on other documents, including no metadata at all.
fn other_cases() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("city = 'x'", Value::Null, false),
        ("HAS NOT FIELD city", Value::Null, true),
        ("city != 'x'", Value::Null, false),
        ("city NOT IN ('x')", Value::Null, false),
        ("city NOT GLOB 'x'", Value::Null, false),
        ("HAS FIELD city OR HAS NOT FIELD city", Value::Null, true),
        ("HAS FIELD a", json!([1, 2]), false),
        ("HAS FIELD a", json!("a"), false),
        ("a = 1", json!({"a": 1.0}), true),
        ("a = 1.0", json!({"a": 1}), true),
        (
            "a > 9007199254740992.0",
            json!({"a": 9_007_199_254_740_993_u64}),
            true,
        ),
        ("a = -0.0", json!({"a": 0}), true),
        ("a < 0", json!({"a": -0.0}), false),
        ("a = ''", json!({"a": ""}), true),
        ("a GLOB '*[*]*'", json!({"a": "x*y"}), true),
        ("a GLOB '*[*]*'", json!({"a": "xy"}), false),
        ("a GLOB '\\\\*'", json!({"a": "\\abc"}), true),
    ]
}

#[test]
fn evaluation_table() {
    let metadata = city();
    let mut cases: Vec<(&str, Value, bool)> = CITY_CASES
        .iter()
        .map(|&(f, e)| (f, metadata.clone(), e))
        .collect();
    cases.extend(other_cases());
    assert!(cases.len() >= 100, "the table must keep at least 100 cases");
    let mut failures = Vec::new();
    for (source, metadata, expected) in &cases {
        let filter = Filter::parse(source)
            .unwrap_or_else(|e| panic!("{source:?} should parse, got error: {e}"));
        if filter.matches(metadata) != *expected {
            failures.push(format!("{source:?} should be {expected}"));
        }
        // The canonical form evaluates the same and is a fixed point of print ∘ parse.
        let printed = filter.to_string();
        let reparsed = Filter::parse(&printed).unwrap();
        assert_eq!(reparsed, filter, "{source:?} printed as {printed:?}");
        assert_eq!(reparsed.to_string(), printed);
        assert_eq!(reparsed.matches(metadata), *expected, "{printed:?}");
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `(filter, column, message)`: every malformed filter and the exact error it gives.
const ERRORS: &[(&str, usize, &str)] = &[
    ("", 1, "expected a condition"),
    ("   ", 4, "expected a condition"),
    ("city = ", 8, "expected a value after '='"),
    (
        "genre = 'drama' AND year =",
        27,
        "expected a value after '='",
    ),
    (
        "city = Istanbul",
        8,
        "expected a value after '=', found bare word 'Istanbul' (quote strings: '…')",
    ),
    (
        "x = null",
        5,
        "expected a value after '=', found bare word 'null' (quote strings: '…')",
    ),
    (
        "city = 'Istanbul",
        17,
        "expected a closing ' for the string at column 8",
    ),
    (
        "city = \"Istanbul",
        17,
        "expected a closing \" for the string at column 8",
    ),
    ("city == 'x'", 7, "expected a value after '=', found '='"),
    (
        "city 'x'",
        6,
        "expected an operator (=, !=, <, <=, >, >=, IN, CONTAINS, GLOB or NOT …) after 'city', \
         found string 'x'",
    ),
    (
        "x ~ 1",
        3,
        "expected an operator (=, !=, <, <=, >, >=, IN, CONTAINS, GLOB or NOT …) after 'x', \
         found '~'",
    ),
    ("city = 'x' AND", 15, "expected a condition after 'AND'"),
    ("city = 'x' OR", 14, "expected a condition after 'OR'"),
    (
        "x = 1 AND @",
        11,
        "expected a condition after 'AND', found '@'",
    ),
    (
        "x = 'a' AND (y = 1 OR",
        22,
        "expected a condition after 'OR'",
    ),
    (
        "city = 'x' country = 'y'",
        12,
        "expected AND, OR or the end of the filter, found 'country'",
    ),
    (
        "(city = 'x'",
        12,
        "expected ')' to close the '(' at column 1",
    ),
    (
        "city = 'x')",
        11,
        "expected AND, OR or the end of the filter, found ')'",
    ),
    ("(a = 1 b = 2)", 8, "expected AND, OR or ')', found 'b'"),
    ("()", 2, "expected a condition after '(', found ')'"),
    ("1 = x", 1, "expected a condition, found number 1"),
    ("ü = 1", 1, "expected a condition, found 'ü'"),
    ("name = 'ü' AND", 15, "expected a condition after 'AND'"),
    (
        "NOT city = 'x'",
        1,
        "expected a condition (there is no prefix NOT: use !=, NOT IN, NOT CONTAINS, NOT GLOB \
         or HAS NOT FIELD), found 'NOT'",
    ),
    (
        "population < 'x'",
        14,
        "expected a number after '<', found string 'x'",
    ),
    (
        "population >= true",
        15,
        "expected a number after '>=', found 'true'",
    ),
    (
        "city IN 'x'",
        9,
        "expected '(' after 'IN', found string 'x'",
    ),
    ("city IN ()", 10, "expected a value after '(', found ')'"),
    (
        "city IN ('a',)",
        14,
        "expected a value after ',', found ')'",
    ),
    (
        "city IN ('a' 'b')",
        14,
        "expected ',' or ')' in the IN list, found string 'b'",
    ),
    ("city IN ('a'", 13, "expected ',' or ')' in the IN list"),
    (
        "city NOT = 'x'",
        10,
        "expected IN, CONTAINS or GLOB after 'NOT', found '='",
    ),
    ("x NOT", 6, "expected IN, CONTAINS or GLOB after 'NOT'"),
    ("x CONTAINS", 11, "expected a value after 'CONTAINS'"),
    (
        "city GLOB x*",
        11,
        "expected a quoted pattern after 'GLOB', found bare word 'x'",
    ),
    (
        "x GLOB 1",
        8,
        "expected a quoted pattern after 'GLOB', found number 1",
    ),
    (
        r"city = 'a\nb'",
        10,
        "expected \\, ' or \" after a backslash in a string",
    ),
    ("city ! = 'x'", 7, "expected '=' after '!'"),
    ("a. = 1", 3, "expected a field name after '.'"),
    ("a.1 = 1", 3, "expected a field name after '.'"),
    (
        "a[x] = 1",
        3,
        "expected an array index (a number or #-N) after '['",
    ),
    (
        "a[-1] = 1",
        3,
        "expected an array index (a number or #-N) after '['",
    ),
    ("a[#1] = 1", 4, "expected '-' after '#'"),
    ("a[#-] = 1", 5, "expected a number after '#-'"),
    (
        "a[#-0] = 1",
        5,
        "expected a number of at least 1 after '#-' ([#-1] is the last element)",
    ),
    ("a[1 = 1", 4, "expected ']' after the array index"),
    ("x = 12abc", 5, "expected a number, found '12abc'"),
    ("x = 1.5.2", 5, "expected a number, found '1.5.2'"),
    ("x = 1.", 7, "expected a digit after '.' in a number"),
    ("x = -", 6, "expected a digit after '-'"),
    ("x = - 1", 6, "expected a digit after '-'"),
    ("HAS FIELD", 10, "expected a field name after 'HAS FIELD'"),
    (
        "HAS NOT FIELD 'x'",
        15,
        "expected a field name after 'HAS NOT FIELD', found string 'x'",
    ),
    (
        "HAS FIELD x = 1",
        13,
        "expected AND, OR or the end of the filter, found '='",
    ),
];

/// Malformed `GLOB` patterns: the column points into the pattern.
const GLOB_ERRORS: &[(&str, usize, &str)] = &[
    (
        "city GLOB 'ab[c'",
        14,
        "expected ']' to close the character class in the GLOB pattern",
    ),
    (
        "city GLOB '[z-a]'",
        13,
        "expected a range from low to high, found 'z-a' in the GLOB pattern",
    ),
    (
        r"city GLOB 'a\\b['",
        16,
        "expected ']' to close the character class in the GLOB pattern",
    ),
    (
        "x GLOB '['",
        9,
        "expected ']' to close the character class in the GLOB pattern",
    ),
    (
        "x GLOB '[]'",
        9,
        "expected ']' to close the character class in the GLOB pattern",
    ),
];

#[test]
fn malformed_filters_give_exact_errors() {
    assert!(ERRORS.len() >= 30);
    let tables = [
        (ERRORS, FilterErrorKind::Syntax),
        (GLOB_ERRORS, FilterErrorKind::InvalidGlob),
    ];
    let mut failures = Vec::new();
    for (source, column, message, kind) in tables
        .iter()
        .flat_map(|(t, kind)| t.iter().map(move |&(s, c, m)| (s, c, m, *kind)))
    {
        match Filter::parse(source) {
            Ok(filter) => failures.push(format!("{source:?} parsed as {filter}")),
            Err(error) => {
                let expected = FilterError {
                    column,
                    message: message.to_owned(),
                    kind,
                };
                if error != expected {
                    failures.push(format!(
                        "{source:?}\n   got: {:?} at {} ({:?})\n  want: {message:?} at {column}",
                        error.message, error.column, error.kind
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn error_display_names_the_column() {
    let error = Filter::parse("genre = 'drama' AND year =").unwrap_err();
    assert_eq!(error.to_string(), "expected a value after '=' at column 27");
}

#[test]
fn number_out_of_range_is_its_own_kind() {
    let error = Filter::parse("x = 1e999").unwrap_err();
    assert_eq!(error.kind, FilterErrorKind::NumberOutOfRange);
    assert_eq!(error.column, 5);
    assert_eq!(
        error.message,
        "expected a number within the range of a 64-bit float, found '1e999'"
    );
}

#[test]
fn depth_is_capped_before_recursing() {
    let nested = |levels: usize| format!("{}x = 1{}", "(".repeat(levels), ")".repeat(levels));
    let at_limit = Filter::parse(&nested(MAX_DEPTH)).unwrap();
    assert!(at_limit.matches(&json!({"x": 1})));
    let error = Filter::parse(&nested(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(error.kind, FilterErrorKind::TooDeep { limit: MAX_DEPTH });
    assert_eq!(error.column, MAX_DEPTH + 1);
    assert_eq!(
        error.message,
        format!("expected at most {MAX_DEPTH} levels of nested parentheses")
    );
    // As deep as the length cap allows: an error, not a stack overflow.
    let error = Filter::parse(&"(".repeat(MAX_FILTER_LEN)).unwrap_err();
    assert_eq!(error.kind, FilterErrorKind::TooDeep { limit: MAX_DEPTH });
}

#[test]
fn length_is_capped() {
    let at_limit = format!("x = '{}'", "a".repeat(MAX_FILTER_LEN - 6));
    assert_eq!(at_limit.len(), MAX_FILTER_LEN);
    assert!(Filter::parse(&at_limit).is_ok());
    let over = format!("x = '{}'", "a".repeat(MAX_FILTER_LEN - 5));
    let error = Filter::parse(&over).unwrap_err();
    assert_eq!(
        error.kind,
        FilterErrorKind::TooLong {
            length: MAX_FILTER_LEN + 1,
            limit: MAX_FILTER_LEN
        }
    );
    assert_eq!(error.column, MAX_FILTER_LEN + 1);
    assert_eq!(
        error.message,
        format!(
            "expected a filter of at most {MAX_FILTER_LEN} bytes, found {} bytes",
            over.len()
        )
    );
}

#[test]
fn in_lists_are_capped() {
    let list = |n: usize| {
        let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        format!("x IN ({})", values.join(","))
    };
    let at_limit = Filter::parse(&list(MAX_IN_VALUES)).unwrap();
    assert!(at_limit.matches(&json!({"x": MAX_IN_VALUES - 1})));
    assert!(!at_limit.matches(&json!({"x": MAX_IN_VALUES})));
    let over = list(MAX_IN_VALUES + 1);
    let error = Filter::parse(&over).unwrap_err();
    assert_eq!(
        error.kind,
        FilterErrorKind::TooManyValues {
            limit: MAX_IN_VALUES
        }
    );
    // The column of the first value over the cap.
    assert_eq!(error.column, over.rfind(',').unwrap() + 2);
}

#[test]
fn canonical_printing() {
    let cases = [
        ("a=1", "a = 1"),
        ("a = 1.50", "a = 1.5"),
        ("a = 2.0", "a = 2.0"),
        ("a = 1e3", "a = 1000.0"),
        ("a = -0", "a = 0"),
        ("a = 007", "a = 7"),
        ("a = \"it's\"", r"a = 'it\'s'"),
        (r#"a = "\"\\""#, r#"a = '"\\'"#),
        ("a = TRUE", "a = true"),
        ("a not in ( 1 ,'b' ,FALSE )", "a NOT IN (1, 'b', false)"),
        ("has not field a.b[0][#-2]", "HAS NOT FIELD a.b[0][#-2]"),
        (
            "a glob \"x*\" or b not glob 'y'",
            "a GLOB 'x*' OR b NOT GLOB 'y'",
        ),
        (
            "a contains 1 and b not contains 'x'",
            "a CONTAINS 1 AND b NOT CONTAINS 'x'",
        ),
        ("(a = 1)", "a = 1"),
        ("a = 1 or (b = 2 and c = 3)", "a = 1 OR b = 2 AND c = 3"),
        ("(a = 1 or b = 2) and c = 3", "(a = 1 OR b = 2) AND c = 3"),
        ("a = 1 and (b = 2 and c = 3)", "a = 1 AND (b = 2 AND c = 3)"),
        ("a = 1 or (b = 2 or c = 3)", "a = 1 OR (b = 2 OR c = 3)"),
        ("a = 99999999999999999999", "a = 100000000000000000000.0"),
    ];
    for (source, canonical) in cases {
        let filter = Filter::parse(source).unwrap();
        assert_eq!(filter.to_string(), canonical, "{source:?}");
        assert_eq!(Filter::parse(canonical).unwrap(), filter, "{canonical:?}");
    }
}

#[test]
fn paths_parse_on_their_own() {
    let path = Path::parse("a.b[3][#-1]").unwrap();
    assert_eq!(
        path.segments(),
        &[
            Segment::Field("a".into()),
            Segment::Field("b".into()),
            Segment::Index(3),
            Segment::FromEnd(1)
        ]
    );
    assert_eq!(path.to_string(), "a.b[3][#-1]");
    let error = Path::parse("a b").unwrap_err();
    assert_eq!(
        (error.column, error.message.as_str()),
        (3, "expected the end of the path, found 'b'")
    );
    assert_eq!(
        Path::parse("'a'").unwrap_err().message,
        "expected a field path, found string 'a'"
    );
}
