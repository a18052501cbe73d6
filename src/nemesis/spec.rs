//! A fault spec (`kind:at=1s,for=2s,...`): what one fault does, when, and
//! to what, parsed and shown back the same way.

use std::fmt;
use std::time::Duration;

use super::command::Action;
use super::schedule::{short, Schedule};

/// The fault kinds of the built-in proxy, by spec name.
const PROXY_KINDS: [&str; 4] = [
    "proxy-reset",
    "proxy-partition",
    "proxy-latency",
    "proxy-refuse",
];

/// How long a fault lasts when the spec does not say.
const DEFAULT_LENGTH: Duration = Duration::from_secs(3);

/// What one fault does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Reset every proxied connection.
    ProxyReset,
    /// Black-hole proxied traffic.
    ProxyPartition,
    /// Delay proxied traffic.
    ProxyLatency {
        /// Added to every chunk.
        delay: Duration,
        /// Up to this much more, at random.
        jitter: Duration,
    },
    /// Refuse new proxied connections.
    ProxyRefuse,
    /// Run a target's commands.
    Command(Action),
}

impl FaultKind {
    /// The name in specs and `fault` lines.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::ProxyReset => "proxy-reset",
            FaultKind::ProxyPartition => "proxy-partition",
            FaultKind::ProxyLatency { .. } => "proxy-latency",
            FaultKind::ProxyRefuse => "proxy-refuse",
            FaultKind::Command(a) => a.name(),
        }
    }

    /// True for faults of the built-in proxy.
    pub fn is_proxy(&self) -> bool {
        !matches!(self, FaultKind::Command(_))
    }

    /// True when the fault is one action with no length (reset, restart).
    pub fn is_instant(&self) -> bool {
        matches!(
            self,
            FaultKind::ProxyReset | FaultKind::Command(Action::Restart)
        )
    }
}

/// One nemesis entry: a kind of fault on a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// What each fault does.
    pub kind: FaultKind,
    /// The command target, or the proxy's endpoint index.
    pub target: Option<String>,
    /// When faults start.
    pub schedule: Schedule,
    /// The first start time, overriding the schedule's.
    pub first: Option<Duration>,
    /// How long each fault lasts (`None` for instant ones).
    pub length: Option<Duration>,
    /// At most this many faults.
    pub count: Option<u64>,
    /// Seed of random gaps and jitter (default: the run's seed).
    pub seed: Option<u64>,
    /// What a `netem` fault does to the link.
    pub netem: Option<Netem>,
}

/// A degraded link: what `tc qdisc ... netem` is given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Netem {
    /// Added to every packet.
    pub delay: Duration,
    /// Up to this much more or less, at random.
    pub jitter: Duration,
    /// Percent of packets dropped at random.
    pub loss: f64,
}

impl Eq for Netem {}

impl Netem {
    /// The environment the `netem` command reads.
    pub(super) fn vars(&self) -> [(&'static str, String); 3] {
        [
            ("ISOHARNESS_DELAY_MS", self.delay.as_millis().to_string()),
            ("ISOHARNESS_JITTER_MS", self.jitter.as_millis().to_string()),
            ("ISOHARNESS_LOSS_PCT", fmt_pct(self.loss)),
        ]
    }

    /// `delay=100ms jitter=20ms loss=5%`, for `fault` lines.
    pub(super) fn describe(&self) -> String {
        format!(
            "delay={} jitter={} loss={}%",
            short(self.delay),
            short(self.jitter),
            fmt_pct(self.loss)
        )
    }
}

/// A percentage without trailing zeros.
fn fmt_pct(p: f64) -> String {
    let s = format!("{p:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl fmt::Display for FaultSpec {
    /// The spec in its compact syntax, normalized.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![self.schedule.describe()];
        if let Some(s) = self.first {
            parts.push(format!("start={}", short(s)));
        }
        if let Some(c) = self.count {
            parts.push(format!("count={c}"));
        }
        if let Some(l) = self.length {
            parts.push(format!("for={}", short(l)));
        }
        if let FaultKind::ProxyLatency { delay, jitter } = &self.kind {
            parts.push(format!("delay={}", short(*delay)));
            if !jitter.is_zero() {
                parts.push(format!("jitter={}", short(*jitter)));
            }
        }
        if let Some(n) = &self.netem {
            if !n.delay.is_zero() {
                parts.push(format!("delay={}", short(n.delay)));
            }
            if !n.jitter.is_zero() {
                parts.push(format!("jitter={}", short(n.jitter)));
            }
            if n.loss > 0.0 {
                parts.push(format!("loss={}%", fmt_pct(n.loss)));
            }
        }
        if let Some(t) = &self.target {
            parts.push(format!("target={t}"));
        }
        if let Some(s) = self.seed {
            parts.push(format!("seed={s}"));
        }
        write!(f, "{}:{}", self.kind.name(), parts.join(","))
    }
}

fn duration(key: &str, v: &str) -> Result<Duration, String> {
    humantime::parse_duration(v.trim()).map_err(|e| format!("{key}={v}: {e}"))
}

impl FaultSpec {
    /// Parses the compact syntax `KIND[:KEY=VALUE,...]`.
    pub fn parse(spec: &str) -> Result<FaultSpec, String> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut pairs = Vec::new();
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not KEY=VALUE"))?;
            pairs.push((k.trim().to_string(), v.trim().to_string()));
        }
        FaultSpec::build(kind.trim(), &pairs)
    }

    /// Builds an entry from its kind and `KEY=VALUE` pairs (the spec string
    /// or a scenario table say the same thing).
    pub fn build(kind: &str, pairs: &[(String, String)]) -> Result<FaultSpec, String> {
        let mut schedule = None;
        let mut set_schedule = |s: Schedule| {
            if schedule.replace(s).is_some() {
                Err("give only one of every=, random= and at=".to_string())
            } else {
                Ok(())
            }
        };
        let (mut first, mut length, mut count, mut seed, mut target) =
            (None, None, None, None, None);
        let (mut delay, mut jitter, mut loss) = (None, None, None);
        for (k, v) in pairs {
            match k.as_str() {
                "every" => {
                    let d = duration(k, v)?;
                    if d.is_zero() {
                        return Err("every= must be more than zero".into());
                    }
                    set_schedule(Schedule::Every(d))?;
                }
                "random" => {
                    let (a, b) = v
                        .split_once("..")
                        .ok_or_else(|| format!("random={v}: expected MIN..MAX, e.g. 2s..8s"))?;
                    let (min, max) = (duration(k, a)?, duration(k, b)?);
                    if min > max || max.is_zero() {
                        return Err(format!("random={v}: MIN must not exceed MAX, and MAX > 0"));
                    }
                    set_schedule(Schedule::Random { min, max })?;
                }
                "at" => {
                    let mut ts = v
                        .split(['/', ' '])
                        .filter(|s| !s.is_empty())
                        .map(|s| duration(k, s))
                        .collect::<Result<Vec<_>, _>>()?;
                    if ts.is_empty() {
                        return Err("at= needs at least one time".into());
                    }
                    ts.sort();
                    set_schedule(Schedule::At(ts))?;
                }
                "start" => first = Some(duration(k, v)?),
                "for" => length = Some(duration(k, v)?),
                "delay" => delay = Some(duration(k, v)?),
                "jitter" => jitter = Some(duration(k, v)?),
                "loss" => {
                    let p: f64 = v
                        .trim_end_matches('%')
                        .trim()
                        .parse()
                        .map_err(|_| format!("loss={v}: expected a percentage, e.g. loss=5%"))?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err(format!("loss={v}: must be between 0% and 100%"));
                    }
                    loss = Some(p);
                }
                "count" => {
                    count = Some(
                        v.parse::<u64>()
                            .map_err(|_| format!("count={v}: not a number"))?,
                    )
                }
                "seed" => {
                    seed = Some(
                        v.parse::<u64>()
                            .map_err(|_| format!("seed={v}: not a number"))?,
                    )
                }
                "target" => target = Some(v.clone()),
                other => {
                    return Err(format!(
                        "unknown key `{other}` (expected every, random, at, start, count, for, delay, jitter, loss, target, seed)"
                    ))
                }
            }
        }
        let kind = match kind {
            "proxy-reset" => FaultKind::ProxyReset,
            "proxy-partition" => FaultKind::ProxyPartition,
            "proxy-refuse" => FaultKind::ProxyRefuse,
            "proxy-latency" => FaultKind::ProxyLatency {
                delay: delay.ok_or("proxy-latency needs delay=, e.g. delay=50ms")?,
                jitter: jitter.unwrap_or_default(),
            },
            other => match Action::parse(other) {
                Some(a) => FaultKind::Command(a),
                None => {
                    let cmds: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
                    return Err(format!(
                        "unknown fault `{other}` (expected {} or {})",
                        PROXY_KINDS.join(", "),
                        cmds.join(", ")
                    ));
                }
            },
        };
        let netem = (kind == FaultKind::Command(Action::Netem)).then(|| Netem {
            delay: delay.unwrap_or_default(),
            jitter: jitter.unwrap_or_default(),
            loss: loss.unwrap_or_default(),
        });
        if let Some(n) = &netem {
            if n.delay.is_zero() && n.loss == 0.0 {
                return Err(
                    "netem needs delay= or loss=, e.g. delay=100ms,jitter=20ms,loss=5%".into(),
                );
            }
            if !n.jitter.is_zero() && n.delay.is_zero() {
                return Err("netem: jitter= needs delay=".into());
            }
        } else if !matches!(kind, FaultKind::ProxyLatency { .. })
            && (delay.is_some() || jitter.is_some())
        {
            return Err("delay= and jitter= only apply to proxy-latency and netem".into());
        }
        if netem.is_none() && loss.is_some() {
            return Err("loss= only applies to netem".into());
        }
        if kind.is_instant() {
            if length.is_some() {
                return Err(format!("{} is instant: it takes no for=", kind.name()));
            }
        } else {
            length = Some(length.unwrap_or(DEFAULT_LENGTH));
        }
        if kind.is_proxy() {
            if let Some(t) = &target {
                t.parse::<usize>().map_err(|_| {
                    format!(
                        "target={t}: a proxy fault's target is the index of a --url (0, 1, ...)"
                    )
                })?;
            }
        }
        let schedule = schedule.unwrap_or(Schedule::Every(Duration::from_secs(10)));
        if matches!(schedule, Schedule::At(_)) && first.is_some() {
            return Err("start= does not go with at=".into());
        }
        Ok(FaultSpec {
            kind,
            target,
            schedule,
            first,
            length,
            count,
            seed,
            netem,
        })
    }

    /// Builds an entry from a scenario's TOML: a spec string, or a table
    /// `{ fault = "KIND", every = "5s", at = ["1s", "4s"], ... }`.
    pub fn from_toml(v: &toml::Value) -> Result<FaultSpec, String> {
        match v {
            toml::Value::String(s) => FaultSpec::parse(s).map_err(|e| format!("`{s}`: {e}")),
            toml::Value::Table(t) => {
                let kind = match t.get("fault") {
                    Some(toml::Value::String(k)) => k.clone(),
                    _ => return Err("a nemesis table needs fault = \"KIND\"".into()),
                };
                let mut pairs = Vec::new();
                for (k, v) in t {
                    if k == "fault" {
                        continue;
                    }
                    let text = match v {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Integer(i) => i.to_string(),
                        toml::Value::Array(a) => {
                            let items: Vec<String> = a
                                .iter()
                                .map(|x| match x {
                                    toml::Value::String(s) => Ok(s.clone()),
                                    other => Err(format!("{k}: unexpected {other}")),
                                })
                                .collect::<Result<_, _>>()?;
                            items.join(if k == "random" { ".." } else { "/" })
                        }
                        other => return Err(format!("{k}: unexpected value {other}")),
                    };
                    pairs.push((k.clone(), text));
                }
                FaultSpec::build(&kind, &pairs).map_err(|e| format!("fault {kind}: {e}"))
            }
            other => Err(format!(
                "a nemesis entry is a spec string or a table, not {other}"
            )),
        }
    }
}
