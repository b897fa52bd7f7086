//! The default text tokenizer of the built-in BM25 embedder.
//!
//! `text` is lowercased (full Unicode mapping, as Python's `str.lower()`), split into maximal
//! runs of letters and digits (`char::is_alphanumeric`; the underscore and punctuation
//! separate), and the 33 words of Lucene's English stopword list are dropped. This is the
//! tokenizer of the minilm-text dataset's reference BM25 (Python `re.findall(r"[^\W_]+",
//! text.lower())`). One documented difference: Rust's `is_alphanumeric` also counts the few
//! combining marks Unicode lists as `Other_Alphabetic` (e.g. Devanagari vowel signs) as letters,
//! where Python's `\w` splits at them; for Latin, Greek, Cyrillic and CJK text the two agree.

/// Lucene's English stopword list (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), sorted.
pub const STOPWORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Whether `term` (lowercase) is a stopword.
#[must_use]
pub fn is_stopword(term: &str) -> bool {
    STOPWORDS.binary_search(&term).is_ok()
}

/// The terms of `text` in order, repeats kept: lowercase runs of letters and digits that are
/// not stopwords.
///
/// # Examples
/// ```
/// use flowvec::vector::text::tokenize;
/// assert_eq!(tokenize("The Cat_sat on 2 MATS, naïvely!"), ["cat", "sat", "2", "mats", "naïvely"]);
/// assert!(tokenize("to be or not to be").is_empty());
/// ```
#[must_use]
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && !is_stopword(t))
        .map(str::to_owned)
        .collect()
}

/// How many terms [`tokenize`] finds in `text` (the BM25 document length), without allocating
/// them.
#[must_use]
pub fn term_count(text: &str) -> usize {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && !is_stopword(t))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("the") && is_stopword("with") && !is_stopword("cat"));
    }

    #[test]
    fn splits_on_punctuation_and_underscore_and_keeps_unicode_letters_and_digits() {
        assert_eq!(
            tokenize("snake_case x-ray  C3PO über ΣΊΣΥΦΟΣ 東京 ½"),
            [
                "snake",
                "case",
                "x",
                "ray",
                "c3po",
                "über",
                "σίσυφος",
                "東京",
                "½"
            ]
        );
        assert_eq!(tokenize(""), Vec::<String>::new());
        assert_eq!(tokenize("...,,__"), Vec::<String>::new());
    }

    #[test]
    fn stopwords_are_dropped_after_lowercasing_and_count_agrees() {
        let text = "THE end Is Near, and IT is here: the END.";
        assert_eq!(tokenize(text), ["end", "near", "here", "end"]);
        assert_eq!(term_count(text), 4);
    }
}
