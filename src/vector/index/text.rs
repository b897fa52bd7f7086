//! Text `data` in upserts and queries: [`Index::upsert_data`], [`Index::check_upsert_data`]
//! and [`Index::text_query`].

use super::Index;
use crate::vector::text::{Bm25, Bm25Params, Embedder, EmbeddingKind, term_count};
use crate::vector::{Query, QueryMode, Vector, VectorError};
use std::collections::HashSet;

/// What a host tells a caller whose dense index has no model.
pub(crate) const DENSE_EMBEDDER_HINT: &str = "start flowvec-server with --model-dir (all-MiniLM-L6-v2, 384-d; scripts/fetch-minilm fetches its files), or give a host's flowvec::wire::Service its own dense model (flowvec::wire::Service::with_dense_embedder); or send `vector` (with `data` kept as text) to /upsert and /query, or use a SPARSE index, whose built-in BM25 embeds text";
const SPARSE_HINT: &str =
    "create the index with BM25 as its sparse embedder (IndexConfig::with_bm25)";

impl Index {
    /// BM25's parameters, or the error for an index that has a sparse part but no BM25.
    fn bm25_params(&self) -> Result<Option<Bm25Params>, VectorError> {
        if !self.config.kind.has_sparse() {
            return Ok(None);
        }
        match self.config.embedders.bm25 {
            Some(p) => Ok(Some(p)),
            None => Err(VectorError::NoEmbedder {
                part: "sparse",
                hint: SPARSE_HINT,
            }),
        }
    }

    /// The checks every text record must pass before its vectors are made.
    fn text_shape(&self, record: &Vector) -> Result<(), VectorError> {
        let Some(data) = &record.data else {
            return Err(VectorError::MissingData {
                id: record.id.clone(),
            });
        };
        if record.sparse_vector.is_some() {
            return Err(VectorError::VectorWithData {
                id: record.id.clone(),
                part: "sparseVector",
            });
        }
        if self.config.kind.has_dense() && record.vector.is_none() {
            return Err(VectorError::NoEmbedder {
                part: "dense",
                hint: DENSE_EMBEDDER_HINT,
            });
        }
        if self.config.kind.has_sparse() && Bm25::query(data).is_none() {
            return Err(VectorError::NoTerms {
                id: record.id.clone(),
            });
        }
        Ok(())
    }

    /// Inserts or wholly replaces records from their text (`/upsert-data`).
    ///
    /// Each record has `data` and no `sparseVector`; on a dense or hybrid index it also has the
    /// dense `vector` the host's model made from `data` ([`crate::vector::text::Embedder`]).
    /// The sparse part is made here with BM25, whose average document length is the mean term
    /// count of the `data` of the namespace's records as they will be after this batch (the
    /// current records, less those the batch replaces, plus the batch; of an id repeated in the
    /// batch the last one). Those statistics depend only on the records, so replaying the same
    /// writes, or loading a snapshot and replaying the rest, gives the same weights. Weights
    /// are fixed when a record is written. The records keep their `data`.
    ///
    /// Every record is checked first; if any is bad nothing is written.
    ///
    /// # Errors
    /// [`VectorError::MissingData`], [`VectorError::VectorWithData`], [`VectorError::NoTerms`]
    /// (a sparse part without terms), [`VectorError::NoEmbedder`] (no BM25 for a sparse part, or
    /// no dense `vector` given for a dense part), and the errors of [`Index::upsert`].
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::text::Bm25Params;
    /// use flowvec::vector::{Index, IndexConfig, Vector};
    /// let index = Index::new(IndexConfig::sparse().with_bm25(Bm25Params::default()))?;
    /// index.upsert_data("", vec![
    ///     Vector { id: "a".into(), data: Some("red apples and green pears".into()), ..Vector::default() },
    ///     Vector { id: "b".into(), data: Some("a green field".into()), ..Vector::default() },
    /// ])?;
    /// let query = index.text_query(flowvec::vector::Query::default(), "apples", None)?;
    /// let hits = index.query("", &query.expect("has terms"))?;
    /// assert_eq!(hits.len(), 1);
    /// assert_eq!(hits[0].id, "a");
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn upsert_data(&self, namespace: &str, records: Vec<Vector>) -> Result<(), VectorError> {
        let params = self.bm25_params()?;
        records.iter().try_for_each(|r| self.text_shape(r))?;
        if records.is_empty() {
            return Ok(());
        }
        let validator = self.validator();
        self.write(namespace, true, |ns| {
            let records = match params {
                None => records,
                Some(params) => {
                    // The namespace as it will be after this batch: a replaced record leaves
                    // the statistics, and of an id repeated in the batch the last one counts.
                    let before = ns.text_stats().unwrap_or_default();
                    let (mut documents, mut terms) = (before.documents, before.terms);
                    let mut seen = HashSet::with_capacity(records.len());
                    for r in records.iter().rev() {
                        if !seen.insert(r.id.as_str()) {
                            continue;
                        }
                        if let Some(old) = ns.data_of(&r.id) {
                            documents -= 1;
                            terms -= term_count(old) as u64;
                        }
                        documents += 1;
                        terms += term_count(r.data.as_deref().unwrap_or("")) as u64;
                    }
                    let avg = terms as f64 / documents as f64;
                    let bm25 = Bm25::new(params, avg)?;
                    records
                        .into_iter()
                        .map(|mut r| {
                            r.sparse_vector = r.data.as_deref().and_then(|d| bm25.document(d));
                            r
                        })
                        .collect()
                }
            };
            let checked = records
                .into_iter()
                .map(|r| validator.record(r))
                .collect::<Result<Vec<_>, _>>()?;
            checked.into_iter().try_for_each(|record| ns.put(record))
        })?;
        Ok(())
    }

    /// The checks of [`upsert_data`](Self::upsert_data) without writing anything (a host that
    /// logs writes refuses bad input before it reaches its log). The sparse part is checked
    /// with the record's terms; its weights are made at write time.
    ///
    /// # Errors
    /// The first bad record's error, as [`upsert_data`](Self::upsert_data) would return it.
    pub fn check_upsert_data(&self, records: &[Vector]) -> Result<(), VectorError> {
        let has_sparse = self.bm25_params()?.is_some();
        let validator = self.validator();
        records.iter().try_for_each(|r| {
            self.text_shape(r)?;
            let mut r = r.clone();
            if has_sparse {
                r.sparse_vector = r.data.as_deref().and_then(Bm25::query);
            }
            validator.record(r).map(drop)
        })
    }

    /// `query` searching for the text `data` (`/query-data`): its sparse part from BM25 (term
    /// presence; `weightingStrategy: "IDF"` weighs terms by the current corpus) and its dense
    /// part the host's embedding of `data` (`dense`), for the parts the index has and the
    /// query's `queryMode` uses. `None` when nothing is left to search: a sparse index and
    /// text without terms (the answer is then no results).
    ///
    /// A hybrid index without a dense model (`dense` is `None`) searches its sparse part only.
    ///
    /// # Errors
    /// [`VectorError::NoEmbedder`]: a dense index and no `dense` embedding, or a sparse part
    /// and no BM25; [`VectorError::VectorWithData`] when `query` already has a vector part.
    pub fn text_query(
        &self,
        mut query: Query,
        data: &str,
        dense: Option<Vec<f32>>,
    ) -> Result<Option<Query>, VectorError> {
        for (present, part) in [
            (query.vector.is_some(), "vector"),
            (query.sparse_vector.is_some(), "sparseVector"),
        ] {
            if present {
                return Err(VectorError::VectorWithData {
                    id: String::new(),
                    part,
                });
            }
        }
        let kind = self.config.kind;
        let wants_dense = kind.has_dense() && query.query_mode != QueryMode::Sparse;
        let wants_sparse = kind.has_sparse() && query.query_mode != QueryMode::Dense;
        if wants_sparse {
            self.bm25_params()?;
            query.sparse_vector = Bm25::query(data);
        }
        if wants_dense {
            match dense {
                Some(v) => query.vector = Some(v),
                None if kind.has_sparse() && query.query_mode == QueryMode::Hybrid => {}
                None => {
                    return Err(VectorError::NoEmbedder {
                        part: "dense",
                        hint: DENSE_EMBEDDER_HINT,
                    });
                }
            }
        }
        if query.vector.is_none() && query.sparse_vector.is_none() {
            return Ok(None);
        }
        Ok(Some(query))
    }

    /// Checks that `model` can embed `data` for this index's dense part: a dense model whose
    /// dimension is the index's (a host checks its model once, at start-up, rather than have
    /// every text request refused).
    ///
    /// # Errors
    /// [`VectorError::InvalidParameter`] naming the model: a sparse model, a dimension other
    /// than the index's, or an index without a dense part.
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::text::{EmbedError, Embedder, Embedding, EmbeddingKind, TextRole};
    /// use flowvec::vector::{Index, IndexConfig, Metric};
    /// #[derive(Debug)]
    /// struct Toy;
    /// impl Embedder for Toy {
    ///     fn name(&self) -> &str { "toy" }
    ///     fn kind(&self) -> EmbeddingKind { EmbeddingKind::Dense { dimension: 2 } }
    ///     fn embed(&self, texts: &[&str], _: TextRole) -> Result<Vec<Embedding>, EmbedError> {
    ///         Ok(texts.iter().map(|t| Embedding::Dense(vec![t.len() as f32, 1.0])).collect())
    ///     }
    /// }
    /// let fits = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// assert!(fits.check_dense_embedder(&Toy).is_ok());
    /// let wider = Index::new(IndexConfig::dense(384, Metric::Cosine))?;
    /// assert!(wider.check_dense_embedder(&Toy).unwrap_err().to_string().contains("384"));
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn check_dense_embedder(&self, model: &dyn Embedder) -> Result<(), VectorError> {
        let config = &self.config;
        let bad = |value: String, expected: &'static str| VectorError::InvalidParameter {
            name: "dense embedding model",
            value,
            expected,
        };
        if !config.kind.has_dense() {
            return Err(bad(
                model.name().to_owned(),
                "none: a SPARSE index has no dense part (BM25 embeds its text)",
            ));
        }
        match model.kind() {
            EmbeddingKind::Dense { dimension } if dimension == config.dimension => Ok(()),
            EmbeddingKind::Dense { dimension } => Err(bad(
                format!(
                    "{} of dimension {dimension}, for an index of dimension {}",
                    model.name(),
                    config.dimension
                ),
                "a model of the index's dimension",
            )),
            EmbeddingKind::Sparse => {
                Err(bad(format!("{} (sparse)", model.name()), "a dense model"))
            }
        }
    }

    /// Whether a text query in `mode` needs the host's dense embedding of its `data`.
    #[must_use]
    pub fn text_query_uses_dense(&self, mode: QueryMode) -> bool {
        self.config.kind.has_dense() && mode != QueryMode::Sparse
    }
}
