//! Streaming mean and variance.

/// Welford's one-pass mean and variance (Welford 1962; Knuth TAOCP vol. 2, 4.2.2): for each
/// new `x`, `δ = x − mean`, `mean += δ / n`, `m2 += δ · (x − mean)`. Numerically stable where the
/// naive `Σx² − n·mean²` cancels catastrophically.
///
/// # Examples
/// ```
/// use flowvec::vector::fusion::Welford;
/// let mut w = Welford::new();
/// for x in [1.0, 2.0, 3.0, 4.0] {
///     w.push(x);
/// }
/// assert_eq!(w.mean(), Some(2.5));
/// assert_eq!(w.sample_variance(), Some(5.0 / 3.0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Welford {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Welford {
    /// No samples yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sample.
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Number of samples.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean, once there is a sample.
    #[must_use]
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// The sample variance (divided by `n − 1`), once there are two samples.
    #[must_use]
    pub fn sample_variance(&self) -> Option<f64> {
        (self.n > 1).then(|| self.m2 / (self.n - 1) as f64)
    }

    /// The sample standard deviation, once there are two samples.
    #[must_use]
    pub fn sample_std(&self) -> Option<f64> {
        self.sample_variance().map(f64::sqrt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_single() {
        let mut w = Welford::new();
        assert_eq!((w.count(), w.mean(), w.sample_variance()), (0, None, None));
        w.push(7.0);
        assert_eq!(
            (w.count(), w.mean(), w.sample_variance()),
            (1, Some(7.0), None)
        );
        w.push(7.0);
        assert_eq!(w.sample_std(), Some(0.0));
    }

    #[test]
    fn stable_with_a_large_offset() {
        // Naive Σx² − n·mean² loses every digit here; Welford keeps them.
        let mut w = Welford::new();
        for x in [1e9 + 4.0, 1e9 + 7.0, 1e9 + 13.0, 1e9 + 16.0] {
            w.push(x);
        }
        assert_eq!(w.mean(), Some(1e9 + 10.0));
        assert_eq!(w.sample_variance(), Some(30.0));
    }
}
