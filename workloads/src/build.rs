//! From a workload's name and configuration to the workload: the one place
//! that knows every workload, so that none of them depends on another.

use crate::config::{unknown, WorkloadConfig, WORKLOADS};
use crate::error::WorkloadError;
use crate::{append, blindw, mini, range, tpcc, Workload};

/// The variants a workload accepts, default first, for `--help` and errors.
pub fn variants(name: &str) -> Result<&'static [&'static str], WorkloadError> {
    match name {
        "mini" => Ok(&[]),
        "blindw" => Ok(blindw::VARIANTS),
        "range" => Ok(range::VARIANTS),
        "append" | "tpcc" => Ok(&[]),
        _ => Err(unknown(name)),
    }
}

/// Builds the named workload, refusing bad names, variants and settings up
/// front so a run never starts on a configuration that cannot work.
pub fn build(name: &str, cfg: &WorkloadConfig) -> Result<Box<dyn Workload>, WorkloadError> {
    let name = name.trim();
    if !WORKLOADS.contains(&name) {
        return Err(unknown(name));
    }
    cfg.validate(name)?;
    Ok(match name {
        "mini" => Box::new(mini::Mini::new(cfg)?),
        "blindw" => Box::new(blindw::BlindW::new(cfg)?),
        "range" => Box::new(range::Range::new(cfg)?),
        "append" => Box::new(append::Append::new(cfg)?),
        "tpcc" => Box::new(tpcc::Tpcc::new(cfg)?),
        _ => unreachable!("checked against WORKLOADS above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::*;
    use crate::keys::KeyDist;

    #[test]
    fn unknown_names_and_variants_list_the_valid_ones() {
        let cfg = WorkloadConfig::default();
        let e = build("tpcx", &cfg).err().unwrap().to_string();
        assert_eq!(
            e,
            "unknown workload `tpcx` (valid: mini, blindw, range, append, tpcc)"
        );
        let cfg = WorkloadConfig {
            variant: Some("rx".into()),
            ..WorkloadConfig::default()
        };
        let e = build("blindw", &cfg).err().unwrap().to_string();
        assert_eq!(
            e,
            "unknown variant `rx` for workload `blindw` (valid: rw, rm, w, mixed)"
        );
        let e = build("range", &cfg).err().unwrap().to_string();
        assert!(e.contains("(valid: b, rqh, idh)"), "{e}");
        let e = build("mini", &cfg).err().unwrap().to_string();
        assert_eq!(e, "workload `mini` has no variants (got `rx`)");
    }

    #[test]
    fn bad_settings_are_refused() {
        let cases = [
            WorkloadConfig {
                keys: 0,
                ..WorkloadConfig::default()
            },
            WorkloadConfig {
                ops_per_txn: 0,
                ..WorkloadConfig::default()
            },
            WorkloadConfig {
                read_ratio: Some(1.5),
                ..WorkloadConfig::default()
            },
            WorkloadConfig {
                clients: 0,
                ..WorkloadConfig::default()
            },
            WorkloadConfig {
                dist: KeyDist::Zipf { theta: -1.0 },
                ..WorkloadConfig::default()
            },
        ];
        for cfg in cases {
            for name in WORKLOADS {
                assert!(build(name, &cfg).is_err(), "{name} accepted {cfg:?}");
            }
        }
        let rr = WorkloadConfig {
            read_ratio: Some(0.5),
            ..WorkloadConfig::default()
        };
        let e = build("range", &rr).err().unwrap().to_string();
        assert!(e.contains("read_ratio"), "{e}");
    }

    #[test]
    fn every_workload_builds_with_its_defaults_and_variants() {
        for name in WORKLOADS {
            let cfg = WorkloadConfig::for_workload(name).unwrap();
            let w = build(name, &cfg).unwrap();
            assert_eq!(w.name(), *name);
            for v in variants(name).unwrap() {
                let cfg = WorkloadConfig {
                    variant: Some(v.to_string()),
                    ..cfg.clone()
                };
                build(name, &cfg).unwrap();
            }
        }
        assert!(WorkloadConfig::for_workload("nope").is_err());
        assert!(variants("nope").is_err());
    }
}
