//! Small significance tests for `harness compare`: is a change between two
//! runs larger than what chance explains at their sizes?
//!
//! * Abort rates: a one-sided two-proportion z-test (pooled), aborted out of
//!   attempted transactions in each run.
//! * Throughput: committed transactions as Poisson counts over each run's
//!   duration; given the total, NEW's count is binomial with success
//!   probability `t_new / (t_old + t_new)` when the rates are equal. The test
//!   is the normal approximation of that conditional binomial test.
//!
//! Both assume the transactions of a run are independent trials. They
//! answer "could sampling noise explain this?", not "do identical runs
//! vary this much?": a database whose abort rate swings between identical
//! runs (e.g. with thread scheduling) can still differ significantly.

/// The complementary error function, erfc(x), with a fractional error below
/// 1.2e-7 everywhere (Numerical Recipes' Chebyshev fit, `erfcc`).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// P(Z > z) for a standard normal Z: the one-sided p-value of a z score.
pub fn upper_tail(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// A test's statistic and its one-sided p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Test {
    /// The z score (positive: NEW is higher).
    pub z: f64,
    /// One-sided p-value in the direction asked for.
    pub p: f64,
}

/// One-sided two-proportion z-test that `x2/n2` is above `x1/n1` (pooled
/// standard error). No variation at all (both 0% or both 100%) gives z = 0,
/// p = 1; so does an empty run.
pub fn two_proportion_rise(x1: u64, n1: u64, x2: u64, n2: u64) -> Test {
    if n1 == 0 || n2 == 0 {
        return Test { z: 0.0, p: 1.0 };
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let pooled = (x1 + x2) as f64 / (n1f + n2f);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1f + 1.0 / n2f)).sqrt();
    if se == 0.0 {
        return Test { z: 0.0, p: 1.0 };
    }
    let z = (x2 as f64 / n2f - x1 as f64 / n1f) / se;
    Test {
        z,
        p: upper_tail(z),
    }
}

/// One-sided test that the Poisson rate of `c2` events in `t2` seconds is
/// below that of `c1` events in `t1` seconds (`z` negative when it is
/// lower; `p` is P(as low or lower | equal rates)). Conditional on
/// `c1 + c2`, `c2` is binomial with `q = t2 / (t1 + t2)`; the normal
/// approximation of that binomial gives z.
pub fn poisson_rate_drop(c1: u64, t1: f64, c2: u64, t2: f64) -> Test {
    let total = (c1 + c2) as f64;
    if total == 0.0 || t1 <= 0.0 || t2 <= 0.0 || !t1.is_finite() || !t2.is_finite() {
        return Test { z: 0.0, p: 1.0 };
    }
    let q = t2 / (t1 + t2);
    let sd = (total * q * (1.0 - q)).sqrt();
    let z = (c2 as f64 - total * q) / sd;
    Test {
        z,
        p: upper_tail(-z),
    }
}

/// A p-value for people: `3e-7`, `0.004`, `0.31`.
pub fn show_p(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.0e}")
    } else if p < 0.01 {
        format!("{p:.3}")
    } else {
        format!("{p:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn erfc_and_the_normal_tail_match_tables() {
        // erfc values from Abramowitz & Stegun, table 7.1.
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (3.0, 2.209_049_7e-5),
            (-1.0, 1.842_700_793),
        ] {
            assert!(close(erfc(x), want, 2e-7), "erfc({x}) = {}", erfc(x));
        }
        // Standard normal upper tails.
        for (z, want) in [
            (0.0, 0.5),
            (1.644_853_6, 0.05),
            (1.959_964, 0.025),
            (2.326_348, 0.01),
            (3.090_232, 0.001),
            (5.0, 2.866_516e-7),
            (-1.959_964, 0.975),
        ] {
            assert!(
                close(upper_tail(z), want, 1e-5),
                "Q({z}) = {}",
                upper_tail(z)
            );
        }
    }

    #[test]
    fn two_proportion_z_matches_a_hand_computation() {
        // 100/1000 vs 150/1000: pooled 0.125, se = sqrt(.125*.875*.002)
        // = 0.014790, z = 0.05 / 0.014790 = 3.3806.
        let t = two_proportion_rise(100, 1000, 150, 1000);
        assert!(close(t.z, 3.3806, 1e-4), "{t:?}");
        assert!(close(t.p, 3.617e-4, 1e-2), "{t:?}");
        // A fall is not a rise.
        let t = two_proportion_rise(150, 1000, 100, 1000);
        assert!(t.z < 0.0 && t.p > 0.99, "{t:?}");
        // Nothing varies.
        assert_eq!(two_proportion_rise(0, 50, 0, 50), Test { z: 0.0, p: 1.0 });
        assert_eq!(two_proportion_rise(0, 0, 3, 5), Test { z: 0.0, p: 1.0 });
    }

    #[test]
    fn poisson_rate_test_matches_a_hand_computation() {
        // 1000 committed in 10 s vs 800 in 10 s: q = 0.5, total 1800,
        // sd = sqrt(450) = 21.213, z = (800 - 900) / 21.213 = -4.714.
        let t = poisson_rate_drop(1000, 10.0, 800, 10.0);
        assert!(close(t.z, -4.714, 1e-3), "{t:?}");
        assert!(close(t.p, 1.214e-6, 1e-2), "{t:?}");
        // Same rate, different lengths: no evidence either way.
        let t = poisson_rate_drop(500, 5.0, 1000, 10.0);
        assert!(t.z.abs() < 1e-9 && close(t.p, 0.5, 1e-6), "{t:?}");
        // 10 vs 6 events in equal time is not significant.
        assert!(poisson_rate_drop(10, 1.0, 6, 1.0).p > 0.1);
        assert_eq!(poisson_rate_drop(0, 1.0, 0, 1.0).p, 1.0);
    }

    #[test]
    fn p_values_print_short() {
        assert_eq!(show_p(3.2e-7), "3e-7");
        assert_eq!(show_p(0.0042), "0.004");
        assert_eq!(show_p(0.314), "0.31");
    }
}
