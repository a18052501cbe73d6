//! Network namespaces, veth pairs and the bridge that give each cluster
//! node its own address on one machine.
//!
//! Everything the harness makes here carries the `isoh-` prefix: the
//! bridge `isoh-br0` (198.18.0.1/24, the host's side) and one namespace
//! per node (`isoh-galera-2`), joined to the bridge by a veth pair whose
//! host end is `isoh-<kind letter><n>`. The namespaces get no default
//! route and forwarding is never switched on: a node reaches the bridge's
//! /24 and nothing else.

use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The bridge every namespace of the harness hangs off.
pub const BRIDGE: &str = "isoh-br0";
/// The host's address on the bridge.
pub const HOST_ADDR: &str = "198.18.0.1";
/// The prefix of every name the harness gives a link or namespace.
pub const PREFIX: &str = "isoh-";

/// Runs `prog args`, returning its standard output; an error carries the
/// command and its standard error.
pub fn run(prog: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {prog}"))?;
    if !out.status.success() {
        bail!(
            "`{prog} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when `prog args` succeeds (its output is dropped).
pub fn quiet(prog: &str, args: &[&str]) -> bool {
    Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Creates the bridge with the host's address, unless it is there.
pub fn ensure_bridge() -> Result<()> {
    if !quiet("ip", &["link", "show", "dev", BRIDGE]) {
        run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
    }
    let addrs = run("ip", &["-o", "-4", "addr", "show", "dev", BRIDGE])?;
    if !addrs.contains(&format!("{HOST_ADDR}/24")) {
        run(
            "ip",
            &["addr", "add", &format!("{HOST_ADDR}/24"), "dev", BRIDGE],
        )?;
    }
    run("ip", &["link", "set", BRIDGE, "up"])?;
    Ok(())
}

/// The harness's namespaces whose names start with `prefix` (which must
/// itself start with `isoh-`).
pub fn namespaces(prefix: &str) -> Vec<String> {
    debug_assert!(prefix.starts_with(PREFIX));
    let Ok(list) = run("ip", &["netns", "list"]) else {
        return Vec::new();
    };
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Makes namespace `ns` with address `addr`/24 on `eth0`, joined to the
/// bridge by the veth pair whose host end is `host_end`. Leftovers of the
/// same names are removed first.
pub fn add_node(ns: &str, host_end: &str, addr: &str) -> Result<()> {
    remove_namespace(ns);
    if quiet("ip", &["link", "show", "dev", host_end]) {
        let _ = run("ip", &["link", "del", host_end]);
    }
    run("ip", &["netns", "add", ns])?;
    run(
        "ip",
        &[
            "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns,
        ],
    )?;
    run("ip", &["link", "set", host_end, "master", BRIDGE, "up"])?;
    run(
        "ip",
        &[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ],
    )?;
    run("ip", &["-n", ns, "link", "set", "eth0", "up"])?;
    run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    Ok(())
}

/// The processes running in namespace `ns`.
pub fn pids(ns: &str) -> Vec<u32> {
    run("ip", &["netns", "pids", ns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Sends `signal` (e.g. `KILL`, `STOP`) to every process in `ns`; the
/// number of processes signalled.
pub fn signal_all(ns: &str, signal: &str) -> usize {
    let pids = pids(ns);
    for p in &pids {
        let _ = quiet("kill", &[&format!("-{signal}"), &p.to_string()]);
    }
    pids.len()
}

/// Kills every process in `ns` (SIGKILL; stopped ones too) and waits up to
/// a few seconds for them to go.
pub fn kill_all(ns: &str) {
    for _ in 0..50 {
        if signal_all(ns, "KILL") == 0 {
            return;
        }
        // A stopped process dies on SIGKILL; CONT does no harm.
        signal_all(ns, "CONT");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The processes in `ns` named `name`: by their command name
/// (`postgres`), or by the program their command line runs (`patroni`,
/// a Python script started as `python3 /usr/bin/patroni`).
pub fn named_pids(ns: &str, name: &str) -> Vec<u32> {
    let named = |p: &u32| {
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        comm.trim() == name
            || cmd
                .split(|b| *b == 0)
                .take(2)
                .any(|a| a.rsplit(|b| *b == b'/').next() == Some(name.as_bytes()))
    };
    pids(ns).into_iter().filter(named).collect()
}

/// Kills (SIGKILL) the processes in `ns` named `name`; how many.
pub fn kill_named(ns: &str, name: &str) -> usize {
    let hit = named_pids(ns, name);
    for p in &hit {
        let _ = quiet("kill", &["-KILL", &p.to_string()]);
    }
    hit.len()
}

/// Kills what runs in `ns` and deletes it (its veth pair goes with it).
/// Does nothing when there is no such namespace.
pub fn remove_namespace(ns: &str) {
    if !run("ip", &["netns", "list"])
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(ns))
    {
        return;
    }
    kill_all(ns);
    let _ = run("ip", &["netns", "del", ns]);
}

/// Deletes the bridge once no namespace of the harness is left.
pub fn remove_bridge_if_unused() {
    if namespaces(PREFIX).is_empty() && quiet("ip", &["link", "show", "dev", BRIDGE]) {
        let _ = run("ip", &["link", "del", BRIDGE]);
    }
}

/// Drops every packet from namespace `ns` to `peer` (a blackhole route),
/// or lifts that again: one direction of a partition.
pub fn block(ns: &str, peer: &str, on: bool) -> Result<()> {
    let verb = if on { "replace" } else { "del" };
    let target = format!("{peer}/32");
    match run("ip", &["-n", ns, "route", verb, "blackhole", &target]) {
        Ok(_) => Ok(()),
        // Healing a path that is not blocked is fine.
        Err(_) if !on => Ok(()),
        Err(e) => Err(e),
    }
}

/// The priority of the policy rules of [`block_ports`].
const PORT_RULE_PREF: &str = "100";

/// Drops the TCP packets from namespace `ns` to `peer` that go to or come
/// from `ports` (`2379-2380`), both ways of one side: a partition of one
/// service (etcd) while the rest of the traffic passes.
pub fn block_ports(ns: &str, peer: &str, ports: &str) -> Result<()> {
    for dir in ["dport", "sport"] {
        run(
            "ip",
            &[
                "-n",
                ns,
                "rule",
                "add",
                "pref",
                PORT_RULE_PREF,
                "to",
                peer,
                "ipproto",
                "tcp",
                dir,
                ports,
                "blackhole",
            ],
        )?;
    }
    Ok(())
}

/// Lifts every blackhole route in `ns`, and the rules of [`block_ports`].
pub fn unblock_all(ns: &str) {
    while quiet("ip", &["-n", ns, "rule", "del", "pref", PORT_RULE_PREF]) {}
    let routes = run("ip", &["-n", ns, "route", "show", "type", "blackhole"]).unwrap_or_default();
    for r in routes.lines() {
        if let Some(dst) = r.split_whitespace().nth(1) {
            let _ = run("ip", &["-n", ns, "route", "del", "blackhole", dst]);
        }
    }
}

/// Degrades the link of namespace `ns` (its `eth0`, so every packet the
/// node sends: to the other nodes and to the clients) with the kernel's
/// netem queueing discipline.
pub fn netem(ns: &str, delay_ms: u64, jitter_ms: u64, loss_pct: f64) -> Result<()> {
    let (delay, jitter, loss) = (
        format!("{delay_ms}ms"),
        format!("{jitter_ms}ms"),
        format!("{loss_pct}%"),
    );
    let mut args = vec!["-n", ns, "qdisc", "replace", "dev", "eth0", "root", "netem"];
    if delay_ms > 0 {
        args.extend(["delay", &delay]);
        if jitter_ms > 0 {
            args.push(&jitter);
        }
    }
    if loss_pct > 0.0 {
        args.extend(["loss", &loss]);
    }
    run("tc", &args).map(|_| ()).map_err(|e| {
        if format!("{e:#}").contains("qdisc kind is unknown") {
            anyhow::anyhow!(
                "this kernel has no netem queueing discipline (module sch_netem): {e:#}"
            )
        } else {
            e
        }
    })
}

/// Lifts [`netem`] again (nothing to do when it is not there).
pub fn unnetem(ns: &str) {
    let _ = run("tc", &["-n", ns, "qdisc", "del", "dev", "eth0", "root"]);
}
