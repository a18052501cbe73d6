//! Workload-specific steps of a run, around the clients: the prelude (a
//! transaction run alone before the clients start, TPC-C's initial
//! population, recorded as the history's first transaction), the end-of-run
//! check of the final database state (TPC-C's consistency conditions), and
//! the TPC-C scale flags.

use std::sync::Arc;
use std::time::Duration;

use adapters::{Database, Session};
use anyhow::{bail, Result};
use clap::Args;
use history::{Level, Status, Txn};
use tokio::sync::mpsc::UnboundedSender;
use workloads::tpcc::TpccScale;
use workloads::{EndCheck, EndReport, Plan, WorkloadConfig};

use super::runner::Shared;

/// Where `--help` lists the TPC-C flags.
const HEADING: &str = "TPC-C scale (--workload tpcc)";

/// A parser of one scale flag: a positive whole number that fits in 32
/// bits, with the flag's name in its error.
fn scale(flag: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |s| crate::cli::positive(s, flag, u64::from(u32::MAX)).map(|n| n as u32)
}

/// The TPC-C scale flags of `harness run` (`--workload tpcc` only).
#[derive(Args, Debug, Clone, Default)]
pub struct TpccArgs {
    /// Warehouses [default: 2].
    #[arg(long, value_name = "N", help_heading = HEADING, allow_negative_numbers = true, value_parser = scale("--warehouses"))]
    pub warehouses: Option<u32>,
    /// Districts per warehouse [default: 10].
    #[arg(long, value_name = "N", help_heading = HEADING, allow_negative_numbers = true, value_parser = scale("--districts"))]
    pub districts: Option<u32>,
    /// Customers per district [default: 30].
    #[arg(long, value_name = "N", help_heading = HEADING, allow_negative_numbers = true, value_parser = scale("--customers"))]
    pub customers: Option<u32>,
    /// Items, and stock rows per warehouse [default: 100].
    #[arg(long, value_name = "N", help_heading = HEADING, allow_negative_numbers = true, value_parser = scale("--items"))]
    pub items: Option<u32>,
    /// Initial orders per district, the last 30% undelivered [default: 3].
    #[arg(long, value_name = "N", help_heading = HEADING, allow_negative_numbers = true, value_parser = scale("--orders"))]
    pub orders: Option<u32>,
}

impl TpccArgs {
    /// Puts the flags given into `cfg`; refuses them for other workloads,
    /// where they would silently do nothing.
    pub fn apply(&self, workload: &str, cfg: &mut WorkloadConfig) -> Result<()> {
        let given = [
            ("--warehouses", self.warehouses),
            ("--districts", self.districts),
            ("--customers", self.customers),
            ("--items", self.items),
            ("--orders", self.orders),
        ];
        if workload.trim() != "tpcc" {
            if let Some((flag, _)) = given.iter().find(|(_, v)| v.is_some()) {
                bail!("{flag} applies to --workload tpcc only");
            }
            return Ok(());
        }
        let d = TpccScale::default();
        cfg.tpcc = TpccScale {
            warehouses: self.warehouses.unwrap_or(d.warehouses),
            districts: self.districts.unwrap_or(d.districts),
            customers: self.customers.unwrap_or(d.customers),
            items: self.items.unwrap_or(d.items),
            orders: self.orders.unwrap_or(d.orders),
        };
        // `keys` is reported with the run: for TPC-C, the largest id space
        // the key distribution draws from.
        cfg.keys = u64::from(cfg.tpcc.items);
        Ok(())
    }
}

/// Runs the workload's prelude on `session` before any client starts and
/// hands it to the recorder, so it becomes the first transaction of the
/// history (session 0, before everything in real time). The run stops if
/// it does not commit: nothing after it would make sense.
pub async fn prelude(
    shared: &Shared,
    session: &mut Box<dyn Session>,
    plan: &Plan,
    tx: &UnboundedSender<Txn>,
) -> Result<()> {
    let start = shared.clock.now();
    let out = session.run(plan, &shared.iso).await?;
    let end = shared.clock.now();
    let status = out.status;
    let error = out.error_text();
    let txn = Txn {
        id: 0,
        session: 0,
        status,
        start: Some(start),
        end: (status != Status::Info).then_some(end),
        error: error.as_deref().map(Into::into),
        ops: out.ops,
        dbts: out.dbts,
        kind: Some(plan.kind.into()),
        node: None,
    };
    // Recorded even when it failed, so the history shows what happened.
    let _ = tx.send(txn);
    if status != Status::Ok {
        bail!(
            "the {} transaction did not commit ({}): {}",
            plan.kind,
            status.as_str(),
            error.unwrap_or_default()
        );
    }
    Ok(())
}

/// Runs the workload's end-of-run check on a fresh connection. A check
/// that cannot run is a warning, not a failed run: the history is still
/// worth its verdict.
pub async fn end_check(
    db: &Arc<dyn Database>,
    check: EndCheck,
    session: u64,
    connect_timeout: Duration,
    warnings: &mut Vec<String>,
) -> Option<EndReport> {
    let session = match tokio::time::timeout(connect_timeout, db.connect(session)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            warnings.push(format!("the {} check could not connect: {e}", check.name()));
            return None;
        }
        Err(_) => {
            warnings.push(format!(
                "the {} check got no connection within {} s",
                check.name(),
                connect_timeout.as_secs_f64()
            ));
            return None;
        }
    };
    let mut session = session;
    let r = session.end_check(check).await;
    session.close().await;
    match r {
        Ok(r) => Some(r),
        Err(e) => {
            warnings.push(format!("the {} check did not run: {e}", check.name()));
            None
        }
    }
}

/// The exit code once the end-of-run check is known: a failed check is an
/// anomaly (1) when the level checked is snapshot isolation or stronger,
/// since TPC-C keeps its conditions under SI (Fekete et al. 2005); under
/// weaker levels an application may break them, so it is only reported.
pub fn exit_code(verdict_code: u8, level: Level, end: Option<&EndReport>) -> u8 {
    let failed = end.is_some_and(|r| !r.ok);
    if failed && verdict_code != 2 && checkers::lattice::implies(level, Level::Si) {
        1
    } else {
        verdict_code
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::ConditionResult;

    #[test]
    fn a_failed_condition_is_an_anomaly_from_si_up() {
        let mut c = ConditionResult::new(1, "W_YTD = sum(D_YTD)");
        c.record(Some("warehouse 1".into()));
        let bad = EndReport::new(EndCheck::TpccConsistency, vec![c]);
        let good = EndReport::new(EndCheck::TpccConsistency, vec![]);
        assert_eq!(exit_code(0, Level::Ser, Some(&bad)), 1);
        assert_eq!(exit_code(0, Level::Si, Some(&bad)), 1);
        assert_eq!(exit_code(3, Level::Sser, Some(&bad)), 1);
        assert_eq!(exit_code(0, Level::Rc, Some(&bad)), 0);
        assert_eq!(exit_code(0, Level::Ser, Some(&good)), 0);
        assert_eq!(exit_code(3, Level::Ser, None), 3);
    }

    #[test]
    fn scale_flags_belong_to_tpcc() {
        let a = TpccArgs {
            warehouses: Some(3),
            ..TpccArgs::default()
        };
        let mut cfg = WorkloadConfig::for_workload("tpcc").unwrap();
        a.apply("tpcc", &mut cfg).unwrap();
        assert_eq!(cfg.tpcc.warehouses, 3);
        assert_eq!(cfg.tpcc.districts, 10);
        assert_eq!(cfg.keys, 100, "the item count");
        let e = a.apply("mini", &mut cfg).unwrap_err().to_string();
        assert_eq!(e, "--warehouses applies to --workload tpcc only");
        TpccArgs::default().apply("mini", &mut cfg).unwrap();
    }
}
