//! The spread of a bench's latencies, as the benches report them: the
//! median, the 99th percentile and the worst.

/// p50, p99 and max of a set of latencies, in the unit they were given.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    /// The median.
    pub p50: f64,
    /// The 99th percentile (nearest rank).
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

/// The spread of `values`; they must not be empty.
pub fn spread(mut values: Vec<f64>) -> Spread {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Spread {
        p50: at(0.5),
        p99: at(0.99),
        max: at(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_the_99th_and_the_worst() {
        let s = spread((1..=101).rev().map(f64::from).collect());
        assert_eq!((s.p50, s.p99, s.max), (51.0, 100.0, 101.0));
    }
}
