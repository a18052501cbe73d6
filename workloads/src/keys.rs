//! Key distributions shared by all workloads.
//!
//! Contention is what exposes isolation bugs: two transactions can only
//! conflict if they touch the same key. The distribution decides how often
//! that happens. Keys are integers `0..n`; every skewed distribution makes the
//! *low* keys hot (key 0 is the hottest), so "hot" is easy to see in a
//! history and range reads over low keys are the contended ones.
//!
//! | spec | meaning |
//! |---|---|
//! | `uniform` | every key equally likely |
//! | `zipf[:θ]` | bounded Zipfian, P(i) ∝ 1/(i+1)^θ; θ defaults to 0.99 (YCSB) |
//! | `hotspot[:f:p]` | the first f·n keys get probability p; defaults 0.2 and 0.8 |
//! | `exponential[:λ]` | P(i) ∝ e^(−λ·i/n); λ defaults to ln 20 / (6/7) ≈ 3.5 (YCSB: 95% of ops on the first 6/7 of the keys) |
//!
//! The exponential distribution is scale-free in `n`: λ is the decay over the
//! whole key range, not per key. Elle's and MTC's "exponential, base b over
//! n keys" (each key b times as likely as the next) is `exponential:{n·ln b}`;
//! for their usual 10 keys and base 2 that is `exponential:6.93`.

use std::fmt;
use std::str::FromStr;

use history::Key;
use rand::distr::Distribution;
use rand::{Rng, RngExt};

use crate::error::WorkloadError;

/// YCSB's default Zipfian constant.
pub const DEFAULT_ZIPF_THETA: f64 = 0.99;
/// The share of keys that are hot in the default hotspot distribution.
pub const DEFAULT_HOT_FRACTION: f64 = 0.2;
/// The share of operations that go to the hot keys by default.
pub const DEFAULT_HOT_PROBABILITY: f64 = 0.8;
/// YCSB's default exponential decay: 95% of operations on the first 6/7 of
/// the keys, i.e. λ = ln 20 / (6/7).
pub const DEFAULT_EXP_LAMBDA: f64 = 3.495_020_985_812_99;

/// How a workload picks keys, as given to `--dist`; skew controls contention.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key equally likely: the least contention for a key count.
    Uniform,
    /// Bounded Zipfian with constant `theta` (θ ≥ 0; 0 is uniform).
    Zipf { theta: f64 },
    /// `hot_fraction` of the keys (the lowest ones) get `hot_probability`
    /// of the operations, the rest share the remainder uniformly.
    Hotspot {
        hot_fraction: f64,
        hot_probability: f64,
    },
    /// Truncated exponential over the normalised key range, decay `lambda`.
    Exponential { lambda: f64 },
}

impl Default for KeyDist {
    fn default() -> KeyDist {
        KeyDist::Zipf {
            theta: DEFAULT_ZIPF_THETA,
        }
    }
}

impl KeyDist {
    /// Checks the parameters, so a bad distribution fails before a run starts.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |reason: &str| {
            Err(WorkloadError::BadDist {
                spec: self.to_string(),
                reason: reason.to_string(),
            })
        };
        match *self {
            KeyDist::Uniform => Ok(()),
            KeyDist::Zipf { theta } => {
                if theta.is_finite() && theta >= 0.0 {
                    Ok(())
                } else {
                    bad("theta must be a finite number >= 0")
                }
            }
            KeyDist::Hotspot {
                hot_fraction,
                hot_probability,
            } => {
                if !(hot_fraction > 0.0 && hot_fraction <= 1.0) {
                    bad("the hot key fraction must be in (0, 1]")
                } else if !(0.0..=1.0).contains(&hot_probability) {
                    bad("the hot probability must be in [0, 1]")
                } else {
                    Ok(())
                }
            }
            KeyDist::Exponential { lambda } => {
                if lambda.is_finite() && lambda > 0.0 {
                    Ok(())
                } else {
                    bad("lambda must be a finite number > 0")
                }
            }
        }
    }
}

impl fmt::Display for KeyDist {
    /// The canonical spec, which parses back to the same distribution.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Zipf { theta } => write!(f, "zipf:{theta}"),
            KeyDist::Hotspot {
                hot_fraction,
                hot_probability,
            } => write!(f, "hotspot:{hot_fraction}:{hot_probability}"),
            KeyDist::Exponential { lambda } => write!(f, "exponential:{lambda}"),
        }
    }
}

impl FromStr for KeyDist {
    type Err = WorkloadError;

    fn from_str(spec: &str) -> Result<KeyDist, WorkloadError> {
        let bad = |reason: String| WorkloadError::BadDist {
            spec: spec.to_string(),
            reason,
        };
        let mut parts = spec.trim().split(':');
        let name = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: Vec<&str> = parts.collect();
        let nums = params
            .iter()
            .map(|p| {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| bad(format!("`{p}` is not a number")))
            })
            .collect::<Result<Vec<f64>, _>>()?;
        let arity = |max: usize| {
            if nums.len() > max {
                Err(bad(format!(
                    "`{name}` takes at most {max} parameter(s), got {}",
                    nums.len()
                )))
            } else {
                Ok(())
            }
        };
        let dist = match name.as_str() {
            "uniform" => {
                arity(0)?;
                KeyDist::Uniform
            }
            "zipf" | "zipfian" => {
                arity(1)?;
                KeyDist::Zipf {
                    theta: nums.first().copied().unwrap_or(DEFAULT_ZIPF_THETA),
                }
            }
            "hotspot" => {
                if nums.len() == 1 {
                    return Err(bad(
                        "hotspot takes both KEY_FRACTION and PROBABILITY, or neither".into(),
                    ));
                }
                arity(2)?;
                KeyDist::Hotspot {
                    hot_fraction: nums.first().copied().unwrap_or(DEFAULT_HOT_FRACTION),
                    hot_probability: nums.get(1).copied().unwrap_or(DEFAULT_HOT_PROBABILITY),
                }
            }
            "exponential" | "exp" => {
                arity(1)?;
                KeyDist::Exponential {
                    lambda: nums.first().copied().unwrap_or(DEFAULT_EXP_LAMBDA),
                }
            }
            _ => return Err(bad("unknown distribution".into())),
        };
        dist.validate().map_err(|e| match e {
            WorkloadError::BadDist { reason, .. } => bad(reason),
            other => other,
        })?;
        Ok(dist)
    }
}

/// Above this many keys the Zipf normaliser is computed with an integral for
/// the tail instead of term by term, so setup stays fast for huge key spaces.
const ZETA_EXACT_LIMIT: u64 = 1 << 22;
/// Terms summed exactly before the tail integral takes over.
const ZETA_HEAD: u64 = 1 << 16;

/// ζ(n, θ) = Σ_{i=1..n} i^−θ, exact up to `exact_limit` terms, otherwise
/// the first `head` terms plus the rest by Euler–Maclaurin (midpoint rule
/// with its first correction; relative error below 1e-12 here).
fn zeta_with(n: u64, theta: f64, exact_limit: u64, head: u64) -> f64 {
    if n <= exact_limit {
        return (1..=n).map(|i| (i as f64).powf(-theta)).sum();
    }
    let head_sum: f64 = (1..=head).map(|i| (i as f64).powf(-theta)).sum();
    let (a, b) = (head as f64 + 0.5, n as f64 + 0.5);
    let tail = if (theta - 1.0).abs() < 1e-12 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
    };
    // Σ f(i) ≈ ∫ f − (f′(b) − f′(a)) / 24, with f′(x) = −θ·x^(−θ−1).
    let correction = theta * (b.powf(-theta - 1.0) - a.powf(-theta - 1.0)) / 24.0;
    head_sum + tail + correction
}

fn zeta(n: u64, theta: f64) -> f64 {
    zeta_with(n, theta, ZETA_EXACT_LIMIT, ZETA_HEAD)
}

#[derive(Clone, Debug)]
enum Sampler {
    Uniform,
    /// Gray et al., "Quickly generating billion-record synthetic databases"
    /// (SIGMOD '94), as in YCSB's ZipfianGenerator; for 0 < θ < 1.
    Gray {
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        half_pow_theta: f64,
    },
    /// Rejection sampling (rand_distr) for θ ≥ 1, where Gray's formula has a
    /// pole; `zetan` only serves [`KeySampler::probability`].
    Zipf {
        theta: f64,
        zetan: f64,
        inner: rand_distr::Zipf<f64>,
    },
    Hotspot {
        hot: u64,
        probability: f64,
    },
    Exponential {
        lambda: f64,
        /// 1 − e^−λ: the mass of the untruncated distribution on [0, 1).
        mass: f64,
    },
}

/// A distribution set up for a key count: O(1) per key drawn, shareable
/// between clients.
#[derive(Clone, Debug)]
pub struct KeySampler {
    n: u64,
    dist: KeyDist,
    sampler: Sampler,
}

/// How often a rejected duplicate is redrawn before [`KeySampler::sample_new`]
/// falls back to probing the next free key, so small skewed key spaces cannot
/// stall a generator.
const MAX_REDRAWS: u32 = 32;

impl KeySampler {
    /// Sets up `dist` over keys `0..n` (Zipf: O(n) once, capped for huge n).
    pub fn new(dist: KeyDist, n: u64) -> Result<KeySampler, WorkloadError> {
        dist.validate()?;
        if n == 0 {
            return Err(WorkloadError::BadDist {
                spec: dist.to_string(),
                reason: "the key count must be at least 1".into(),
            });
        }
        let sampler = match dist {
            KeyDist::Uniform => Sampler::Uniform,
            KeyDist::Zipf { theta: 0.0 } => Sampler::Uniform,
            KeyDist::Zipf { theta } if theta < 1.0 => {
                let zetan = zeta(n, theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let eta = if n > 2 {
                    (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
                } else {
                    0.0 // never used: with n ≤ 2 the first two branches cover u
                };
                Sampler::Gray {
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta,
                    half_pow_theta: 0.5f64.powf(theta),
                }
            }
            KeyDist::Zipf { theta } => Sampler::Zipf {
                theta,
                zetan: zeta(n, theta),
                inner: rand_distr::Zipf::new(n as f64, theta).map_err(|e| {
                    WorkloadError::BadDist {
                        spec: dist.to_string(),
                        reason: e.to_string(),
                    }
                })?,
            },
            KeyDist::Hotspot {
                hot_fraction,
                hot_probability,
            } => Sampler::Hotspot {
                hot: ((hot_fraction * n as f64).round() as u64).clamp(1, n),
                probability: hot_probability,
            },
            KeyDist::Exponential { lambda } => Sampler::Exponential {
                lambda,
                mass: -(-lambda).exp_m1(),
            },
        };
        Ok(KeySampler { n, dist, sampler })
    }

    /// The key count `n`: keys are `0..n`.
    pub fn keys(&self) -> u64 {
        self.n
    }

    /// The distribution this sampler draws from.
    pub fn dist(&self) -> KeyDist {
        self.dist
    }

    /// Draws a key index in `0..n`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let n = self.n;
        let k = match &self.sampler {
            Sampler::Uniform => rng.random_range(0..n),
            Sampler::Gray {
                zetan,
                alpha,
                eta,
                half_pow_theta,
                ..
            } => {
                let u: f64 = rng.random();
                let uz = u * zetan;
                if uz < 1.0 {
                    0
                } else if uz < 1.0 + half_pow_theta {
                    1
                } else {
                    (n as f64 * (eta * u - eta + 1.0).powf(*alpha)) as u64
                }
            }
            Sampler::Zipf { inner, .. } => (inner.sample(rng) as u64).saturating_sub(1),
            Sampler::Hotspot { hot, probability } => {
                if *hot >= n || rng.random_bool(*probability) {
                    rng.random_range(0..*hot)
                } else {
                    rng.random_range(*hot..n)
                }
            }
            Sampler::Exponential { lambda, mass } => {
                let u: f64 = rng.random();
                // Inverse CDF of Exp(λ) truncated to [0, 1).
                let x = -(-u * mass).ln_1p() / lambda;
                (x * n as f64) as u64
            }
        };
        k.min(n - 1)
    }

    /// Draws a key as the history names it.
    #[inline]
    pub fn key<R: Rng + ?Sized>(&self, rng: &mut R) -> Key {
        Key::Int(self.sample(rng) as i64)
    }

    /// Draws a key not in `taken`, so a transaction can touch distinct keys;
    /// `None` once every key is taken. After a few redraws it takes the next
    /// free key upwards, which keeps the cost bounded on tiny skewed spaces.
    pub fn sample_new<R: Rng + ?Sized>(&self, rng: &mut R, taken: &[u64]) -> Option<u64> {
        if taken.len() as u64 >= self.n {
            return None;
        }
        let mut k = self.sample(rng);
        let mut redraws = 0;
        while taken.contains(&k) {
            if redraws < MAX_REDRAWS {
                k = self.sample(rng);
                redraws += 1;
            } else {
                k = if k + 1 == self.n { 0 } else { k + 1 };
            }
        }
        Some(k)
    }

    /// Fills `out` with `count` distinct keys (fewer if `n < count`), in
    /// draw order.
    pub fn sample_distinct<R: Rng + ?Sized>(&self, rng: &mut R, count: usize, out: &mut Vec<u64>) {
        out.clear();
        while out.len() < count {
            match self.sample_new(rng, out) {
                Some(k) => out.push(k),
                None => break,
            }
        }
    }

    /// The intended probability of key `i`, for sizing things by expected
    /// load (Zipf with 0 < θ < 1: the ideal Zipf law, which Gray's method
    /// matches exactly for keys 0 and 1 and closely beyond).
    pub fn probability(&self, i: u64) -> f64 {
        let n = self.n;
        if i >= n {
            return 0.0;
        }
        match &self.sampler {
            Sampler::Uniform => 1.0 / n as f64,
            Sampler::Gray { theta, zetan, .. } | Sampler::Zipf { theta, zetan, .. } => {
                ((i + 1) as f64).powf(-theta) / zetan
            }
            Sampler::Hotspot { hot, probability } => {
                if *hot >= n {
                    1.0 / n as f64
                } else if i < *hot {
                    probability / *hot as f64
                } else {
                    (1.0 - probability) / (n - hot) as f64
                }
            }
            Sampler::Exponential { lambda, mass } => {
                let (a, b) = (i as f64 / n as f64, (i + 1) as f64 / n as f64);
                ((-lambda * a).exp() - (-lambda * b).exp()) / mass
            }
        }
    }
}

impl Distribution<u64> for KeySampler {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        KeySampler::sample(self, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn counts(dist: KeyDist, n: u64, draws: usize) -> Vec<u64> {
        let s = KeySampler::new(dist, n).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = s.sample(&mut rng);
            assert!(k < n, "{dist}: key {k} out of 0..{n}");
            c[k as usize] += 1;
        }
        c
    }

    #[test]
    fn parse_accepts_the_documented_forms() {
        assert_eq!("uniform".parse::<KeyDist>().unwrap(), KeyDist::Uniform);
        assert_eq!(
            "zipf".parse::<KeyDist>().unwrap(),
            KeyDist::Zipf { theta: 0.99 }
        );
        assert_eq!(
            "zipf:0.8".parse::<KeyDist>().unwrap(),
            KeyDist::Zipf { theta: 0.8 }
        );
        assert_eq!(
            "hotspot".parse::<KeyDist>().unwrap(),
            KeyDist::Hotspot {
                hot_fraction: 0.2,
                hot_probability: 0.8
            }
        );
        assert_eq!(
            "hotspot:0.1:0.9".parse::<KeyDist>().unwrap(),
            KeyDist::Hotspot {
                hot_fraction: 0.1,
                hot_probability: 0.9
            }
        );
        assert_eq!(
            "exponential".parse::<KeyDist>().unwrap(),
            KeyDist::Exponential {
                lambda: DEFAULT_EXP_LAMBDA
            }
        );
        assert_eq!(
            "exponential:2.0".parse::<KeyDist>().unwrap(),
            KeyDist::Exponential { lambda: 2.0 }
        );
        for d in [
            "uniform",
            "zipf:0.5",
            "zipf:1.2",
            "hotspot:0.3:0.7",
            "exponential:6.5",
        ] {
            let parsed: KeyDist = d.parse().unwrap();
            assert_eq!(parsed.to_string().parse::<KeyDist>().unwrap(), parsed);
        }
        assert!((DEFAULT_EXP_LAMBDA - 20f64.ln() / (6.0 / 7.0)).abs() < 1e-12);
    }

    #[test]
    fn parse_rejects_bad_specs_with_a_useful_message() {
        for bad in [
            "",
            "gaussian",
            "zipf:x",
            "zipf:-1",
            "zipf:0.5:1",
            "hotspot:0.2",
            "hotspot:0:0.5",
            "hotspot:0.2:1.5",
            "exponential:0",
            "exponential:nan",
            "uniform:3",
        ] {
            let err = bad.parse::<KeyDist>().unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("valid: uniform, zipf"), "{bad}: {msg}");
            assert!(!msg.contains('\n'), "{bad}: {msg}");
        }
    }

    #[test]
    fn zeta_tail_integral_matches_the_exact_sum() {
        for theta in [0.5, 0.99, 1.0, 1.3] {
            let exact = zeta_with(200_000, theta, u64::MAX, 0);
            let approx = zeta_with(200_000, theta, 0, 1000);
            assert!(
                ((exact - approx) / exact).abs() < 1e-12,
                "theta {theta}: exact {exact} approx {approx}"
            );
        }
    }

    #[test]
    fn every_distribution_stays_in_range_even_for_tiny_key_spaces() {
        for d in [
            "uniform",
            "zipf",
            "zipf:0.5",
            "zipf:1.5",
            "hotspot",
            "hotspot:1:1",
            "exponential",
            "exponential:50",
        ] {
            let dist: KeyDist = d.parse().unwrap();
            for n in [1, 2, 3, 7, 1000] {
                let c = counts(dist, n, 5_000);
                assert_eq!(c.iter().sum::<u64>(), 5_000);
            }
        }
    }

    #[test]
    fn uniform_is_flat() {
        let c = counts(KeyDist::Uniform, 10, 100_000);
        for &x in &c {
            assert!((9_000..11_000).contains(&x), "{c:?}");
        }
    }

    #[test]
    fn zipf_skews_toward_low_keys_with_the_expected_head_mass() {
        let n = 1000;
        let draws = 400_000;
        for theta in [0.5, 0.99, 1.2] {
            let dist = KeyDist::Zipf { theta };
            let s = KeySampler::new(dist, n).unwrap();
            let c = counts(dist, n, draws);
            // Keys 0 and 1 follow the Zipf law exactly (Gray's method too).
            for i in 0..2 {
                let expected = s.probability(i) * draws as f64;
                let got = c[i as usize] as f64;
                assert!(
                    (got - expected).abs() < 0.05 * expected,
                    "theta {theta} key {i}: got {got}, expected {expected}"
                );
            }
            // Strongly decreasing in the head, and the low decile dominates.
            assert!(c[0] > c[1] && c[1] > c[2] && c[2] > c[10] && c[10] > c[100]);
            let low: u64 = c[..100].iter().sum();
            let high: u64 = c[900..].iter().sum();
            assert!(low > 4 * high, "theta {theta}: low {low} high {high}");
        }
        // θ = 0.99 over 1000 keys: key 0 gets 1/ζ(1000, 0.99) ≈ 13.3%.
        let c = counts(KeyDist::default(), n, draws);
        let p0 = c[0] as f64 / draws as f64;
        assert!((0.125..0.142).contains(&p0), "p0 = {p0}");
    }

    #[test]
    fn hotspot_hits_the_hot_set_with_the_given_probability() {
        for (f, p) in [(0.2, 0.8), (0.1, 0.5), (0.5, 0.95)] {
            let n = 1000u64;
            let dist = KeyDist::Hotspot {
                hot_fraction: f,
                hot_probability: p,
            };
            let draws = 200_000;
            let c = counts(dist, n, draws);
            let hot = (f * n as f64).round() as usize;
            let share = c[..hot].iter().sum::<u64>() as f64 / draws as f64;
            assert!((share - p).abs() < 0.01, "({f},{p}): hot share {share}");
            // Uniform inside each part.
            let (h0, h1) = (c[0] as f64, c[hot - 1] as f64);
            assert!((h0 - h1).abs() < 0.3 * h0.max(h1), "{h0} vs {h1}");
        }
    }

    #[test]
    fn exponential_decays_as_configured() {
        let n = 100u64;
        let draws = 300_000;
        let lambda = 2.0;
        let dist = KeyDist::Exponential { lambda };
        let s = KeySampler::new(dist, n).unwrap();
        let c = counts(dist, n, draws);
        let total: f64 = (0..n).map(|i| s.probability(i)).sum();
        assert!((total - 1.0).abs() < 1e-9);
        // The first and last tenth compare as e^(−λ·0.9).
        let first: u64 = c[..10].iter().sum();
        let last: u64 = c[90..].iter().sum();
        let ratio = last as f64 / first as f64;
        let expected = (-lambda * 0.9f64).exp();
        assert!(
            (ratio - expected).abs() < 0.05 * expected,
            "{ratio} vs {expected}"
        );
        // Elle's base 2 over 10 keys: key 0 about half the time.
        let elle = KeyDist::Exponential {
            lambda: 10.0 * 2f64.ln(),
        };
        let c = counts(elle, 10, 100_000);
        let p0 = c[0] as f64 / 100_000.0;
        assert!((p0 - 0.5).abs() < 0.01, "p0 = {p0}");
    }

    #[test]
    fn probabilities_sum_to_one() {
        for d in ["uniform", "zipf", "zipf:1.5", "hotspot", "exponential"] {
            let s = KeySampler::new(d.parse().unwrap(), 500).unwrap();
            let total: f64 = (0..500).map(|i| s.probability(i)).sum();
            assert!((total - 1.0).abs() < 1e-9, "{d}: {total}");
            assert_eq!(s.probability(500), 0.0);
        }
    }

    #[test]
    fn distinct_sampling_never_repeats_and_terminates_on_tiny_skewed_spaces() {
        let s = KeySampler::new(KeyDist::Zipf { theta: 1.5 }, 8).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut out = Vec::new();
        for _ in 0..1000 {
            s.sample_distinct(&mut rng, 8, &mut out);
            let mut sorted = out.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..8).collect::<Vec<u64>>());
        }
        s.sample_distinct(&mut rng, 20, &mut out);
        assert_eq!(out.len(), 8);
        assert_eq!(s.sample_new(&mut rng, &out), None);
    }

    #[test]
    fn zero_keys_is_refused() {
        assert!(KeySampler::new(KeyDist::Uniform, 0).is_err());
    }
}
