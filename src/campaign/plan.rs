//! The campaign file and its expansion into runs.
//!
//! A campaign is a set of *matrix blocks*; each block is the cross product
//! of its axes (databases × workloads × levels × isolations × nemeses ×
//! seeds) with its own expected outcome. Every run is a scenario (see
//! [`crate::scenario`]) merged from, weakest first: `[defaults]`, the
//! database's table, the block's own scenario keys, and the axis values.
//!
//! ```toml
//! name = "local"
//! run_timeout = "300s"       # a run that takes longer is killed (an error)
//! seed = 1                   # or seeds = [1, 2, 3]; repeats = N gives seed, seed+1, ...
//!
//! [defaults]                 # scenario keys for every run
//! txns = 600
//! statement_timeout = "5s"
//!
//! [databases.postgres]       # a label and its scenario keys
//! db = "postgres"
//! urls = ["postgres://postgres@127.0.0.1:5432/postgres"]
//! targets.db.restart = "..."  # command-fault targets, one name for all databases
//!
//! [nemeses]                  # named lists of nemesis entries
//! none = []
//! resets = ["proxy-reset:every=1s"]
//!
//! [[matrix]]
//! databases = ["postgres"]
//! workloads = ["mini", "append"]
//! levels = ["si", "ser"]
//! nemeses = ["none", "resets"]
//! expect = "ok"              # the default
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::expectation::{Expect, Expectation};
use crate::scenario::Scenario;

/// The keys of a `[[matrix]]` block that are not scenario keys.
const AXIS_KEYS: [&str; 9] = [
    "name",
    "databases",
    "workloads",
    "levels",
    "isolations",
    "nemeses",
    "repeats",
    "seeds",
    "seed",
];

/// A campaign file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFile {
    /// The campaign's name: its results go to `OUT/<name>/`.
    pub name: Option<String>,
    /// Free text, for people reading the file.
    #[allow(dead_code)]
    pub description: Option<String>,
    /// Kill a run that takes longer (default 600 s).
    pub run_timeout: Option<String>,
    /// How many times each run is repeated (with seeds seed, seed+1, ...).
    pub repeats: Option<u64>,
    /// The first seed (default 1).
    pub seed: Option<u64>,
    /// Explicit seeds, one run each.
    pub seeds: Option<Vec<u64>>,
    /// Scenario keys for every run.
    #[serde(default)]
    pub defaults: toml::Table,
    /// Scenario keys per database label.
    #[serde(default)]
    pub databases: BTreeMap<String, toml::Table>,
    /// Named lists of nemesis entries.
    #[serde(default)]
    pub nemeses: BTreeMap<String, Vec<toml::Value>>,
    /// The matrix blocks.
    #[serde(default)]
    pub matrix: Vec<toml::Table>,
}

/// One run of a campaign, ready to start.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// Unique in the campaign; stable across nights, so `compare` can
    /// match runs.
    pub name: String,
    /// The database label.
    pub db: String,
    /// The `--db` value.
    pub db_kind: String,
    /// The workload.
    pub workload: String,
    /// The level checked.
    pub level: String,
    /// The database's own isolation setting, when set.
    pub isolation: Option<String>,
    /// The nemesis label (`none` when no fault).
    pub nemesis: String,
    /// The seed.
    pub seed: u64,
    /// The merged scenario.
    pub scenario: toml::Table,
    /// What the run must show.
    pub expect: Expectation,
}

/// A whole campaign, expanded.
#[derive(Debug)]
pub struct Plan {
    /// The campaign's name.
    pub name: String,
    /// The per-run time limit.
    pub run_timeout: Duration,
    /// The runs, in file order.
    pub runs: Vec<PlannedRun>,
}

fn strings(block: &toml::Table, key: &str) -> Result<Option<Vec<String>>> {
    match block.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(anyhow!("{key}: expected strings, found {other}")),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(other) => Err(anyhow!("{key}: expected a list of strings, found {other}")),
    }
}

fn uint(block: &toml::Table, key: &str) -> Result<Option<u64>> {
    match block.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
        Some(other) => Err(anyhow!(
            "{key}: expected a non-negative integer, found {other}"
        )),
    }
}

/// Overlays `top` on `base`: `top`'s keys win; `targets` tables merge by
/// target name; `txns` and `duration` are one choice, so either replaces
/// both.
fn overlay(base: &mut toml::Table, top: &toml::Table) {
    if top.contains_key("txns") {
        base.remove("duration");
    }
    if top.contains_key("duration") {
        base.remove("txns");
    }
    for (k, v) in top {
        match (k.as_str(), base.get_mut(k), v) {
            ("targets", Some(toml::Value::Table(b)), toml::Value::Table(t)) => {
                for (name, cmds) in t {
                    b.insert(name.clone(), cmds.clone());
                }
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// A name fit for a folder: letters, digits, `-`, `_`, `.`.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn str_key(t: &toml::Table, key: &str) -> Option<String> {
    t.get(key).and_then(|v| v.as_str()).map(str::to_string)
}

impl CampaignFile {
    /// Reads and parses a campaign file.
    pub fn load(path: &Path) -> Result<CampaignFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), e.to_string().trim()))
    }

    /// Expands the matrix; `default_name` names a campaign without `name`.
    pub fn plan(&self, default_name: &str) -> Result<Plan> {
        let name = slug(self.name.as_deref().unwrap_or(default_name));
        let run_timeout = match &self.run_timeout {
            Some(t) => humantime::parse_duration(t).map_err(|e| anyhow!("run_timeout: {e}"))?,
            None => Duration::from_secs(600),
        };
        if self.matrix.is_empty() {
            bail!("the campaign has no [[matrix]] block, so no runs");
        }
        let mut runs = Vec::new();
        let mut names = BTreeSet::new();
        for (bi, block) in self.matrix.iter().enumerate() {
            let where_ = |e: anyhow::Error| e.context(format!("[[matrix]] block {}", bi + 1));
            self.expand(block, &mut runs, &mut names).map_err(where_)?;
        }
        Ok(Plan {
            name,
            run_timeout,
            runs,
        })
    }

    fn seeds(&self, block: &toml::Table) -> Result<Vec<u64>> {
        if let Some(v) = block.get("seeds") {
            let toml::Value::Array(a) = v else {
                bail!("seeds: expected a list of integers");
            };
            return a
                .iter()
                .map(|x| match x {
                    toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
                    other => Err(anyhow!("seeds: {other} is not a seed")),
                })
                .collect();
        }
        let repeats = uint(block, "repeats")?.or(self.repeats).unwrap_or(1);
        if block.get("seed").is_none() && block.get("repeats").is_none() {
            if let Some(s) = &self.seeds {
                return Ok(s.clone());
            }
        }
        let first = uint(block, "seed")?.or(self.seed).unwrap_or(1);
        Ok((0..repeats.max(1)).map(|i| first + i).collect())
    }

    fn expand(
        &self,
        block: &toml::Table,
        runs: &mut Vec<PlannedRun>,
        names: &mut BTreeSet<String>,
    ) -> Result<()> {
        let mut extra = toml::Table::new();
        for (k, v) in block {
            if !AXIS_KEYS.contains(&k.as_str()) {
                extra.insert(k.clone(), v.clone());
            }
        }
        let prefix = str_key(block, "name");
        let opt = |v: Option<Vec<String>>| -> Vec<Option<String>> {
            match v {
                Some(list) => list.into_iter().map(Some).collect(),
                None => vec![None],
            }
        };
        let dbs = opt(strings(block, "databases")?);
        let workloads = opt(strings(block, "workloads")?);
        let levels = opt(strings(block, "levels")?);
        let isolations = opt(strings(block, "isolations")?);
        let nemeses = opt(strings(block, "nemeses")?);
        let seeds = self.seeds(block)?;
        for db in &dbs {
            for wl in &workloads {
                for lvl in &levels {
                    for iso in &isolations {
                        for nem in &nemeses {
                            for &seed in &seeds {
                                let run = self.one(
                                    prefix.as_deref(),
                                    db.as_deref(),
                                    wl.as_deref(),
                                    lvl.as_deref(),
                                    iso.as_deref(),
                                    nem.as_deref(),
                                    seed,
                                    &extra,
                                )?;
                                if !names.insert(run.name.clone()) {
                                    bail!(
                                        "two runs are named {}: give the blocks a name = \"...\"",
                                        run.name
                                    );
                                }
                                runs.push(run);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn one(
        &self,
        prefix: Option<&str>,
        db: Option<&str>,
        workload: Option<&str>,
        level: Option<&str>,
        isolation: Option<&str>,
        nemesis: Option<&str>,
        seed: u64,
        extra: &toml::Table,
    ) -> Result<PlannedRun> {
        let mut t = self.defaults.clone();
        if let Some(d) = db {
            let table = self.databases.get(d).ok_or_else(|| {
                let known: Vec<&str> = self.databases.keys().map(String::as_str).collect();
                anyhow!(
                    "no database `{d}` in [databases] (it has: {})",
                    known.join(", ")
                )
            })?;
            overlay(&mut t, table);
        }
        overlay(&mut t, extra);
        let mut set = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                t.insert(k.into(), toml::Value::String(v.into()));
            }
        };
        set("workload", workload);
        set("level", level);
        set("isolation", isolation);
        if let Some(n) = nemesis {
            let list = if n == "none" {
                Vec::new()
            } else {
                self.nemeses.get(n).cloned().ok_or_else(|| {
                    let known: Vec<&str> = self.nemeses.keys().map(String::as_str).collect();
                    anyhow!(
                        "no nemesis `{n}` in [nemeses] (it has: none, {})",
                        known.join(", ")
                    )
                })?
            };
            t.insert("nemesis".into(), toml::Value::Array(list));
        }
        t.insert("seed".into(), toml::Value::Integer(seed as i64));
        let scenario: Scenario = toml::Value::Table(t.clone())
            .try_into()
            .map_err(|e: toml::de::Error| anyhow!("{}", e.to_string().trim()))?;
        scenario.check()?;
        let db_kind = scenario.db.clone().unwrap_or_else(|| "sqlite".into());
        let db_label = db.map_or_else(|| db_kind.clone(), str::to_string);
        let workload = scenario.workload.clone().unwrap_or_else(|| "mini".into());
        let level = scenario.level.clone().unwrap_or_else(|| "ser".into());
        let nemesis_label = match nemesis {
            Some(n) => n.to_string(),
            None if scenario.nemesis.is_empty() => "none".into(),
            None => "custom".into(),
        };
        let mut parts = Vec::new();
        parts.extend(prefix.map(str::to_string));
        parts.extend([db_label.clone(), workload.clone(), level.clone()]);
        parts.extend(scenario.isolation.clone());
        parts.push(nemesis_label.clone());
        parts.push(format!("s{seed}"));
        let name = slug(&parts.join("-"));
        t.insert("name".into(), toml::Value::String(name.clone()));
        let expect = scenario.expectation().unwrap_or(Expectation {
            expect: Expect::Ok,
            anomalies: Vec::new(),
            tested_little: scenario.tested_little,
        });
        Ok(PlannedRun {
            name,
            db: db_label,
            db_kind,
            workload,
            level,
            isolation: scenario.isolation.clone(),
            nemesis: nemesis_label,
            seed,
            scenario: t,
            expect,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
        name = "t"
        seed = 5
        [defaults]
        txns = 100
        clients = 2
        [databases.pg]
        db = "postgres"
        urls = ["postgres://u@h:1/d"]
        targets.db.restart = "pg-restart"
        [databases.lite]
        db = "sqlite"
        [nemeses]
        resets = ["proxy-reset:every=1s"]
        restarts = [{ fault = "restart", target = "db", every = "2s" }]
        [[matrix]]
        databases = ["pg", "lite"]
        workloads = ["mini", "append"]
        levels = ["ser"]
        [[matrix]]
        databases = ["lite"]
        workloads = ["range"]
        duration = "2s"
        [[matrix]]
        name = "faults"
        databases = ["pg"]
        levels = ["si"]
        isolations = ["repeatable-read"]
        nemeses = ["none", "resets", "restarts"]
        repeats = 2
        txns = 50
        expect = "anomalous"
        anomalies = ["lost update"]
    "#;

    #[test]
    fn the_matrix_expands_with_merged_scenarios() {
        let f: CampaignFile = toml::from_str(FILE).unwrap();
        let p = f.plan("x").unwrap();
        assert_eq!(p.name, "t");
        assert_eq!(p.runs.len(), 4 + 1 + 3 * 2);
        let range = p.runs.iter().find(|r| r.workload == "range").unwrap();
        assert!(range.scenario.get("txns").is_none());
        assert_eq!(range.scenario["duration"].as_str(), Some("2s"));
        let names: Vec<&str> = p.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names[0], "pg-mini-ser-none-s5");
        assert!(names.contains(&"faults-pg-mini-si-repeatable-read-restarts-s6"));
        let r = p
            .runs
            .iter()
            .find(|r| r.name == "faults-pg-mini-si-repeatable-read-restarts-s6")
            .unwrap();
        assert_eq!(r.scenario["txns"].as_integer(), Some(50));
        assert_eq!(r.scenario["clients"].as_integer(), Some(2));
        assert_eq!(r.scenario["seed"].as_integer(), Some(6));
        assert_eq!(r.expect.expect, Expect::Anomalous);
        assert_eq!(r.db_kind, "postgres");
        // The merged scenario is a valid scenario file.
        let text = toml::to_string(&r.scenario).unwrap();
        let s = crate::scenario::parse(&text).unwrap();
        assert_eq!(s.targets["db"].restart.as_deref(), Some("pg-restart"));
        assert_eq!(s.nemesis_specs().unwrap().len(), 1);
        let lite = p.runs.iter().find(|r| r.db == "lite").unwrap();
        assert_eq!(lite.expect.expect, Expect::Ok);
    }

    #[test]
    fn mistakes_name_the_block_and_the_key() {
        let cases = [
            ("[[matrix]]\ndatabases = [\"nope\"]", "no database `nope`"),
            ("[[matrix]]\nnemeses = [\"nope\"]", "no nemesis `nope`"),
            ("[[matrix]]\nlevels = [\"strongest\"]", "level"),
            ("[[matrix]]\ntxns = \"many\"", "txns"),
            ("", "no [[matrix]]"),
            (
                "[[matrix]]\nworkloads = [\"mini\"]\n[[matrix]]\nworkloads = [\"mini\"]",
                "two runs are named",
            ),
        ];
        for (text, want) in cases {
            let f: CampaignFile = toml::from_str(text).unwrap();
            let e = format!("{:#}", f.plan("c").unwrap_err());
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(toml::from_str::<CampaignFile>("wat = 1").is_err());
    }
}
