//! [`Index::resumable_query`]: starts a [`ResumableQuery`] cursor.

use super::Index;
use crate::vector::namespace::Include;
use crate::vector::{Query, QueryResult, ResumableQuery, VectorError};

impl Index {
    /// Starts a resumable query (`/resumable-query`): ranks every record of `namespace` that
    /// `query` matches by exact score, and returns the first `topK` results with a cursor over
    /// the rest ([`ResumableQuery::next_page`]). See [`ResumableQuery`] for what later pages see
    /// while writers run, and what the cursor costs.
    ///
    /// The first page is the exact top `topK`: the same records and scores as
    /// [`Index::query`] answers with an exact scan (a dense query on a large namespace may
    /// answer from its graph, rarely differently). A missing namespace gives an empty cursor.
    ///
    /// # Errors
    /// As [`Index::query`].
    ///
    /// # Examples
    /// ```
    /// use flowvec::vector::{Index, IndexConfig, Metric, Query, Vector};
    /// let index = Index::new(IndexConfig::dense(2, Metric::Cosine))?;
    /// let records = (0..25).map(|i| Vector::dense(format!("r{i:02}"), vec![1.0, i as f32])).collect();
    /// index.upsert("", records)?;
    /// let (mut all, mut cursor) = index.resumable_query("", &Query::dense(vec![1.0, 0.0], 10))?;
    /// while !cursor.is_exhausted() {
    ///     all.extend(cursor.next_page(10)?);
    /// }
    /// assert_eq!(all.len(), 25);
    /// assert_eq!(all[0].id, "r00");
    /// assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
    /// # Ok::<(), flowvec::vector::VectorError>(())
    /// ```
    pub fn resumable_query(
        &self,
        namespace: &str,
        query: &Query,
    ) -> Result<(Vec<QueryResult>, ResumableQuery), VectorError> {
        let plan = self.plan(query)?;
        let max_k = self.config.limits.top_k_max;
        let Some(ns) = self.get(namespace) else {
            return Ok((Vec::new(), ResumableQuery::empty(plan.include, max_k)));
        };
        let guard = ns.read();
        if guard.deleted {
            // Removed between the lookup and the lock.
            return Ok((Vec::new(), ResumableQuery::empty(plan.include, max_k)));
        }
        let ranking = guard.rank(&plan);
        let mut cursor = ResumableQuery::new(&ns, ranking, plan.include, max_k);
        // The first page from the same view as the ranking.
        let first = cursor.page_from(&guard, plan.top_k);
        Ok((first, cursor))
    }

    /// A cursor with nothing to return, for a query a host knows matches nothing (a text
    /// query without terms on a sparse index).
    pub(crate) fn empty_resumable_query(&self) -> ResumableQuery {
        ResumableQuery::empty(Include::default(), self.config.limits.top_k_max)
    }
}
