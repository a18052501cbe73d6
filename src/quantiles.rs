//! Percentiles of latencies that arrive one at a time, in bounded memory:
//! exact (every value kept, nearest rank) while there are at most a given
//! number of them, then from an HDR histogram with three (or, for the many
//! small ones of a chart, two) significant digits, so that the statistics of an hour-long run need no more memory
//! than those of a minute.

use hdrhistogram::Histogram;

/// Latencies (ns), exact until `cap` of them, then a histogram.
#[derive(Clone, Debug)]
pub struct Latencies {
    cap: usize,
    digits: u8,
    exact: Vec<u64>,
    hist: Option<Histogram<u64>>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Latencies {
    /// Keeps every value while there are at most `cap`.
    pub fn new(cap: usize) -> Latencies {
        Latencies {
            cap,
            digits: 3,
            exact: Vec::new(),
            hist: None,
            count: 0,
            sum: 0,
            max: 0,
        }
    }

    /// The same with two significant digits past the cap (a histogram of
    /// about 40 kB, for the buckets of a chart).
    pub fn coarse(cap: usize) -> Latencies {
        Latencies {
            digits: 2,
            ..Latencies::new(cap)
        }
    }

    /// Adds one latency.
    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.sum += u128::from(ns);
        self.max = self.max.max(ns);
        match &mut self.hist {
            Some(h) => h.saturating_record(ns),
            None if self.exact.len() < self.cap => self.exact.push(ns),
            None => {
                let mut h = new_histogram(self.digits);
                for &x in &self.exact {
                    h.saturating_record(x);
                }
                h.saturating_record(ns);
                self.exact = Vec::new();
                self.hist = Some(h);
            }
        }
    }

    /// Adds every latency of `other`.
    pub fn merge(&mut self, other: Latencies) {
        match other.hist {
            None => {
                for x in other.exact {
                    self.add(x);
                }
            }
            Some(oh) => {
                let mut h = self
                    .hist
                    .take()
                    .unwrap_or_else(|| new_histogram(self.digits));
                for &x in &self.exact {
                    h.saturating_record(x);
                }
                let _ = h.add(&oh);
                self.exact = Vec::new();
                self.hist = Some(h);
                self.count += other.count;
                self.sum += other.sum;
                self.max = self.max.max(other.max);
            }
        }
    }

    /// How many were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the percentiles are exact (no histogram yet).
    #[cfg(test)]
    pub fn exact(&self) -> bool {
        self.hist.is_none()
    }

    /// The largest (exact either way).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The mean, rounded down (exact either way).
    pub fn mean(&self) -> u64 {
        if self.count == 0 {
            return 0;
        }
        (self.sum / u128::from(self.count)) as u64
    }

    /// The values at percentiles `ps` (0–100): nearest rank while exact;
    /// 0 when there is none.
    pub fn percentiles<const N: usize>(&mut self, ps: [f64; N]) -> [u64; N] {
        if self.count == 0 {
            return [0; N];
        }
        match &self.hist {
            Some(h) => ps.map(|p| h.value_at_percentile(p).min(self.max)),
            None => {
                self.exact.sort_unstable();
                let xs = &self.exact;
                ps.map(|p| {
                    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
                    xs[rank.clamp(1, xs.len()) - 1]
                })
            }
        }
    }
}

/// The largest latency a histogram tells apart (an hour, in ns); longer
/// ones count as an hour, the exact maximum aside.
const HIGHEST: u64 = 3_600_000_000_000;

/// `digits` significant digits, from 1 ns to [`HIGHEST`].
fn new_histogram(digits: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST, digits).expect("bounds and 2 or 3 digits are allowed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn nearest_rank(xs: &mut [u64], p: f64) -> u64 {
        xs.sort_unstable();
        let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
        xs[rank.clamp(1, xs.len()) - 1]
    }

    #[test]
    fn exact_under_the_cap_and_within_a_thousandth_over_it() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let xs: Vec<u64> = (0..5000)
            .map(|_| rng.random_range(1_000..50_000_000))
            .collect();
        let ps = [50.0, 95.0, 99.0];
        let mut exact = Latencies::new(10_000);
        let mut over = Latencies::new(100);
        for &x in &xs {
            exact.add(x);
            over.add(x);
        }
        assert!(exact.exact() && !over.exact());
        let mut sorted = xs.clone();
        let want = ps.map(|p| nearest_rank(&mut sorted, p));
        assert_eq!(exact.percentiles(ps), want);
        for (got, want) in over.percentiles(ps).into_iter().zip(want) {
            let err = got.abs_diff(want) as f64 / want as f64;
            assert!(err <= 1e-3, "{got} against {want}");
        }
        for l in [&exact, &over] {
            assert_eq!(l.count(), 5000);
            assert_eq!(l.max(), *xs.iter().max().unwrap());
            assert_eq!(
                l.mean(),
                (xs.iter().map(|&x| u128::from(x)).sum::<u128>() / 5000) as u64
            );
        }
    }

    #[test]
    fn merged_halves_are_the_whole() {
        let xs: Vec<u64> = (1..=3000).map(|i| i * 7919 % 100_003).collect();
        for cap in [10, 5000] {
            let (mut a, mut b, mut whole) = (
                Latencies::new(cap),
                Latencies::new(cap),
                Latencies::new(cap),
            );
            for (i, &x) in xs.iter().enumerate() {
                if i % 3 == 0 { &mut a } else { &mut b }.add(x);
                whole.add(x);
            }
            a.merge(b);
            assert_eq!(a.count(), whole.count());
            assert_eq!(a.max(), whole.max());
            assert_eq!(a.mean(), whole.mean());
            assert_eq!(a.percentiles([50.0, 99.0]), whole.percentiles([50.0, 99.0]));
        }
    }
}
