//! `docker-compose.yml` agrees with the adapters: one profile per database,
//! pinned images, and published ports that match each adapter's default
//! URL; and `harness run` against a cluster that is not up fails fast,
//! naming the URL and the compose command that starts it.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use yaml_rust2::{Yaml, YamlLoader};

/// One service of the compose file: its image, profiles and published
/// ports (host, container).
#[derive(Debug)]
struct Service {
    image: String,
    profiles: Vec<String>,
    ports: Vec<(u16, u16)>,
}

fn services() -> BTreeMap<String, Service> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docker-compose.yml");
    let text = std::fs::read_to_string(path).expect("docker-compose.yml at the repo root");
    let docs = YamlLoader::load_from_str(&text).expect("docker-compose.yml is YAML");
    let root = &docs[0];
    let map = root["services"].as_hash().expect("a services map");
    let mut out = BTreeMap::new();
    for (name, svc) in map {
        let name = name.as_str().unwrap().to_string();
        let image = svc["image"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no image"))
            .to_string();
        let profiles = svc["profiles"]
            .as_vec()
            .unwrap_or_else(|| panic!("{name}: no profiles (it would start by default)"))
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        let ports = match &svc["ports"] {
            Yaml::Array(ps) => ps
                .iter()
                .map(|p| {
                    let s = p
                        .as_str()
                        .unwrap_or_else(|| panic!("{name}: write ports as \"HOST:CONTAINER\""));
                    let (h, c) = s
                        .split_once(':')
                        .unwrap_or_else(|| panic!("{name}: port {s} publishes no host port"));
                    (h.parse().unwrap(), c.parse().unwrap())
                })
                .collect(),
            Yaml::BadValue => Vec::new(),
            other => panic!("{name}: ports {other:?}"),
        };
        out.insert(
            name,
            Service {
                image,
                profiles,
                ports,
            },
        );
    }
    out
}

/// The host and port of a default URL.
fn host_port(url: &str) -> (String, u16) {
    let rest = url.split_once("://").unwrap().1;
    let hostport = rest.split(['/', '?']).next().unwrap();
    let hostport = hostport.rsplit('@').next().unwrap();
    let (h, p) = hostport.rsplit_once(':').unwrap();
    (h.to_string(), p.parse().unwrap())
}

#[test]
fn images_are_pinned_and_every_service_has_one_profile() {
    let known = ["postgres", "mysql", "mariadb", "tidb", "yugabyte"];
    for (name, s) in services() {
        let (repo, tag) = s
            .image
            .rsplit_once(':')
            .unwrap_or_else(|| panic!("{name}: image {} has no tag", s.image));
        assert!(!repo.is_empty(), "{name}");
        assert_ne!(tag, "latest", "{name}: {} is not pinned", s.image);
        assert!(
            tag.chars().any(|c| c.is_ascii_digit()) && tag.contains('.'),
            "{name}: {} is not pinned to a version",
            s.image
        );
        assert_eq!(s.profiles.len(), 1, "{name}: {:?}", s.profiles);
        assert!(
            known.contains(&s.profiles[0].as_str()),
            "{name}: {:?}",
            s.profiles
        );
    }
}

#[test]
fn published_ports_match_the_adapters_default_urls() {
    let all = services();
    // (profile, default URL, the port the server listens on inside).
    let want = [
        ("postgres", adapters::postgres::DEFAULT_URL, 5432),
        ("mysql", adapters::mysql::DEFAULT_URL, 3306),
        ("tidb", adapters::tidb::DEFAULT_URL, 4000),
        ("yugabyte", adapters::yugabyte::DEFAULT_URL, 5433),
    ];
    let mut hosts = std::collections::HashMap::new();
    for (profile, url, inside) in want {
        let (host, port) = host_port(url);
        assert_eq!(host, "127.0.0.1", "{url}");
        let found: Vec<&String> = all
            .iter()
            .filter(|(_, s)| s.profiles.iter().any(|p| p == profile))
            .filter(|(_, s)| s.ports.contains(&(port, inside)))
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "profile {profile} must publish {port}:{inside} for {url} (found {found:?})"
        );
        hosts.insert(profile, found[0].clone());
    }
    // No two services publish the same host port within a profile (they
    // could not start together).
    let mut seen = std::collections::HashSet::new();
    for (name, s) in &all {
        for (h, _) in &s.ports {
            assert!(
                seen.insert((s.profiles[0].clone(), *h)),
                "{name}: host port {h} published twice in {:?}",
                s.profiles
            );
        }
    }
    // Several endpoints: the clusters publish more than one SQL node.
    let tidbs: Vec<u16> = all
        .iter()
        .filter(|(n, _)| n.starts_with("tidb-"))
        .flat_map(|(_, s)| s.ports.iter().filter(|p| p.1 == 4000).map(|p| p.0))
        .collect();
    assert_eq!(tidbs, vec![4000, 4001]);
}

#[test]
fn the_clusters_have_their_nodes() {
    let all = services();
    let count = |prefix: &str, profile: &str| {
        all.iter()
            .filter(|(n, s)| n.starts_with(prefix) && s.profiles[0] == profile)
            .count()
    };
    assert_eq!(count("pd-", "tidb"), 3);
    assert_eq!(count("tikv-", "tidb"), 3);
    assert!((1..=2).contains(&count("tidb-", "tidb")));
    assert_eq!(count("yb-", "yugabyte"), 3);
    for (name, s) in &all {
        let repo = s.image.rsplit_once(':').unwrap().0;
        let expected = match s.profiles[0].as_str() {
            "postgres" => "postgres",
            "mysql" => "mysql",
            "mariadb" => "mariadb",
            "yugabyte" => "yugabytedb/yugabyte",
            "tidb" => match name.split('-').next().unwrap() {
                "pd" => "pingcap/pd",
                "tikv" => "pingcap/tikv",
                _ => "pingcap/tidb",
            },
            p => panic!("{p}"),
        };
        assert_eq!(repo, expected, "{name}");
    }
    // One version per cluster.
    let tags: std::collections::HashSet<&str> = all
        .values()
        .filter(|s| s.profiles[0] == "tidb")
        .map(|s| s.image.rsplit_once(':').unwrap().1)
        .collect();
    assert_eq!(tags.len(), 1, "{tags:?}");
}

/// `docker compose --profile tidb up --wait` means ready: every PD, TiKV
/// and TiDB node has a healthcheck, each waits for the healthy nodes it
/// needs, and TiKV gets the 82920 open files it refuses to start without.
#[test]
fn the_tidb_cluster_is_ready_when_compose_says_so() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docker-compose.yml");
    let text = std::fs::read_to_string(path).unwrap();
    let root = &YamlLoader::load_from_str(&text).unwrap()[0];
    let svcs = root["services"].as_hash().unwrap();
    let mut seen = 0;
    for (name, svc) in svcs {
        let name = name.as_str().unwrap();
        let kind = name.split('-').next().unwrap();
        if !["pd", "tikv", "tidb"].contains(&kind) {
            continue;
        }
        seen += 1;
        let test = svc["healthcheck"]["test"].as_vec();
        assert!(
            test.is_some_and(|t| !t.is_empty()),
            "{name}: no healthcheck"
        );
        let needs = match kind {
            "tikv" => "pd-",
            "tidb" => "tikv-",
            _ => continue,
        };
        let deps = svc["depends_on"]
            .as_hash()
            .unwrap_or_else(|| panic!("{name}"));
        assert!(!deps.is_empty(), "{name}");
        for (dep, cond) in deps {
            assert!(dep.as_str().unwrap().starts_with(needs), "{name}: {dep:?}");
            assert_eq!(
                cond["condition"].as_str(),
                Some("service_healthy"),
                "{name}"
            );
        }
        if kind == "tikv" {
            let nofile = &svc["ulimits"]["nofile"];
            for limit in ["soft", "hard"] {
                let n = nofile[limit].as_i64().unwrap_or(0);
                assert!(n >= 82920, "{name}: nofile {limit} {n}");
            }
        }
    }
    assert_eq!(seen, 8);
}

/// True when something accepts connections at 127.0.0.1:`port`.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(300),
    )
    .is_ok()
}

/// Runs `harness run ARGS` expecting a fast exit 2 whose message names
/// `url` and the compose command of `profile`.
fn fails_fast_with_a_hint(args: &[&str], url: &str, profile: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", &out]);
    let t = Instant::now();
    let o = harness(&all);
    let took = t.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
    assert!(took < Duration::from_secs(5), "{all:?} took {took:?}");
    assert!(err.contains(url), "{all:?}: {err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(
        err.contains(&format!("docker compose --profile {profile} up -d")),
        "{all:?}: {err}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "no run folder is left behind"
    );
}

#[test]
fn a_tidb_cluster_that_is_not_up_fails_fast_with_how_to_start_it() {
    // The headline command, as a user types it, when nothing runs.
    if !listening(4000) {
        fails_fast_with_a_hint(
            &["--db", "tidb", "--workload", "mini", "--level", "si"],
            adapters::tidb::DEFAULT_URL,
            "tidb",
        );
        // Even with the default level, which TiDB does not offer: the
        // missing cluster is told first.
        fails_fast_with_a_hint(&["--db", "tidb"], adapters::tidb::DEFAULT_URL, "tidb");
    }
    fails_fast_with_a_hint(
        &[
            "--db",
            "tidb",
            "--url",
            "mysql://root:hunter2@127.0.0.1:1/test",
            "--level",
            "si",
        ],
        "mysql://root:***@127.0.0.1:1/test",
        "tidb",
    );
}

#[test]
fn mysql_and_yugabyte_servers_that_are_not_up_fail_fast_with_how_to_start_them() {
    fails_fast_with_a_hint(
        &[
            "--db",
            "mysql",
            "--url",
            "mysql://root:hunter2@127.0.0.1:1/test",
        ],
        "mysql://root:***@127.0.0.1:1/test",
        "mysql",
    );
    fails_fast_with_a_hint(
        &[
            "--db",
            "yugabyte",
            "--url",
            "postgres://yugabyte:hunter2@127.0.0.1:1/yugabyte",
        ],
        "postgres://yugabyte:***@127.0.0.1:1/yugabyte",
        "yugabyte",
    );
    if !listening(5433) {
        fails_fast_with_a_hint(
            &["--db", "yugabyte", "--level", "si"],
            adapters::yugabyte::DEFAULT_URL,
            "yugabyte",
        );
    }
}
