//! When faults happen. A schedule yields the times, measured from the start
//! of the client phase, at which one kind of fault begins: at a fixed
//! interval, at random intervals drawn from a seeded generator (so a run can
//! be repeated), or at a list of given times. A fault that is still going
//! when its next time comes delays the next one; two faults of the same
//! entry never overlap.

use std::time::Duration;

/// How the start times of one fault entry are spaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// One fault every interval (start to start), the first after one
    /// interval unless `start` says otherwise.
    Every(Duration),
    /// Start-to-start gaps drawn uniformly from `min..=max`.
    Random {
        /// The shortest gap.
        min: Duration,
        /// The longest gap.
        max: Duration,
    },
    /// Exactly these times, in increasing order.
    At(Vec<Duration>),
}

impl Schedule {
    /// The start times: `first` overrides the first one (not for `At`),
    /// `count` caps how many, `seed` drives `Random`.
    pub fn times(&self, first: Option<Duration>, count: Option<u64>, seed: u64) -> Times {
        Times {
            schedule: self.clone(),
            first,
            count,
            rng: SplitMix(seed),
            last: None,
            emitted: 0,
        }
    }

    /// The schedule in the compact spec syntax (`every=5s`, ...).
    pub fn describe(&self) -> String {
        let d = |d: &Duration| short(*d);
        match self {
            Schedule::Every(i) => format!("every={}", d(i)),
            Schedule::Random { min, max } => format!("random={}..{}", d(min), d(max)),
            Schedule::At(ts) => {
                let v: Vec<String> = ts.iter().map(d).collect();
                format!("at={}", v.join("/"))
            }
        }
    }
}

/// A duration in the fewest characters the spec syntax reads back
/// (`5s`, `250ms`, `1500us`).
pub fn short(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else if d.as_nanos().is_multiple_of(1_000) {
        format!("{}us", d.as_micros())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

/// The start times of a schedule, as offsets from the start of the run.
#[derive(Clone, Debug)]
pub struct Times {
    schedule: Schedule,
    first: Option<Duration>,
    count: Option<u64>,
    rng: SplitMix,
    last: Option<Duration>,
    emitted: u64,
}

impl Iterator for Times {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.count.is_some_and(|c| self.emitted >= c) {
            return None;
        }
        let t = match &self.schedule {
            Schedule::Every(gap) => match self.last {
                None => self.first.unwrap_or(*gap),
                Some(l) => l + *gap,
            },
            Schedule::Random { min, max } => {
                let span = max.saturating_sub(*min).as_nanos() as u64;
                let gap = *min + Duration::from_nanos(self.rng.below(span.saturating_add(1)));
                match self.last {
                    None => self.first.unwrap_or(gap),
                    Some(l) => l + gap,
                }
            }
            Schedule::At(ts) => *ts.get(self.emitted as usize)?,
        };
        self.last = Some(t);
        self.emitted += 1;
        Some(t)
    }
}

/// A small, fast, seedable generator (SplitMix64): schedules and jitter
/// only need spread and repeatability, not cryptographic quality.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn every_starts_after_one_interval_unless_told() {
        let t: Vec<_> = Schedule::Every(s(5)).times(None, Some(3), 0).collect();
        assert_eq!(t, vec![s(5), s(10), s(15)]);
        let t: Vec<_> = Schedule::Every(s(5))
            .times(Some(s(1)), Some(3), 0)
            .collect();
        assert_eq!(t, vec![s(1), s(6), s(11)]);
    }

    #[test]
    fn at_lists_its_times_and_respects_count() {
        let sch = Schedule::At(vec![s(1), s(4), s(9)]);
        assert_eq!(sch.times(None, None, 0).collect::<Vec<_>>().len(), 3);
        assert_eq!(
            sch.times(None, Some(2), 0).collect::<Vec<_>>(),
            vec![s(1), s(4)]
        );
    }

    #[test]
    fn random_gaps_stay_in_range_and_repeat_for_a_seed() {
        let sch = Schedule::Random {
            min: s(2),
            max: s(4),
        };
        let a: Vec<_> = sch.times(None, Some(50), 7).collect();
        let b: Vec<_> = sch.times(None, Some(50), 7).collect();
        let c: Vec<_> = sch.times(None, Some(50), 8).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut prev = Duration::ZERO;
        for t in a {
            let gap = t - prev;
            assert!(gap >= s(2) && gap <= s(4), "{gap:?}");
            prev = t;
        }
    }

    #[test]
    fn describe_round_trips_the_spec_syntax() {
        assert_eq!(Schedule::Every(s(5)).describe(), "every=5s");
        assert_eq!(
            Schedule::At(vec![s(1), Duration::from_millis(2500)]).describe(),
            "at=1s/2500ms"
        );
    }
}
