//! Scenario files: one `harness run`, written down in TOML so it can be
//! repeated, reviewed and put in a campaign.
//!
//! A scenario names everything a run needs: the database and its URLs, the
//! workload and its knobs, the level (and the database's own isolation
//! setting), the length, the faults (nemesis entries and the targets their
//! commands act on) and the outcome expected. Keys are the long flags of
//! `harness run` with `_` for `-`, and durations are strings (`"30s"`):
//!
//! ```toml
//! name = "postgres-restart"
//! db = "postgres"
//! urls = ["postgres://postgres@127.0.0.1:5432/postgres"]
//! workload = "mini"
//! level = "si"
//! isolation = "repeatable-read"
//! clients = 8
//! duration = "20s"
//! keys = 10
//! statement_timeout = "2s"
//! nemesis = ["restart:every=5s,target=pg"]  # or tables: [[nemesis]] fault = "restart" ...
//! expect = "ok"                              # or "anomalous"
//! anomalies = []                             # with "anomalous": names that must be found
//!
//! [targets.pg]
//! restart = "pg_ctl -D /var/lib/pg restart -m immediate"
//! ```
//!
//! `harness run --scenario FILE` runs it; every flag given on the command
//! line overrides the file (`--nemesis` replaces the file's whole list).

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use clap::parser::ValueSource;
use clap::{CommandFactory, Parser};
use serde::Deserialize;

use crate::cli::RunArgs;
use crate::expectation::{Expect, Expectation};
use crate::nemesis::{FaultSpec, Nemesis, Targets};

/// A scenario file. Every key is optional; what is missing takes the
/// default of `harness run`. The keys named here are read by campaigns as
/// well; every other key is a flag of `harness run` (checked against its
/// definition, so a new flag works in scenarios at once).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Scenario {
    /// A name, for people reading the file (campaigns set it per run).
    #[allow(dead_code)]
    pub name: Option<String>,
    /// Free text, for people reading the file.
    #[allow(dead_code)]
    pub description: Option<String>,
    /// `--db`.
    pub db: Option<String>,
    /// `--workload`.
    pub workload: Option<String>,
    /// `--level`.
    pub level: Option<String>,
    /// `--isolation`.
    pub isolation: Option<String>,
    /// Nemesis entries: spec strings or tables.
    #[serde(default)]
    pub nemesis: Vec<toml::Value>,
    /// Command-fault targets by name.
    #[serde(default)]
    pub targets: Targets,
    /// The expected outcome.
    pub expect: Option<Expect>,
    /// Anomalies that must be found (with `expect = "anomalous"`), by
    /// Adya name (`G-single`) or common name (`lost update`).
    #[serde(default)]
    pub anomalies: Vec<String>,
    /// The run is expected to test little (most transactions abort, few
    /// writers commit, none overlap, no fault of its nemesis applied, or
    /// the database was gone for a long span): its warning then does not
    /// fail the expectation. Default false: a run that tested little fails.
    #[serde(default)]
    pub tested_little: bool,
    /// Every other key: a long flag of `harness run`, `_` or `-` alike
    /// (`clients = 8`, `statement_timeout = "2s"`, `urls = [...]`).
    #[serde(flatten)]
    pub flags: toml::Table,
}

/// Reads and parses a scenario file.
pub fn load(path: &Path) -> Result<Scenario> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| format!("{}", path.display()))
}

/// Parses scenario text.
pub fn parse(text: &str) -> Result<Scenario> {
    let s: Scenario = toml::from_str(text).map_err(|e| anyhow!("{}", e.to_string().trim()))?;
    s.check()?;
    Ok(s)
}

/// The definition of `harness run`, whose flags scenario keys name.
fn run_definition() -> clap::Command {
    crate::cli::Cli::command()
        .find_subcommand("run")
        .cloned()
        .expect("harness has a run subcommand")
}

/// The first line of a clap error, without its `error: ` prefix.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// A scalar TOML value as a command-line word.
fn word(key: &str, v: &toml::Value) -> Result<String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        other => Err(anyhow!(
            "{key}: expected a string or a number, found {other}"
        )),
    }
}

impl Scenario {
    /// Checks that every key means something and every value parses, as
    /// `harness run` would parse it.
    pub fn check(&self) -> Result<()> {
        if !self.anomalies.is_empty() && self.expect != Some(Expect::Anomalous) {
            bail!("anomalies = [...] goes with expect = \"anomalous\"");
        }
        let mut argv = vec!["harness".to_string(), "run".to_string()];
        argv.extend(self.to_argv(&|_| false)?);
        let cli =
            crate::cli::Cli::try_parse_from(argv).map_err(|e| anyhow!("{}", clap_message(&e)))?;
        // What clap cannot see: the command faults' targets, with those a
        // `--cluster` run makes for its nodes.
        let mut targets = self.targets.clone();
        if let crate::cli::Command::Run(a) = &cli.command {
            if let Some(kind) = a.cluster {
                let planned = crate::cluster::planned_targets(
                    kind,
                    a.cluster_state.clone(),
                    a.cluster_nodes,
                )?;
                for (name, t) in planned {
                    targets.entry(name).or_insert(t);
                }
            }
        }
        Nemesis::from_specs(self.nemesis_specs()?, &targets).map_err(|e| anyhow!(e))?;
        Ok(())
    }

    /// The nemesis entries, parsed.
    pub fn nemesis_specs(&self) -> Result<Vec<FaultSpec>> {
        self.nemesis
            .iter()
            .map(|v| FaultSpec::from_toml(v).map_err(|e| anyhow!("nemesis: {e}")))
            .collect()
    }

    /// The expectation, when the scenario states one.
    pub fn expectation(&self) -> Option<Expectation> {
        self.expect.map(|expect| Expectation {
            expect,
            anomalies: self.anomalies.clone(),
            tested_little: self.tested_little,
        })
    }

    /// The `harness run` flags the scenario stands for, leaving out those
    /// whose argument id `given` says the command line set (`txns` and
    /// `duration` are one choice: either one leaves out both).
    pub fn to_argv(&self, given: &dyn Fn(&str) -> bool) -> Result<Vec<String>> {
        let def = run_definition();
        let mut pairs: Vec<(String, toml::Value)> = Vec::new();
        for (k, v) in [
            ("db", &self.db),
            ("workload", &self.workload),
            ("level", &self.level),
            ("isolation", &self.isolation),
        ] {
            if let Some(v) = v {
                pairs.push((k.into(), toml::Value::String(v.clone())));
            }
        }
        if !self.nemesis.is_empty() {
            let specs = self.nemesis_specs()?;
            let list = specs
                .iter()
                .map(|s| toml::Value::String(s.to_string()))
                .collect();
            pairs.push(("nemesis".into(), toml::Value::Array(list)));
        }
        pairs.extend(self.flags.iter().map(|(k, v)| (k.clone(), v.clone())));
        let budget_given = given("txns") || given("duration");
        let mut argv = Vec::new();
        for (key, value) in pairs {
            let dashed = key.replace('_', "-");
            let arg = def
                .get_arguments()
                .find(|a| a.get_id() == key.as_str() || a.get_long() == Some(dashed.as_str()))
                .filter(|a| !matches!(a.get_id().as_str(), "scenario" | "help" | "version"))
                .and_then(|a| a.get_long().map(|l| (a, l)));
            let Some((arg, long)) = arg else {
                bail!("unknown key `{key}` (scenario keys are the long flags of `harness run`, plus nemesis, targets, expect, anomalies, tested_little, name, description)");
            };
            let id = arg.get_id().as_str();
            if given(id) || (budget_given && matches!(id, "txns" | "duration")) {
                continue;
            }
            let flag = format!("--{long}");
            match (&value, arg.get_action()) {
                (toml::Value::Boolean(b), clap::ArgAction::SetTrue) => {
                    if *b {
                        argv.push(flag);
                    }
                }
                (toml::Value::Array(items), clap::ArgAction::Append) => {
                    for item in items {
                        argv.push(flag.clone());
                        argv.push(word(&key, item)?);
                    }
                }
                (toml::Value::Array(_), _) => bail!("{key}: takes one value, not a list"),
                (v, _) => {
                    argv.push(flag);
                    argv.push(word(&key, v)?);
                }
            }
        }
        Ok(argv)
    }

    /// The arguments of `harness run` for this scenario and the words the
    /// command line gave after `run` (which win).
    pub fn merge(&self, user: &[OsString]) -> Result<RunArgs> {
        let head = [OsString::from("harness"), OsString::from("run")];
        let user_m = run_definition()
            .no_binary_name(true)
            .try_get_matches_from(user)
            .map_err(|e| anyhow!("{}", clap_message(&e)))?;
        let given = |id: &str| {
            user_m.try_contains_id(id).unwrap_or(false)
                && user_m.value_source(id) == Some(ValueSource::CommandLine)
        };
        let mut argv: Vec<OsString> = head.to_vec();
        argv.extend(self.to_argv(&given)?.into_iter().map(OsString::from));
        argv.extend(user.iter().cloned());
        let cli =
            crate::cli::Cli::try_parse_from(argv).map_err(|e| anyhow!("{}", clap_message(&e)))?;
        let crate::cli::Command::Run(mut args) = cli.command else {
            bail!("internal error: not a run");
        };
        args.targets = self.targets.clone();
        args.expect = self.expectation();
        Ok(*args)
    }
}

/// `harness run`, with `--scenario` applied when given: the scenario
/// fills in every flag the command line did not give.
pub fn run_command(args: RunArgs) -> Result<u8> {
    let Some(path) = args.scenario.clone() else {
        return crate::run::command(args);
    };
    let s = load(&path)?;
    // The words after `run`, as the user typed them.
    let all: Vec<OsString> = std::env::args_os().skip(1).collect();
    let from = all.iter().position(|a| a == "run").map_or(0, |i| i + 1);
    let merged = s
        .merge(&all[from..])
        .with_context(|| format!("{}", path.display()))?;
    crate::run::command(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::expectation::names_match;
    use checkers::Verdict;

    fn words(argv: &[&str]) -> Vec<OsString> {
        argv.iter().map(OsString::from).collect()
    }

    const FILE: &str = r#"
        name = "pg"
        db = "postgres"
        urls = ["postgres://postgres@127.0.0.1:5432/x"]
        workload = "mini"
        level = "si"
        clients = 4
        duration = "20s"
        keys = 5
        statement-timeout = "2s"
        read_ratio = 0.5
        nemesis = ["restart:every=5s", { fault = "proxy-reset", at = ["1s"] }]
        expect = "anomalous"
        anomalies = ["lost update"]
        [targets.pg]
        restart = "true"
    "#;

    #[test]
    fn the_file_fills_what_the_flags_do_not_say() {
        use std::time::Duration;
        let s = parse(FILE).unwrap();
        let args = s
            .merge(&words(&[
                "--clients",
                "9",
                "--txns",
                "50",
                "--level",
                "ser",
            ]))
            .unwrap();
        assert_eq!(args.db, crate::cli::DbArg::Postgres);
        assert_eq!(args.urls, vec!["postgres://postgres@127.0.0.1:5432/x"]);
        assert_eq!(args.clients, 9);
        assert_eq!(args.level, history::Level::Ser);
        assert_eq!((args.txns, args.duration), (Some(50), None));
        assert_eq!(args.keys, Some(5));
        assert_eq!(args.read_ratio, Some(0.5));
        assert_eq!(args.statement_timeout, Duration::from_secs(2));
        assert_eq!(args.nemesis, vec!["restart:every=5s", "proxy-reset:at=1s"]);
        assert!(args.targets.contains_key("pg"));
        assert_eq!(args.expect.as_ref().unwrap().expect, Expect::Anomalous);

        let args = s
            .merge(&words(&[
                "--nemesis",
                "proxy-refuse:every=1s",
                "--url",
                "postgres://a@b:1/c",
            ]))
            .unwrap();
        assert_eq!(args.nemesis, vec!["proxy-refuse:every=1s"]);
        assert_eq!(args.urls, vec!["postgres://a@b:1/c"]);
        assert_eq!(args.duration, Some(Duration::from_secs(20)));
        assert_eq!(args.clients, 4);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases = [
            ("db = \"oracle\"", "invalid value 'oracle' for '--db"),
            ("levle = \"si\"", "unknown key `levle`"),
            ("scenario = \"x.toml\"", "unknown key `scenario`"),
            ("duration = \"5 parsecs\"", "--duration"),
            ("txns = \"many\"", "--txns"),
            ("txns = 5\nduration = \"5s\"", "cannot be used with"),
            ("clients = [1, 2]", "not a list"),
            ("nemesis = [\"proxy-reset:every=x\"]", "every=x"),
            ("nemesis = [\"pause:every=1s\"]", "scenario file"),
            ("anomalies = [\"G0\"]", "expect = \"anomalous\""),
            ("expect = \"maybe\"", "expect"),
        ];
        for (text, want) in cases {
            let e = format!("{:#}", parse(text).unwrap_err());
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn names_match_titles() {
        for (want, found, yes) in [
            ("G-single", "G-single (lost update)", true),
            ("lost update", "G-single (lost update)", true),
            ("lost-update", "G-single (lost update)", true),
            ("G2-item", "G2-item-realtime (write skew)", true),
            ("g2-item-realtime", "G2-item-realtime (write skew)", true),
            ("G2", "G2-item (write skew)", false),
            ("write skew", "G-single (lost update)", false),
            ("G1a", "G1a", true),
        ] {
            assert_eq!(names_match(want, found), yes, "{want} vs {found}");
        }
    }

    #[test]
    fn judging() {
        let found: BTreeMap<String, usize> = [("G-single (lost update)".to_string(), 3)].into();
        let none = BTreeMap::new();
        let ok = Expectation {
            expect: Expect::Ok,
            anomalies: vec![],
            tested_little: false,
        };
        assert!(ok.judge(Verdict::Ok, &none, &[]).0);
        assert!(ok.judge(Verdict::Unknown, &none, &[]).0);
        assert!(!ok.judge(Verdict::Anomalous, &found, &[]).0);
        let bad = Expectation {
            expect: Expect::Anomalous,
            anomalies: vec!["lost update".into()],
            tested_little: false,
        };
        assert!(bad.judge(Verdict::Anomalous, &found, &[]).0);
        assert!(!bad.judge(Verdict::Ok, &none, &[]).0);
        let skew = Expectation {
            expect: Expect::Anomalous,
            anomalies: vec!["write skew".into()],
            tested_little: false,
        };
        let (pass, why) = skew.judge(Verdict::Anomalous, &found, &[]);
        assert!(!pass && why.contains("write skew"), "{why}");
    }

    #[test]
    fn a_run_that_tested_little_fails_unless_expected() {
        let none = BTreeMap::new();
        let little = ["700 of 1000 transactions aborted (70.0%, over 50%)".to_string()];
        let mut ok = Expectation {
            expect: Expect::Ok,
            anomalies: vec![],
            tested_little: false,
        };
        let (pass, why) = ok.judge(Verdict::Ok, &none, &little);
        assert!(!pass, "{why}");
        assert!(
            why.contains("tested little") && why.contains("70.0%"),
            "{why}"
        );
        ok.tested_little = true;
        assert!(ok.judge(Verdict::Ok, &none, &little).0);
        let s = parse("expect = \"ok\"\ntested_little = true\n").unwrap();
        assert!(s.expectation().unwrap().tested_little);
    }
}
