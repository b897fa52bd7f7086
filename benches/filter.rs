//! Filter language costs: parsing (once per query) and evaluation (once per candidate record).
//!
//! `cargo bench --bench filter -- --warm-up-time 1 --measurement-time 3`
//!
//! Evaluation runs over 1024 generated records (fixed seed) so branches do not all predict;
//! the reported throughput is records per second, so ns/record = 1e9 / throughput.

use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};
use flowvec::vector::filter::Filter;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const TYPICAL: &str = "genre = 'drama' AND year >= 2000 AND tags CONTAINS 'classic'";
const COMPLEX: &str = "(genre IN ('drama', 'comedy', 'thriller', 'horror') OR rating > 8.5) \
     AND year >= 1990 AND year < 2020 AND title GLOB 'The *' \
     AND director.country NOT IN ('US', 'UK') AND HAS NOT FIELD archived \
     AND tags[#-1] != 'remake' AND cast[0].name GLOB '*[A-M]*'";

const GENRES: &[&str] = &[
    "drama",
    "comedy",
    "thriller",
    "horror",
    "documentary",
    "animation",
];
const TAGS: &[&str] = &[
    "classic", "remake", "award", "indie", "cult", "family", "noir", "sequel", "foreign",
];
const COUNTRIES: &[&str] = &["US", "UK", "FR", "JP", "IN", "DE"];

/// Movie-like metadata: a dozen fields, a nested object, arrays of strings and objects.
fn records(n: usize) -> Vec<Value> {
    let mut rng = StdRng::seed_from_u64(7);
    (0..n)
        .map(|i| {
            let tags: Vec<&str> =
                (0..rng.random_range(1..6)).map(|_| TAGS[rng.random_range(0..TAGS.len())]).collect();
            let mut record = json!({
                "id": i,
                "title": if rng.random_bool(0.3) { format!("The Movie {i}") } else { format!("Movie {i}") },
                "genre": GENRES[rng.random_range(0..GENRES.len())],
                "year": rng.random_range(1950..2025),
                "rating": f64::from(rng.random_range(10..100_u8)) / 10.0,
                "runtime_minutes": rng.random_range(70..200),
                "language": "en",
                "tags": tags,
                "director": {
                    "name": format!("Director {}", rng.random_range(0..500)),
                    "country": COUNTRIES[rng.random_range(0..COUNTRIES.len())],
                },
                "cast": [
                    {"name": format!("Actor {}", rng.random_range(0..1000)), "role": "lead"},
                    {"name": format!("Actor {}", rng.random_range(0..1000)), "role": "support"},
                ],
                "box_office_usd": rng.random_range(0..1_000_000_000_u64),
            });
            if rng.random_bool(0.1) {
                record["archived"] = json!(true);
            }
            record
        })
        .collect()
}

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("filter/parse");
    for (name, source) in [
        ("typical_3_clauses", TYPICAL),
        ("complex_8_clauses", COMPLEX),
    ] {
        group.throughput(Throughput::Bytes(source.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), source, |b, source| {
            b.iter(|| Filter::parse(black_box(source)).expect("benchmark filters parse"));
        });
    }
    group.finish();
}

fn evaluate(c: &mut Criterion) {
    let data = records(1024);
    let mut group = c.benchmark_group("filter/evaluate_per_record");
    group.throughput(Throughput::Elements(data.len() as u64));
    for (name, source) in [
        ("typical_3_clauses", TYPICAL),
        ("complex_8_clauses", COMPLEX),
        ("single_eq", "genre = 'drama'"),
        ("in_list_64", &in_list(64)),
        ("glob_suffix", "title GLOB '*9'"),
    ] {
        let filter = Filter::parse(source).expect("benchmark filters parse");
        let selected = data.iter().filter(|r| filter.matches(r)).count();
        eprintln!("{name}: {selected}/{} records match", data.len());
        group.bench_function(name, |b| {
            b.iter(|| data.iter().filter(|r| filter.matches(black_box(r))).count());
        });
    }
    group.finish();
}

/// The typical filter written by hand against `serde_json`: the floor any evaluator pays for
/// the lookups themselves.
fn hand_written(c: &mut Criterion) {
    let data = records(1024);
    let mut group = c.benchmark_group("filter/evaluate_per_record");
    group.throughput(Throughput::Elements(data.len() as u64));
    group.bench_function("typical_3_clauses_hand_written", |b| {
        b.iter(|| {
            data.iter()
                .filter(|r| {
                    let r = black_box(r);
                    r.get("genre").and_then(Value::as_str) == Some("drama")
                        && r.get("year")
                            .and_then(Value::as_i64)
                            .is_some_and(|y| y >= 2000)
                        && r.get("tags")
                            .and_then(Value::as_array)
                            .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some("classic")))
                })
                .count()
        });
    });
    group.finish();
}

fn in_list(n: usize) -> String {
    let ids: Vec<String> = (0..n).map(|i| (i * 16).to_string()).collect();
    format!("id IN ({})", ids.join(", "))
}

fn glob_worst_case(c: &mut Criterion) {
    // Exponential for naive backtracking; bounded by pattern × text here. Classes rather than
    // literals, and a trailing star, so the literal shortcuts (ends_with, find) do not apply.
    let text = json!({"s": "a".repeat(1000)});
    let filter =
        Filter::parse("s GLOB '*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[b]*'").expect("pattern parses");
    c.bench_function("filter/glob_worst_case_1000_chars", |b| {
        b.iter(|| filter.matches(black_box(&text)));
    });
}

/// Filtered queries through the record layer: 20,000 generated 32-d records (fixed seed),
/// top-10, filters matching 50% (predicate, post-filtered graph), 10% and 1% (value index,
/// collected matches) and none.
fn filtered_query(c: &mut Criterion) {
    use flowvec::vector::{Index, IndexConfig, Metric, Query, Vector};
    const N: usize = 20_000;
    const DIM: usize = 32;
    let mut rng = StdRng::seed_from_u64(11);
    let index = Index::new(IndexConfig::dense(DIM, Metric::Cosine)).expect("valid config");
    let records: Vec<Vector> = (0..N)
        .map(|i| {
            let v: Vec<f32> = (0..DIM).map(|_| rng.random_range(-1.0..1.0)).collect();
            let h = (i * 7919) % N;
            Vector::dense(i.to_string(), v)
                .with_metadata(json!({"cent": h % 100, "half": h.is_multiple_of(2)}))
        })
        .collect();
    for chunk in records.chunks(2000) {
        index.upsert("", chunk.to_vec()).expect("valid records");
    }
    let queries: Vec<Vec<f32>> = (0..64)
        .map(|_| (0..DIM).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let mut group = c.benchmark_group("filtered_query");
    for (name, filter) in [
        ("none", ""),
        ("50%", "half = true"),
        ("10%", "cent < 10"),
        ("1%", "cent = 42"),
    ] {
        let mut at = 0;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                at = (at + 1) % queries.len();
                let q = Query {
                    filter: filter.to_owned(),
                    ..Query::dense(queries[at].clone(), 10)
                };
                black_box(index.query("", &q).expect("valid query"))
            });
        });
    }
    group.finish();
}

// `criterion_group!` generates an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(
        benches,
        parse,
        evaluate,
        hand_written,
        glob_worst_case,
        filtered_query
    );
}
use group::benches;
criterion_main!(benches);
