//! What the model must do whatever the text: batching and padding change nothing, long texts
//! are truncated as sentence-transformers truncates them, vectors are unit length, and a bad
//! model directory is a clear error.

mod support;

use flowvec::vector::text::{Embedder, Embedding, EmbeddingKind, TextRole};
use flowvec_minilm::{LoadError, MiniLm};
use support::{cosine, model, model_dir};

#[test]
fn a_text_embeds_the_same_alone_and_in_a_padded_batch() {
    let texts = [
        "short",
        "A much longer sentence, so that the short one above is padded in the same batch.",
        "",
        "Ünïcödé and punctuation!!! Mixed — with dashes; and numbers 12345.",
    ];
    let together = model().embed_texts(&texts).unwrap();
    for (text, batched) in texts.iter().zip(&together) {
        let alone = &model().embed_texts(&[text]).unwrap()[0];
        let max_diff = alone
            .iter()
            .zip(batched)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(max_diff < 1e-5, "{text:?}: differs by {max_diff}");
    }
    // Batches of one through the whole list, too.
    let small = MiniLm::load(model_dir()).unwrap().with_batch_size(1);
    let one_by_one = small.embed_texts(&texts).unwrap();
    for (a, b) in one_by_one.iter().zip(&together) {
        assert!(cosine(a, b) > 0.99999);
    }
}

#[test]
fn vectors_are_unit_length_and_distinct_texts_differ() {
    let v = model()
        .embed_texts(&["the cat sat on the mat", "stock markets fell sharply today"])
        .unwrap();
    for x in &v {
        let norm: f64 = x.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
    assert!(cosine(&v[0], &v[1]) < 0.5, "{}", cosine(&v[0], &v[1]));
    // A paraphrase is closer than an unrelated text.
    let p = model()
        .embed_texts(&["a cat was sitting on the mat"])
        .unwrap();
    assert!(cosine(&v[0], &p[0]) > cosine(&v[1], &p[0]));
}

#[test]
fn long_texts_are_truncated_to_max_seq_length() {
    assert_eq!(model().max_tokens(), 256);
    // 300 distinct-ish words: past 256 tokens, so what follows them is cut off.
    let head: String = (0..300).map(|i| format!("word{i} ")).collect();
    let a = model().embed_texts(&[head.as_str()]).unwrap();
    let longer = format!("{head} completely different ending about volcanoes and oceans");
    let b = model().embed_texts(&[longer.as_str()]).unwrap();
    assert_eq!(
        a, b,
        "text after the 256th token must not change the embedding"
    );
    // ... while a change inside the window does.
    let changed = format!("volcanoes {head}");
    let c = model().embed_texts(&[changed.as_str()]).unwrap();
    assert_ne!(a, c);
}

#[test]
fn it_is_a_dense_embedder_for_both_roles() {
    let m = model();
    assert_eq!(m.kind(), EmbeddingKind::Dense { dimension: 384 });
    assert_eq!(m.name(), "all-MiniLM-L6-v2");
    let doc = m.embed(&["same text"], TextRole::Document).unwrap();
    let query = m.embed(&["same text"], TextRole::Query).unwrap();
    assert_eq!(doc, query);
    assert!(matches!(&doc[0], Embedding::Dense(v) if v.len() == 384));
    assert!(m.embed(&[], TextRole::Query).unwrap().is_empty());
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flowvec-minilm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_bad_model_directory_names_the_file_and_what_was_expected() {
    let empty = temp_dir("empty");
    let err = MiniLm::load(&empty).unwrap_err();
    assert!(matches!(&err, LoadError::Missing { path } if path.ends_with("config.json")));
    assert!(err.to_string().contains("scripts/fetch-minilm"), "{err}");

    // The real files, but a config that is not JSON.
    let broken = temp_dir("broken");
    for file in ["tokenizer.json", "model.safetensors"] {
        std::fs::copy(model_dir().join(file), broken.join(file)).unwrap();
    }
    std::fs::write(broken.join("config.json"), "{ not json").unwrap();
    let err = MiniLm::load(&broken).unwrap_err();
    assert!(matches!(&err, LoadError::Invalid { path, .. } if path.ends_with("config.json")));

    // A pooling mode other than the mean.
    std::fs::copy(model_dir().join("config.json"), broken.join("config.json")).unwrap();
    std::fs::create_dir_all(broken.join("1_Pooling")).unwrap();
    std::fs::write(
        broken.join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let err = MiniLm::load(&broken).unwrap_err();
    assert!(err.to_string().contains("only mean pooling"), "{err}");

    // Weights that are not safetensors.
    std::fs::remove_dir_all(broken.join("1_Pooling")).unwrap();
    std::fs::write(broken.join("model.safetensors"), b"garbage").unwrap();
    let err = MiniLm::load(&broken).unwrap_err();
    assert!(matches!(&err, LoadError::Invalid { path, .. } if path.ends_with("model.safetensors")));
    let _ = std::fs::remove_dir_all(&empty);
    let _ = std::fs::remove_dir_all(&broken);
}
