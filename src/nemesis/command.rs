//! Command faults: shell commands the scenario gives per target, such as
//! `docker compose pause tikv-1` or `pg_ctl -D ... restart -m immediate`.
//!
//! A command runs under `sh -c` in its own process group (so a Ctrl-C at
//! the terminal does not reach a database server it starts), with no
//! standard input, with its output appended to the run's `nemesis.log`
//! rather than piped (a server started by the command may keep a pipe open
//! for ever), and with a time limit. A command that exits non-zero, cannot
//! start, or runs out of time is a failed fault: the error is reported and
//! the run goes on.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a command fault does, and the pair of commands it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `pause`, then `resume` after the fault's length.
    Pause,
    /// `kill`, then `start` after the fault's length.
    Kill,
    /// `restart`: one command, the fault ends when it returns.
    Restart,
    /// `partition`, then `heal` after the fault's length.
    Partition,
    /// `netem` (delay, jitter, loss on the target's link), then `unnetem`.
    Netem,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 5] = [
        Action::Pause,
        Action::Kill,
        Action::Restart,
        Action::Partition,
        Action::Netem,
    ];

    /// The name in specs, scenarios and `fault` lines.
    pub fn name(self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Kill => "kill",
            Action::Restart => "restart",
            Action::Partition => "partition",
            Action::Netem => "netem",
        }
    }

    /// The name of the command that undoes it, when there is one.
    pub fn undo_name(self) -> Option<&'static str> {
        match self {
            Action::Pause => Some("resume"),
            Action::Kill => Some("start"),
            Action::Restart => None,
            Action::Partition => Some("heal"),
            Action::Netem => Some("unnetem"),
        }
    }

    /// The action named `s`.
    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// The commands of one target (a node, a container, a server), as a
/// scenario's `[targets.NAME]` table gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Stops the target without killing it (`docker compose pause X`,
    /// `kill -STOP ...`).
    pub pause: Option<String>,
    /// Undoes `pause`.
    pub resume: Option<String>,
    /// Kills the target.
    pub kill: Option<String>,
    /// Starts it again after `kill`.
    pub start: Option<String>,
    /// Kills and starts it in one go.
    pub restart: Option<String>,
    /// Cuts it off the network.
    pub partition: Option<String>,
    /// Undoes `partition`.
    pub heal: Option<String>,
    /// Degrades its link (`tc qdisc ... netem`); the fault's parameters
    /// come in `ISOHARNESS_DELAY_MS`, `ISOHARNESS_JITTER_MS` and
    /// `ISOHARNESS_LOSS_PCT`.
    pub netem: Option<String>,
    /// Undoes `netem`.
    pub unnetem: Option<String>,
    /// How long any one command may run (default 60 s), e.g. `"90s"`.
    pub timeout: Option<String>,
}

/// The command-fault targets of a run, by name.
pub type Targets = BTreeMap<String, Target>;

impl Target {
    /// The command named `name` (`pause`, `resume`, ...).
    pub fn command(&self, name: &str) -> Option<&str> {
        match name {
            "pause" => self.pause.as_deref(),
            "resume" => self.resume.as_deref(),
            "kill" => self.kill.as_deref(),
            "start" => self.start.as_deref(),
            "restart" => self.restart.as_deref(),
            "partition" => self.partition.as_deref(),
            "heal" => self.heal.as_deref(),
            "netem" => self.netem.as_deref(),
            "unnetem" => self.unnetem.as_deref(),
            _ => None,
        }
    }

    /// The time limit of each command.
    pub fn time_limit(&self) -> Result<Duration, String> {
        match &self.timeout {
            None => Ok(Duration::from_secs(60)),
            Some(t) => humantime::parse_duration(t).map_err(|e| format!("timeout {t:?}: {e}")),
        }
    }
}

/// Where command output goes, and what each command is told about itself.
#[derive(Clone, Debug)]
pub struct CommandEnv {
    /// The run's `nemesis.log`.
    pub log: PathBuf,
    /// The run folder, given to commands as `ISOHARNESS_RUN_DIR`.
    pub run_dir: PathBuf,
}

/// The prefix of an output line by which a command says what exactly it
/// did (a partition's sides, say); the rest of the line becomes the
/// fault's `detail`.
pub const DETAIL_PREFIX: &str = "isoharness-detail:";

/// Runs `cmd` for the fault `what` on `target`, with the extra environment
/// `vars`; `Ok` carries the detail the command printed (a line starting
/// with [`DETAIL_PREFIX`]), `Err` a short reason (exit status and the end
/// of the output). Output is appended to the log; passwords in the command
/// are not written out.
pub async fn run(
    env: &CommandEnv,
    target: &str,
    what: &str,
    cmd: &str,
    vars: &[(&str, String)],
    limit: Duration,
    at_ns: u64,
) -> Result<Option<String>, String> {
    let mut log = open_log(&env.log)?;
    let _ = writeln!(
        log,
        "[{:.3}s] {what} {target}: {}",
        at_ns as f64 / 1e9,
        adapters::redact_url(cmd)
    );
    let from = log.seek(SeekFrom::End(0)).unwrap_or(0);
    let out = log.try_clone().map_err(|e| e.to_string())?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .env("ISOHARNESS_TARGET", target)
        .env("ISOHARNESS_FAULT", what)
        .env("ISOHARNESS_RUN_DIR", &env.run_dir)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("waiting for the command failed: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            let out = tail(&env.log, from);
            let _ = writeln!(log, "  (killed after {} s)", limit.as_secs());
            return Err(format!("did not finish within {} s{out}", limit.as_secs()));
        }
    };
    if status.success() {
        Ok(detail(&env.log, from))
    } else {
        let code = status
            .code()
            .map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"));
        let out = tail(&env.log, from);
        let _ = writeln!(log, "  ({code})");
        Err(format!("{code}{out}"))
    }
}

fn open_log(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// The output the command wrote since `from`.
fn output(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        if f.seek(SeekFrom::Start(from)).is_ok() {
            let _ = f.take(64 * 1024).read_to_string(&mut text);
        }
    }
    text
}

/// The last detail line the command wrote, redacted.
fn detail(path: &Path, from: u64) -> Option<String> {
    output(path, from)
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(DETAIL_PREFIX))
        .map(|d| adapters::redact_url(d.trim()))
        .filter(|d| !d.is_empty())
}

/// The last line or so the command wrote, as `: text`, redacted.
fn tail(path: &Path, from: u64) -> String {
    let text = output(path, from);
    let last: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let shown = last[last.len().saturating_sub(2)..].join(" / ");
    if shown.is_empty() {
        String::new()
    } else {
        let mut s = adapters::redact_url(&shown);
        if s.len() > 300 {
            let mut cut = 300;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push('…');
        }
        format!(": {s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dir: &Path) -> CommandEnv {
        CommandEnv {
            log: dir.join("nemesis.log"),
            run_dir: dir.to_path_buf(),
        }
    }

    #[tokio::test]
    async fn success_failure_and_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(dir.path());
        let limit = Duration::from_secs(5);
        let said = run(
            &e,
            "t",
            "pause",
            "echo hello $ISOHARNESS_TARGET; echo isoharness-detail: x=$X",
            &[("X", "7".into())],
            limit,
            0,
        )
        .await
        .unwrap();
        assert_eq!(said.as_deref(), Some("x=7"));
        let log = std::fs::read_to_string(&e.log).unwrap();
        assert!(
            log.contains("pause t: echo hello") && log.contains("hello t"),
            "{log}"
        );

        let err = run(&e, "t", "kill", "echo oops >&2; exit 3", &[], limit, 0)
            .await
            .unwrap_err();
        assert_eq!(err, "exit 3: oops");

        let t = std::time::Instant::now();
        let err = run(
            &e,
            "t",
            "kill",
            "sleep 30",
            &[],
            Duration::from_millis(200),
            0,
        )
        .await
        .unwrap_err();
        assert!(err.starts_with("did not finish"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_background_child_holding_the_output_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(dir.path());
        let t = std::time::Instant::now();
        run(
            &e,
            "t",
            "start",
            "sleep 5 & echo started",
            &[],
            Duration::from_secs(3),
            0,
        )
        .await
        .unwrap();
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn passwords_stay_out_of_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let e = env(dir.path());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = rt.block_on(run(
            &e,
            "t",
            "restart",
            "true postgres://u:hunter2@h/db",
            &[],
            Duration::from_secs(5),
            0,
        ));
        let log = std::fs::read_to_string(&e.log).unwrap();
        assert!(!log.contains("hunter2"), "{log}");
    }

    #[test]
    fn actions_have_their_undo() {
        assert_eq!(Action::parse("pause"), Some(Action::Pause));
        assert_eq!(Action::Kill.undo_name(), Some("start"));
        assert_eq!(Action::Restart.undo_name(), None);
        assert_eq!(Action::parse("netem"), Some(Action::Netem));
        assert_eq!(Action::Netem.undo_name(), Some("unnetem"));
        assert_eq!(Action::parse("nap"), None);
    }
}
