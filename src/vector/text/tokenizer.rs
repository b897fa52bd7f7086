//! The default text tokenizer of the built-in BM25 embedder.
//!
//! `text` is lowercased, split into maximal runs of letters and digits
//! (`char::is_alphanumeric`; the underscore, punctuation and spaces separate), and the 33 words
//! of Lucene's English stopword list are dropped. This is the tokenizer of the minilm-text
//! dataset's reference BM25, Python's `[t for t in re.findall(r"[^\W_]+", text.lower()) if t
//! not in STOPWORDS]`, with these differences, found by comparing every code point (CPython
//! 3.11, Unicode 14.0; Rust 1.95, Unicode 17.0):
//!
//! - **Lowercasing** (`str::to_lowercase` vs `str.lower()`): both apply the full mappings
//!   (`İ` → `i̇`, two characters) and the final-sigma rule (`ΣΊΣΥΦΟΣ` → `σίσυφος`); they differ
//!   only for 55 letters assigned after Unicode 14.0, which Python leaves as they are.
//! - **Letters and digits**: `is_alphanumeric` (Unicode `Alphabetic` or `Numeric`) matches every
//!   character `[^\W_]` matches, and also the `Other_Alphabetic` marks and symbols that Python's
//!   `\w` splits at: 1,312 combining marks (Devanagari and Arabic vowel signs, the shadda,
//!   U+0363.. combining Latin letters) and 130 symbols (circled letters such as `Ⓐ`), plus the
//!   characters assigned after Unicode 14.0. So `"الطّوب"` is one term here and two in Python.
//!   Latin, Greek, Cyrillic and CJK text tokenizes the same; in the 44,000 minilm-text passages
//!   one word differs (the shadda above).

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
    fn lowercasing_and_letters_match_python_except_where_documented() {
        // As Python: `İ` lowers to `i` + U+0307 (a mark neither counts as a letter), and a
        // final sigma becomes `ς`: re.findall(r"[^\W_]+", "İSTANBUL ΟΔΟΣ".lower()).
        assert_eq!(tokenize("İSTANBUL ΟΔΟΣ"), ["i", "stanbul", "οδος"]);
        // Unlike Python (['الط', 'وب'] and no term): Other_Alphabetic marks and symbols are
        // letters here.
        assert_eq!(tokenize("الطّوب ⓐⓑ"), ["الطّوب", "ⓐⓑ"]);
    }

    #[test]
    fn stopwords_are_dropped_after_lowercasing_and_count_agrees() {
        let text = "THE end Is Near, and IT is here: the END.";
        assert_eq!(tokenize(text), ["end", "near", "here", "end"]);
        assert_eq!(term_count(text), 4);
    }
}
