//! The Rust model against the Python one: every dev passage of the minilm-text dataset,
//! embedded here, against the vector sentence-transformers made for it (`dev_queries.fvecs`).

mod support;

use support::{cosine, dataset, model, read_fvecs};

#[test]
fn every_dev_passage_matches_sentence_transformers() {
    let dir = dataset();
    let passages = std::fs::read_to_string(dir.join("dev_passages.txt")).unwrap();
    let passages: Vec<&str> = passages.lines().collect();
    let reference = read_fvecs(&dir.join("dev_queries.fvecs"));
    assert_eq!(passages.len(), 1000);
    assert_eq!(reference.len(), passages.len());

    let ours = model().embed_texts(&passages).unwrap();
    assert_eq!(ours.len(), passages.len());
    let mut worst = (f64::INFINITY, 0);
    for (i, (a, b)) in ours.iter().zip(&reference).enumerate() {
        assert_eq!(a.len(), 384);
        let c = cosine(a, b);
        if c < worst.0 {
            worst = (c, i);
        }
    }
    eprintln!("lowest cosine {:.7} (dev passage {})", worst.0, worst.1);
    assert!(
        worst.0 >= 0.999,
        "dev passage {} has cosine {} to its sentence-transformers vector: {:?}",
        worst.1,
        worst.0,
        passages[worst.1]
    );
}
