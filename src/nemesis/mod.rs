//! The nemesis: it injects faults while the clients run, and records each
//! one in the history as a `fault` line with its start and end (docs/history-format.md).
//!
//! A run's nemesis is a list of *entries*; each entry is one kind of fault
//! on a [`schedule`] and runs as its own task beside the clients. Faults
//! come from two places:
//!
//! * the built-in TCP [`proxy`], which the harness puts in front of every
//!   database endpoint when any entry needs it: `proxy-reset`,
//!   `proxy-partition`, `proxy-latency`, `proxy-refuse`;
//! * [`command`]s that a scenario gives per target (or that a `--cluster`
//!   run makes per node): `pause`, `kill`, `restart`, `partition`,
//!   `netem`. Every command gets `ISOHARNESS_TARGET`, `ISOHARNESS_FAULT`,
//!   `ISOHARNESS_RUN_DIR` and `ISOHARNESS_SEED` (seeded per fault, for
//!   commands that draw a random shape), and `netem` also
//!   `ISOHARNESS_DELAY_MS`, `ISOHARNESS_JITTER_MS`, `ISOHARNESS_LOSS_PCT`.
//!   A command may print `isoharness-detail: TEXT` to say what exactly it
//!   did (a partition's sides); TEXT becomes the fault's `detail`.
//!
//! An entry is written in a compact spec, on the command line
//! (`--nemesis proxy-partition:every=10s,for=3s`) or in a scenario file
//! (as the same string, or as a table with the same keys):
//!
//! ```text
//! KIND[:KEY=VALUE,...]
//!   every=5s          one fault every 5 s (start to start; default 10s)
//!   random=2s..8s     gaps drawn from 2..8 s (seeded by seed=N or the run's seed)
//!   at=3s/10s/20s     at these times
//!   start=1s          the first fault at 1 s (every, random)
//!   count=2           at most 2 faults
//!   for=3s            how long a fault lasts (not for reset and restart; default 3s)
//!   delay=50ms        proxy-latency: added delay per chunk; netem: per packet
//!   jitter=20ms       proxy-latency, netem: extra random delay up to this
//!   loss=5%           netem: packets dropped at random
//!   target=NAME       command faults: the scenario's target (default: the only one);
//!                     proxy faults: the index of one --url (default: all)
//! ```
//!
//! A fault whose command fails is recorded with `applied: false` and its
//! error; the run goes on. When the clients finish, every fault still in
//! force is undone before the history is closed.

pub mod command;
pub mod proxy;
pub mod schedule;
pub mod spec;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use history::Fault;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use command::CommandEnv;
pub use command::Targets;
use proxy::Proxy;
use schedule::short;
pub use spec::{FaultKind, FaultSpec};

/// A run's nemesis: validated entries and the targets their commands come
/// from.
#[derive(Clone, Debug, Default)]
pub struct Nemesis {
    /// The entries.
    pub specs: Vec<FaultSpec>,
    targets: Targets,
}

impl Nemesis {
    /// Parses `--nemesis` specs (each may hold several, separated by `;`)
    /// and checks them against the scenario's targets.
    pub fn new(specs: &[String], targets: &Targets) -> Result<Nemesis, String> {
        let mut out = Vec::new();
        for s in specs.iter().flat_map(|s| s.split(';')) {
            let s = s.trim();
            if s.is_empty() || s == "none" {
                continue;
            }
            out.push(FaultSpec::parse(s).map_err(|e| format!("--nemesis {s}: {e}"))?);
        }
        Nemesis::from_specs(out, targets)
    }

    /// Checks parsed entries against the targets: every command fault has
    /// a target with the commands it needs.
    pub fn from_specs(mut specs: Vec<FaultSpec>, targets: &Targets) -> Result<Nemesis, String> {
        for s in &mut specs {
            let FaultKind::Command(a) = s.kind else {
                continue;
            };
            if s.target.is_none() && targets.len() == 1 {
                s.target = targets.keys().next().cloned();
            }
            let name = s.target.as_deref().ok_or_else(|| {
                if targets.is_empty() {
                    format!(
                        "nemesis {s}: command faults need a target with commands, given in a scenario file ([targets.NAME] {} = \"...\")",
                        a.name()
                    )
                } else {
                    let names: Vec<&str> = targets.keys().map(String::as_str).collect();
                    format!("nemesis {s}: which target? add target= (one of {})", names.join(", "))
                }
            })?;
            let t = targets.get(name).ok_or_else(|| {
                let names: Vec<&str> = targets.keys().map(String::as_str).collect();
                format!(
                    "nemesis {s}: no target `{name}` in the scenario (it has: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )
            })?;
            for cmd in std::iter::once(a.name()).chain(a.undo_name()) {
                if t.command(cmd).is_none_or(|c| c.trim().is_empty()) {
                    return Err(format!(
                        "nemesis {s}: target `{name}` has no `{cmd}` command"
                    ));
                }
            }
            t.time_limit()
                .map_err(|e| format!("target `{name}`: {e}"))?;
        }
        Ok(Nemesis {
            specs,
            targets: targets.clone(),
        })
    }

    /// True when some entry needs the built-in proxy.
    pub fn needs_proxy(&self) -> bool {
        self.specs.iter().any(|s| s.kind.is_proxy())
    }

    /// The entries in their compact syntax, for reports.
    pub fn describe(&self) -> Vec<String> {
        self.specs.iter().map(ToString::to_string).collect()
    }

    /// Starts one proxy per endpoint when an entry needs them; `urls` are
    /// the `--url`s (empty: the database's default). `None` when no proxy
    /// is needed.
    pub async fn proxies(
        &self,
        db: &str,
        urls: &[String],
        seed: u64,
    ) -> Result<Option<Arc<Proxies>>, String> {
        if !self.needs_proxy() {
            return Ok(None);
        }
        let urls: Vec<String> = if urls.is_empty() {
            let u = default_url(db).ok_or_else(|| {
                format!("proxy faults need a database reached over TCP; --db {db} is not")
            })?;
            vec![u.to_string()]
        } else {
            urls.to_vec()
        };
        for s in &self.specs {
            if let (true, Some(t)) = (s.kind.is_proxy(), &s.target) {
                if t.parse::<usize>().is_ok_and(|i| i >= urls.len()) {
                    return Err(format!(
                        "nemesis {s}: there are only {} --url endpoints",
                        urls.len()
                    ));
                }
            }
        }
        Proxies::start(&urls, seed).await.map(|p| Some(Arc::new(p)))
    }

    /// Starts the entries as tasks. `now` reads the run's clock (ns);
    /// every fault goes to `faults` as it ends. `proxies` must be what
    /// [`Nemesis::proxies`] gave.
    pub fn spawn(
        &self,
        proxies: Option<Arc<Proxies>>,
        run_dir: PathBuf,
        seed: u64,
        now: impl Fn() -> u64 + Send + Sync + 'static,
        faults: UnboundedSender<Fault>,
    ) -> Running {
        let stop = Arc::new(watch::channel(false).0);
        let ctx = Arc::new(Ctx {
            now: Box::new(now),
            faults,
            proxies,
            targets: self.targets.clone(),
            cmd_env: CommandEnv {
                log: run_dir.join("nemesis.log"),
                run_dir,
            },
        });
        let tasks = self
            .specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let seed = s.seed.unwrap_or(seed.wrapping_add(i as u64));
                tokio::spawn(drive(s.clone(), seed, Arc::clone(&ctx), stop.subscribe()))
            })
            .collect();
        Running { stop, tasks }
    }
}

/// The default URL of each networked `--db` (as in docker-compose.yml),
/// used when the proxy must stand in front of an endpoint no `--url`
/// named.
pub fn default_url(db: &str) -> Option<&'static str> {
    Some(match db {
        "postgres" => adapters::postgres::DEFAULT_URL,
        "yugabyte" => "postgres://yugabyte@127.0.0.1:5433/yugabyte",
        "mysql" => "mysql://root@127.0.0.1:3306/test",
        "tidb" => "mysql://root@127.0.0.1:4000/test",
        _ => return None,
    })
}

/// One proxy per endpoint.
pub struct Proxies {
    list: Vec<Proxy>,
    urls: Vec<String>,
    /// The endpoints' own URLs, not through the proxies.
    direct: Vec<String>,
}

impl Proxies {
    /// Starts a proxy for each URL.
    pub async fn start(urls: &[String], seed: u64) -> Result<Proxies, String> {
        let mut list = Vec::new();
        let mut rewritten = Vec::new();
        for (i, url) in urls.iter().enumerate() {
            // The upstream is known before the proxy's port is.
            let placeholder: std::net::SocketAddr = ([127, 0, 0, 1], 1).into();
            let (_, upstream) = proxy::rewrite_url(url, placeholder)?;
            let p = Proxy::start(&upstream, seed.wrapping_add(i as u64))
                .await
                .map_err(|e| format!("cannot start the proxy for {upstream}: {e}"))?;
            rewritten.push(proxy::rewrite_url(url, p.addr())?.0);
            list.push(p);
        }
        Ok(Proxies {
            list,
            urls: rewritten,
            direct: urls.to_vec(),
        })
    }

    /// The URLs the clients use: each endpoint's, pointed at its proxy.
    pub fn urls(&self) -> Vec<String> {
        self.urls.clone()
    }

    /// The endpoints' own URLs (not through the proxies), in the order of
    /// [`Proxies::urls`]: where the run's tables are created and dropped.
    pub fn direct(&self) -> Vec<String> {
        self.direct.clone()
    }

    /// The endpoints behind the proxies, `host:port` joined by commas.
    pub fn upstreams(&self) -> String {
        let v: Vec<&str> = self.list.iter().map(Proxy::upstream).collect();
        v.join(",")
    }

    fn select(&self, target: Option<&str>) -> Vec<&Proxy> {
        match target.and_then(|t| t.parse::<usize>().ok()) {
            Some(i) => self.list.get(i).into_iter().collect(),
            None => self.list.iter().collect(),
        }
    }
}

/// What every entry's task shares.
struct Ctx {
    now: Box<dyn Fn() -> u64 + Send + Sync>,
    faults: UnboundedSender<Fault>,
    proxies: Option<Arc<Proxies>>,
    targets: Targets,
    cmd_env: CommandEnv,
}

/// The running nemesis.
pub struct Running {
    stop: Arc<watch::Sender<bool>>,
    tasks: Vec<JoinHandle<Vec<String>>>,
}

/// Heals a running nemesis from elsewhere (an interrupt), without waiting.
pub struct Halt(Arc<watch::Sender<bool>>);

impl Halt {
    /// Undoes every fault in force at once (resumes paused nodes, heals
    /// partitions) and starts no new one.
    pub fn now(&self) {
        let _ = self.0.send(true);
    }
}

impl Running {
    /// A handle that heals the faults without waiting for the entries.
    pub fn halt(&self) -> Halt {
        Halt(Arc::clone(&self.stop))
    }

    /// Stops scheduling, undoes the faults in force, waits for every entry
    /// and returns the warnings (failed commands).
    pub async fn stop(self) -> Vec<String> {
        let _ = self.stop.send(true);
        let mut out = Vec::new();
        for t in self.tasks {
            match t.await {
                Ok(w) => out.extend(w),
                Err(e) => out.push(format!("nemesis: an entry failed: {e}")),
            }
        }
        out
    }
}

/// Counts failures of one entry, for one warning at the end.
#[derive(Default)]
struct Failures {
    by_what: BTreeMap<String, (u64, String)>,
}

impl Failures {
    fn add(&mut self, what: &str, err: &str) {
        let e = self
            .by_what
            .entry(what.to_string())
            .or_insert_with(|| (0, err.to_string()));
        e.0 += 1;
    }

    fn into_warnings(self) -> Vec<String> {
        self.by_what
            .into_iter()
            .map(|(what, (n, first))| {
                let times = if n == 1 {
                    String::new()
                } else {
                    format!(" {n} times")
                };
                format!("nemesis: {what} failed{times} (first: {first})")
            })
            .collect()
    }
}

/// Runs one entry until its schedule ends or the nemesis stops.
async fn drive(
    spec: FaultSpec,
    seed: u64,
    ctx: Arc<Ctx>,
    mut stop: watch::Receiver<bool>,
) -> Vec<String> {
    let mut failures = Failures::default();
    let target = match (&spec.kind, &ctx.proxies) {
        (FaultKind::Command(_), _) => spec.target.clone().unwrap_or_default(),
        (_, Some(p)) => {
            let v: Vec<&str> = p
                .select(spec.target.as_deref())
                .into_iter()
                .map(Proxy::upstream)
                .collect();
            v.join(",")
        }
        (_, None) => String::new(),
    };
    for (i, at) in spec
        .schedule
        .times(spec.first, spec.count, seed)
        .enumerate()
    {
        let now = Duration::from_nanos((ctx.now)());
        if at > now {
            tokio::select! {
                _ = tokio::time::sleep(at - now) => {}
                () = proxy::until(&mut stop, |s| *s) => break,
            }
        }
        if *stop.borrow() {
            break;
        }
        let start = (ctx.now)();
        let mut fault = Fault {
            kind: spec.kind.name().to_string(),
            target: (!target.is_empty()).then(|| target.clone()),
            start,
            end: None,
            applied: true,
            detail: None,
        };
        if let FaultKind::ProxyLatency { delay, jitter } = &spec.kind {
            fault.detail = Some(format!("delay={} jitter={}", short(*delay), short(*jitter)));
        }
        if let Some(n) = &spec.netem {
            fault.detail = Some(n.describe());
        }
        // Each fault's own seed, for commands that draw a random shape.
        let fault_seed = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        match apply(&spec, &ctx, fault_seed).await {
            Err(e) => {
                failures.add(&format!("{} {target}", spec.kind.name()), &e);
                eprintln!("nemesis: {} {target} failed: {e}", spec.kind.name());
                fault.applied = false;
                fault.detail = Some(e);
            }
            Ok(said) => {
                if let Some(d) = said {
                    fault.detail = Some(match fault.detail.take() {
                        Some(p) => format!("{p}; {d}"),
                        None => d,
                    });
                }
                if let Some(len) = spec.length {
                    tokio::select! {
                        _ = tokio::time::sleep(len) => {}
                        () = proxy::until(&mut stop, |s| *s) => {}
                    }
                    if let Err(e) = undo(&spec, &ctx, fault_seed).await {
                        let what = format!("{} {target}", spec.kind.undo_name().unwrap_or("undo"));
                        failures.add(&what, &e);
                        eprintln!("nemesis: {what} failed: {e}");
                        fault.detail = Some(format!("undo failed: {e}"));
                    }
                }
            }
        }
        fault.end = Some((ctx.now)());
        // A closed recorder means the run is over; nothing to record into.
        let _ = ctx.faults.send(fault);
    }
    failures.into_warnings()
}

impl FaultKind {
    /// The name of what undoes the fault, for messages.
    fn undo_name(&self) -> Option<&'static str> {
        match self {
            FaultKind::Command(a) => a.undo_name(),
            FaultKind::ProxyPartition => Some("heal"),
            FaultKind::ProxyRefuse => Some("accept"),
            FaultKind::ProxyLatency { .. } => Some("latency off"),
            FaultKind::ProxyReset => None,
        }
    }
}

fn proxies_of<'a>(spec: &FaultSpec, ctx: &'a Ctx) -> Result<Vec<&'a Proxy>, String> {
    let p = ctx
        .proxies
        .as_ref()
        .ok_or("no proxy is running (internal error)")?;
    Ok(p.select(spec.target.as_deref()))
}

async fn run_target_command(
    spec: &FaultSpec,
    ctx: &Ctx,
    which: &str,
    seed: u64,
) -> Result<Option<String>, String> {
    let name = spec.target.as_deref().unwrap_or_default();
    let t = ctx
        .targets
        .get(name)
        .ok_or_else(|| format!("no target `{name}`"))?;
    let cmd = t
        .command(which)
        .ok_or_else(|| format!("target `{name}` has no `{which}` command"))?;
    let limit = t.time_limit()?;
    let mut vars = vec![("ISOHARNESS_SEED", seed.to_string())];
    if let Some(n) = &spec.netem {
        vars.extend(n.vars());
    }
    command::run(&ctx.cmd_env, name, which, cmd, &vars, limit, (ctx.now)()).await
}

/// Starts one fault; `Ok` carries what its command said it did.
async fn apply(spec: &FaultSpec, ctx: &Ctx, seed: u64) -> Result<Option<String>, String> {
    match &spec.kind {
        FaultKind::ProxyReset => proxies_of(spec, ctx)?.iter().for_each(|p| p.reset()),
        FaultKind::ProxyPartition => proxies_of(spec, ctx)?.iter().for_each(|p| p.partition()),
        FaultKind::ProxyRefuse => proxies_of(spec, ctx)?.iter().for_each(|p| p.refuse()),
        FaultKind::ProxyLatency { delay, jitter } => proxies_of(spec, ctx)?
            .iter()
            .for_each(|p| p.set_latency(*delay, *jitter)),
        FaultKind::Command(a) => return run_target_command(spec, ctx, a.name(), seed).await,
    }
    Ok(None)
}

async fn undo(spec: &FaultSpec, ctx: &Ctx, seed: u64) -> Result<(), String> {
    match &spec.kind {
        FaultKind::ProxyReset => {}
        FaultKind::ProxyPartition => proxies_of(spec, ctx)?.iter().for_each(|p| p.heal()),
        FaultKind::ProxyRefuse => proxies_of(spec, ctx)?.iter().for_each(|p| p.accept()),
        FaultKind::ProxyLatency { .. } => proxies_of(spec, ctx)?
            .iter()
            .for_each(|p| p.set_latency(Duration::ZERO, Duration::ZERO)),
        FaultKind::Command(a) => {
            if let Some(u) = a.undo_name() {
                return run_target_command(spec, ctx, u, seed).await.map(|_| ());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::command::Action;
    use super::command::Target;
    use super::schedule::Schedule;
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn compact_specs_parse() {
        let s = FaultSpec::parse("proxy-partition:every=10s,for=3s").unwrap();
        assert_eq!(s.kind, FaultKind::ProxyPartition);
        assert_eq!(s.schedule, Schedule::Every(Duration::from_secs(10)));
        assert_eq!(s.length, Some(Duration::from_secs(3)));
        let s = FaultSpec::parse("proxy-latency:every=5s,for=2s,delay=50ms,jitter=10ms").unwrap();
        assert_eq!(
            s.kind,
            FaultKind::ProxyLatency {
                delay: ms(50),
                jitter: ms(10)
            }
        );
        let s = FaultSpec::parse("proxy-reset:random=1s..3s,count=4,seed=9").unwrap();
        assert_eq!(s.length, None);
        assert_eq!((s.count, s.seed), (Some(4), Some(9)));
        let s = FaultSpec::parse("restart:target=pg,at=2s/500ms").unwrap();
        assert_eq!(s.schedule, Schedule::At(vec![ms(500), ms(2000)]));
        // The normalized text parses back to the same entry.
        for text in [
            "proxy-partition:every=10s,for=3s",
            "proxy-latency:random=1s..2s,start=0s,count=2,for=1s,delay=5ms,jitter=1ms,target=0",
            "pause:at=1s/2s,for=1500ms,target=db,seed=3",
        ] {
            let s = FaultSpec::parse(text).unwrap();
            assert_eq!(FaultSpec::parse(&s.to_string()).unwrap(), s, "{s}");
        }
    }

    #[test]
    fn netem_specs_carry_the_link() {
        let s = FaultSpec::parse(
            "netem:target=galera-2,at=2s,for=5s,delay=100ms,jitter=20ms,loss=2.5%",
        )
        .unwrap();
        assert_eq!(s.kind, FaultKind::Command(Action::Netem));
        let n = s.netem.unwrap();
        assert_eq!((n.delay, n.jitter, n.loss), (ms(100), ms(20), 2.5));
        assert_eq!(n.describe(), "delay=100ms jitter=20ms loss=2.5%");
        let vars = n.vars();
        assert_eq!(vars[0], ("ISOHARNESS_DELAY_MS", "100".to_string()));
        assert_eq!(vars[2], ("ISOHARNESS_LOSS_PCT", "2.5".to_string()));
        // Its compact form says the same again.
        assert_eq!(FaultSpec::parse(&s.to_string()).unwrap(), s);
        let loss_only = FaultSpec::parse("netem:loss=10").unwrap();
        assert_eq!(loss_only.netem.unwrap().delay, Duration::ZERO);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let cases = [
            ("proxy-nap:every=1s", "unknown fault `proxy-nap`"),
            ("proxy-reset:every=1s,for=2s", "instant"),
            ("proxy-latency:every=1s", "needs delay="),
            ("proxy-reset:every=1x", "every=1x"),
            ("proxy-reset:every=1s,at=2s", "only one of"),
            ("proxy-reset:wat=1", "unknown key `wat`"),
            ("proxy-reset:every", "not KEY=VALUE"),
            ("proxy-reset:random=3s..1s", "MIN must not exceed MAX"),
            ("proxy-partition:target=x", "index of a --url"),
            ("proxy-reset:delay=1s", "only apply to proxy-latency"),
            ("netem:every=1s", "needs delay= or loss="),
            ("netem:jitter=5ms,loss=1%", "jitter= needs delay="),
            ("netem:loss=120%", "between 0% and 100%"),
            ("netem:loss=lots", "percentage"),
            ("proxy-latency:delay=5ms,loss=1%", "only applies to netem"),
        ];
        for (spec, want) in cases {
            let e = FaultSpec::parse(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }

    #[test]
    fn command_faults_need_targets_with_their_commands() {
        let e = Nemesis::new(&["restart:every=1s".into()], &Targets::new()).unwrap_err();
        assert!(e.contains("scenario file"), "{e}");
        let mut targets = Targets::new();
        targets.insert(
            "pg".into(),
            Target {
                restart: Some("true".into()),
                pause: Some("true".into()),
                ..Target::default()
            },
        );
        // The only target is the default.
        let n = Nemesis::new(&["restart:every=1s".into()], &targets).unwrap();
        assert_eq!(n.specs[0].target.as_deref(), Some("pg"));
        let e = Nemesis::new(&["pause:every=1s".into()], &targets).unwrap_err();
        assert!(e.contains("no `resume` command"), "{e}");
        let e = Nemesis::new(&["kill:every=1s,target=db".into()], &targets).unwrap_err();
        assert!(e.contains("no target `db`"), "{e}");
        let n = Nemesis::new(
            &[
                "proxy-reset:every=1s; proxy-partition:every=2s".into(),
                "none".into(),
            ],
            &targets,
        )
        .unwrap();
        assert_eq!(n.specs.len(), 2);
        assert!(n.needs_proxy());
    }

    #[test]
    fn toml_tables_say_the_same_as_specs() {
        let v: toml::Table = toml::from_str(
            r#"
            a = { fault = "proxy-latency", every = "5s", for = "2s", delay = "50ms" }
            b = { fault = "restart", at = ["1s", "4s"], target = "pg", count = 2 }
            c = { fault = "proxy-reset", random = ["1s", "2s"] }
            d = "proxy-partition:every=10s,for=3s"
            e = { every = "5s" }
            "#,
        )
        .unwrap();
        let a = FaultSpec::from_toml(&v["a"]).unwrap();
        assert_eq!(
            a,
            FaultSpec::parse("proxy-latency:every=5s,for=2s,delay=50ms").unwrap()
        );
        let b = FaultSpec::from_toml(&v["b"]).unwrap();
        assert_eq!(
            b,
            FaultSpec::parse("restart:at=1s/4s,target=pg,count=2").unwrap()
        );
        let c = FaultSpec::from_toml(&v["c"]).unwrap();
        assert_eq!(
            c.schedule,
            Schedule::Random {
                min: Duration::from_secs(1),
                max: Duration::from_secs(2)
            }
        );
        assert!(FaultSpec::from_toml(&v["d"]).is_ok());
        assert!(FaultSpec::from_toml(&v["e"])
            .unwrap_err()
            .contains("fault = "));
    }

    /// Drives the nemesis with a command target whose commands append to
    /// a file, and checks the fault lines and the commands' order.
    #[tokio::test]
    async fn faults_are_recorded_and_undone_at_stop() {
        let dir = tempfile::tempdir().unwrap();
        let marks = dir.path().join("marks");
        let m = marks.display();
        let mut targets = Targets::new();
        targets.insert(
            "t".into(),
            Target {
                pause: Some(format!("echo pause >> {m}")),
                resume: Some(format!("echo resume >> {m}")),
                restart: Some("exit 7".into()),
                ..Target::default()
            },
        );
        let n = Nemesis::new(
            &[
                "pause:every=100ms,for=50ms,count=2".into(),
                "restart:at=10ms".into(),
                // Still paused when the nemesis stops: undone at once.
                "pause:at=400ms,for=1h".into(),
            ],
            &targets,
        )
        .unwrap();
        let t0 = std::time::Instant::now();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let running = n.spawn(
            None,
            dir.path().to_path_buf(),
            1,
            move || t0.elapsed().as_nanos() as u64,
            tx,
        );
        tokio::time::sleep(ms(700)).await;
        let warnings = running.stop().await;
        assert!(t0.elapsed() < Duration::from_secs(5));
        let mut faults = Vec::new();
        while let Some(f) = rx.recv().await {
            faults.push(f);
        }
        assert_eq!(faults.len(), 4, "{faults:?}");
        let restart = faults.iter().find(|f| f.kind == "restart").unwrap();
        assert!(!restart.applied);
        assert_eq!(restart.detail.as_deref(), Some("exit 7"));
        assert_eq!(restart.target.as_deref(), Some("t"));
        for f in faults.iter().filter(|f| f.kind == "pause") {
            assert!(f.applied);
            assert!(f.end.unwrap() >= f.start + 40_000_000, "{f:?}");
        }
        let text = std::fs::read_to_string(&marks).unwrap();
        assert_eq!(text, "pause\nresume\npause\nresume\npause\nresume\n");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("restart t failed"), "{warnings:?}");
    }
}
