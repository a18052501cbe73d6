//! End-of-run checks: conditions on the database's *final state* that a
//! workload promises when every transaction ran correctly (TPC-C's
//! consistency conditions). The history cannot show them, since they are
//! about the data rather than the order of reads and writes, so the runner
//! asks the database once the clients stop ([`crate::Workload::end_check`])
//! and reports the result beside the isolation verdict.

use std::fmt;

use serde::Serialize;

/// A check of the database's final state that a workload asks the runner
/// to make after the clients stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndCheck {
    /// TPC-C's consistency conditions 1–4 (Clause 3.3.2), see
    /// [`crate::tpcc::check_consistency`].
    TpccConsistency,
}

impl EndCheck {
    /// The check's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            EndCheck::TpccConsistency => "tpcc-consistency",
        }
    }
}

/// At most this many violations are listed per condition; the rest are
/// only counted.
pub const MAX_SHOWN: usize = 5;

/// The result of one end-of-run check, as `report.json` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndReport {
    /// The check's name, e.g. `tpcc-consistency`.
    pub check: String,
    /// True when every condition holds.
    pub ok: bool,
    /// Each condition with its result.
    pub conditions: Vec<ConditionResult>,
}

/// One condition of an end-of-run check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConditionResult {
    /// The condition's number in its source (TPC-C Clause 3.3.2.N).
    pub id: u32,
    /// What it states, e.g. `W_YTD = sum(D_YTD)`.
    pub name: String,
    /// True when it holds everywhere it was checked.
    pub ok: bool,
    /// How many units (warehouses, districts) it was checked on.
    pub checked: u64,
    /// How many units violate it.
    pub violation_count: u64,
    /// The first few violations, each naming the unit and the numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
}

impl ConditionResult {
    /// A condition with nothing checked yet.
    pub fn new(id: u32, name: &str) -> ConditionResult {
        ConditionResult {
            id,
            name: name.to_string(),
            ok: true,
            checked: 0,
            violation_count: 0,
            violations: Vec::new(),
        }
    }

    /// Counts one unit checked, and its violation when `why` is given.
    pub fn record(&mut self, why: Option<String>) {
        self.checked += 1;
        if let Some(w) = why {
            self.ok = false;
            self.violation_count += 1;
            if self.violations.len() < MAX_SHOWN {
                self.violations.push(w);
            }
        }
    }
}

impl EndReport {
    /// A report from its conditions; `ok` when all of them hold.
    pub fn new(check: EndCheck, conditions: Vec<ConditionResult>) -> EndReport {
        EndReport {
            check: check.name().to_string(),
            ok: conditions.iter().all(|c| c.ok),
            conditions,
        }
    }
}

impl fmt::Display for EndReport {
    /// A few lines for the terminal: the tally, then each failed condition
    /// with its first violations.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.conditions.iter().filter(|c| c.ok).count();
        writeln!(
            f,
            "{}: {} of {} conditions hold{}",
            self.check,
            held,
            self.conditions.len(),
            if self.ok { "" } else { " (FAILED)" }
        )?;
        for c in self.conditions.iter().filter(|c| !c.ok) {
            writeln!(
                f,
                "  condition {} failed ({}) on {} of {}:",
                c.id, c.name, c.violation_count, c.checked
            )?;
            for v in &c.violations {
                writeln!(f, "    {v}")?;
            }
            if c.violation_count > c.violations.len() as u64 {
                writeln!(
                    f,
                    "    ... {} more",
                    c.violation_count - c.violations.len() as u64
                )?;
            }
        }
        Ok(())
    }
}
