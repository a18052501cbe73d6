//! The plan executor shared by the SQL adapters: BEGIN, one statement per
//! step, COMMIT, recording what the database returned, and turning the first
//! error into the transaction's fate.
//!
//! Each adapter implements [`Conn`], the handful of parameterized statements
//! the executor needs, with its own SQL and error classification.

use std::sync::Mutex;

use async_trait::async_trait;
use history::{DbTs, Key, Op, Status};
use workloads::{Plan, Step};

use crate::error::{AdapterError, DbError, ErrorClass, Limits, Phase};
use crate::{Isolation, Outcome, Session};

/// A register row as read: its value and whether it is a tombstone.
pub type Row = (i64, bool);

/// The statements of one connection, each one parameterized statement.
#[async_trait]
pub trait Conn: Send {
    /// Opens a transaction with `iso.begin`.
    async fn begin(&mut self, iso: &Isolation) -> Result<(), DbError>;
    /// Opens the transaction of a plan; `read_only` when none of its steps
    /// writes (a database may open those differently). Default: `begin`.
    async fn begin_plan(&mut self, iso: &Isolation, read_only: bool) -> Result<(), DbError> {
        let _ = read_only;
        self.begin(iso).await
    }
    /// Reads register `k`; `None` when there is no row.
    async fn read(&mut self, k: i64) -> Result<Option<Row>, DbError>;
    /// Inserts a live row; fails with a unique violation if one exists.
    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError>;
    /// Turns a tombstone at `k` into a live row with `v`; false when no
    /// tombstone was there any more.
    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError>;
    /// Writes `v` (or a tombstone carrying `v`) to `k`, inserting or
    /// updating.
    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError>;
    /// Every row with `lo <= k <= hi`, tombstones included, by key.
    async fn range(&mut self, lo: i64, hi: i64) -> Result<Vec<(i64, i64)>, DbError>;
    /// Appends `v` to the list at `k`, creating it if needed.
    async fn append(&mut self, k: i64, v: i64) -> Result<(), DbError>;
    /// The whole list at `k` (empty when there is none).
    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError>;
    /// Commits.
    async fn commit(&mut self) -> Result<(), DbError>;
    /// Rolls back; a "no transaction" complaint is not a connection error.
    async fn rollback(&mut self) -> Result<(), DbError>;
    /// Closes the connection (best effort).
    async fn close(&mut self);
    /// The database's own timestamps of the transaction that just
    /// committed, where it reports them (TiDB); asked right after COMMIT.
    async fn committed_dbts(&mut self) -> Option<DbTs> {
        None
    }
    /// The connection's TPC-C statements, for plans with a
    /// [`Step::Tpcc`]; `None` (the default) when the adapter has none yet.
    /// See [`crate::tpcc`] for how to add them.
    fn tpcc(&mut self) -> Option<&mut dyn crate::tpcc::TpccConn> {
        None
    }
}

/// A [`Session`] over any [`Conn`].
pub struct SqlSession<C: Conn> {
    conn: C,
    limits: Limits,
}

impl<C: Conn> SqlSession<C> {
    /// A session whose statements are abandoned after their timeout, or
    /// when the run gives up on them.
    pub fn new(conn: C, limits: Limits) -> Self {
        SqlSession { conn, limits }
    }
}

#[async_trait]
impl<C: Conn> Session for SqlSession<C> {
    async fn run(&mut self, plan: &Plan, iso: &Isolation) -> Result<Outcome, AdapterError> {
        execute(&mut self.conn, plan, iso, &self.limits).await
    }

    async fn close(mut self: Box<Self>) {
        self.conn.close().await;
    }

    async fn end_check(
        &mut self,
        check: workloads::EndCheck,
    ) -> Result<workloads::EndReport, AdapterError> {
        crate::tpcc::end_check(self.conn.tpcc(), check, self.limits.statement).await
    }
}

/// The integer behind a key; the SQL tables are keyed by BIGINT.
fn int_key(k: &Key) -> Result<i64, AdapterError> {
    match k {
        Key::Int(v) => Ok(*v),
        Key::Str(s) => Err(AdapterError::Unsupported(format!(
            "key {s:?} is a string; the SQL tables have BIGINT keys"
        ))),
    }
}

fn check_keys(plan: &Plan) -> Result<(), AdapterError> {
    for s in &plan.steps {
        match s {
            Step::Read(k)
            | Step::Write(k, _)
            | Step::Insert(k, _)
            | Step::Delete(k, _)
            | Step::Append(k, _)
            | Step::ReadList(k) => {
                int_key(k)?;
            }
            Step::RangeRead(lo, hi) => {
                int_key(lo)?;
                int_key(hi)?;
            }
            Step::Tpcc(_) => {}
        }
    }
    Ok(())
}

/// Refuses, before anything is sent, a plan with TPC-C steps on a
/// connection without TPC-C statements.
fn check_supported<C: Conn + ?Sized>(conn: &mut C, plan: &Plan) -> Result<(), AdapterError> {
    let tpcc = plan.steps.iter().any(|s| matches!(s, Step::Tpcc(_)));
    if tpcc && conn.tpcc().is_none() {
        return Err(AdapterError::Unsupported(
            "this database has no TPC-C statements yet (the tpcc workload runs on \
             sqlite, postgres, mysql, tidb and memdb)"
                .into(),
        ));
    }
    Ok(())
}

/// Runs `plan` as one transaction on `conn`.
pub async fn execute<C: Conn + ?Sized>(
    conn: &mut C,
    plan: &Plan,
    iso: &Isolation,
    limits: &Limits,
) -> Result<Outcome, AdapterError> {
    check_keys(plan)?;
    check_supported(conn, plan)?;
    let mut ops = Vec::with_capacity(plan.steps.len() + 1);
    let read_only = plan
        .steps
        .iter()
        .all(|s| matches!(s, Step::Read(_) | Step::RangeRead(..) | Step::ReadList(_)));
    if let Err(e) = limits.timed(conn.begin_plan(iso, read_only)).await {
        return Ok(abort(conn, ops, e, Phase::Begin, limits).await);
    }
    for step in &plan.steps {
        if let Err(e) = run_step(conn, step, &mut ops, limits).await {
            return Ok(abort(conn, ops, e, Phase::Statement, limits).await);
        }
    }
    match limits.timed(conn.commit()).await {
        Ok(()) => {
            // The transaction committed whatever this answers.
            let dbts = tokio::time::timeout(limits.statement, conn.committed_dbts())
                .await
                .ok()
                .flatten();
            Ok(Outcome {
                ops,
                status: Status::Ok,
                error: None,
                broken: false,
                dbts,
            })
        }
        Err(e) => Ok(abort(conn, ops, e, Phase::Commit, limits).await),
    }
}

/// Ends a transaction that hit `e`: its fate from the class and phase, and a
/// best-effort ROLLBACK unless the connection is gone.
async fn abort<C: Conn + ?Sized>(
    conn: &mut C,
    ops: Vec<Op>,
    e: DbError,
    phase: Phase,
    limits: &Limits,
) -> Outcome {
    let status = e.class.status(phase);
    let mut broken = e.class.breaks_connection();
    if !broken {
        if let Err(r) = limits.timed(conn.rollback()).await {
            broken = r.class.breaks_connection();
        }
    }
    Outcome {
        ops,
        status,
        error: Some(e),
        broken,
        dbts: None,
    }
}

/// Runs one step, pushing its op(s). A write is pushed before its statement
/// runs, so a failed write still shows what was attempted; a read is pushed
/// only with the value the database returned.
async fn run_step<C: Conn + ?Sized>(
    conn: &mut C,
    step: &Step,
    ops: &mut Vec<Op>,
    limits: &Limits,
) -> Result<(), DbError> {
    // Keys were checked before BEGIN.
    let ik = |k: &Key| int_key(k).unwrap_or_default();
    match step {
        Step::Read(k) => {
            let row = limits.timed(conn.read(ik(k))).await?;
            ops.push(Op::Read {
                key: k.clone(),
                value: row.map(|(v, _)| v),
            });
        }
        Step::Write(k, v) => {
            ops.push(Op::Write {
                key: k.clone(),
                value: *v,
            });
            limits.timed(conn.upsert(ik(k), *v, false)).await?;
        }
        Step::Insert(k, v) => {
            let row = limits.timed(conn.read(ik(k))).await?;
            ops.push(Op::Read {
                key: k.clone(),
                value: row.map(|(v, _)| v),
            });
            let insert = Op::Insert {
                key: k.clone(),
                value: *v,
            };
            match row {
                Some((_, false)) => {} // live row: the insert is skipped
                None => {
                    ops.push(insert);
                    limits.timed(conn.insert(ik(k), *v)).await?;
                }
                Some((_, true)) => {
                    ops.push(insert);
                    if !limits.timed(conn.revive(ik(k), *v)).await? {
                        ops.pop(); // someone revived it first: nothing written
                    }
                }
            }
        }
        Step::Delete(k, v) => {
            ops.push(Op::Delete {
                key: k.clone(),
                value: *v,
            });
            limits.timed(conn.upsert(ik(k), *v, true)).await?;
        }
        Step::RangeRead(lo, hi) => {
            let rows = limits.timed(conn.range(ik(lo), ik(hi))).await?;
            ops.push(Op::RangeRead {
                lo: lo.clone(),
                hi: hi.clone(),
                rows: Box::new(rows.into_iter().map(|(k, v)| (Key::Int(k), v)).collect()),
            });
        }
        Step::Append(k, v) => {
            ops.push(Op::Append {
                key: k.clone(),
                value: *v,
            });
            limits.timed(conn.append(ik(k), *v)).await?;
        }
        Step::ReadList(k) => {
            let values = limits.timed(conn.read_list(ik(k))).await?;
            ops.push(Op::ReadList {
                key: k.clone(),
                values: Some(values),
            });
        }
        Step::Tpcc(t) => match conn.tpcc() {
            Some(c) => crate::tpcc::run(c, t, ops, limits).await?,
            // Checked before BEGIN; kept as an error rather than a panic.
            None => {
                return Err(DbError {
                    class: ErrorClass::Statement,
                    code: "unsupported".into(),
                    message: "this connection has no TPC-C statements".into(),
                })
            }
        },
    }
    Ok(())
}

/// Things an adapter skipped or could not do, each kept once, for
/// [`crate::Database::warnings`].
#[derive(Debug, Default)]
pub struct Notes(Mutex<Vec<String>>);

impl Notes {
    /// Records `note` unless it was recorded before.
    pub fn add(&self, note: impl Into<String>) {
        let note = note.into();
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !v.contains(&note) {
            v.push(note);
        }
    }

    /// Everything recorded, in order.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Parses a list stored as comma-separated integers.
pub fn parse_list(text: &str) -> Result<Vec<i64>, DbError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|p| {
            p.trim().parse::<i64>().map_err(|_| DbError {
                class: ErrorClass::Statement,
                code: "bad-list".into(),
                message: format!("list element {p:?} is not an integer"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use workloads::tpcc::{OrderStatus, TpccTxn};
    use workloads::EndCheck;

    /// A connection without TPC-C statements that notes whether anything
    /// was sent.
    #[derive(Default)]
    struct NoTpcc {
        sent: bool,
    }

    fn nope<T>(c: &mut NoTpcc) -> Result<T, DbError> {
        c.sent = true;
        Err(DbError {
            class: ErrorClass::Statement,
            code: "x".into(),
            message: "unused".into(),
        })
    }

    #[async_trait]
    impl Conn for NoTpcc {
        async fn begin(&mut self, _: &Isolation) -> Result<(), DbError> {
            nope(self)
        }
        async fn read(&mut self, _: i64) -> Result<Option<Row>, DbError> {
            nope(self)
        }
        async fn insert(&mut self, _: i64, _: i64) -> Result<(), DbError> {
            nope(self)
        }
        async fn revive(&mut self, _: i64, _: i64) -> Result<bool, DbError> {
            nope(self)
        }
        async fn upsert(&mut self, _: i64, _: i64, _: bool) -> Result<(), DbError> {
            nope(self)
        }
        async fn range(&mut self, _: i64, _: i64) -> Result<Vec<(i64, i64)>, DbError> {
            nope(self)
        }
        async fn append(&mut self, _: i64, _: i64) -> Result<(), DbError> {
            nope(self)
        }
        async fn read_list(&mut self, _: i64) -> Result<Vec<i64>, DbError> {
            nope(self)
        }
        async fn commit(&mut self) -> Result<(), DbError> {
            nope(self)
        }
        async fn rollback(&mut self) -> Result<(), DbError> {
            nope(self)
        }
        async fn close(&mut self) {}
    }

    #[tokio::test]
    async fn a_database_without_tpcc_statements_refuses_before_sending_anything() {
        let mut c = NoTpcc::default();
        let plan = Plan {
            kind: "order-status",
            steps: vec![Step::Tpcc(Box::new(TpccTxn::OrderStatus(OrderStatus {
                w: 1,
                d: 1,
                c: 1,
            })))],
        };
        let iso = Isolation {
            name: "serializable",
            begin: "BEGIN",
        };
        let limits = Limits {
            statement: Duration::from_secs(1),
            give_up: crate::GiveUp::never(),
        };
        let e = execute(&mut c, &plan, &iso, &limits).await.unwrap_err();
        assert!(matches!(e, AdapterError::Unsupported(_)), "{e}");
        assert!(e.to_string().contains("no TPC-C statements"), "{e}");
        assert!(!c.sent, "nothing may be sent");
        let e = crate::tpcc::end_check(c.tpcc(), EndCheck::TpccConsistency, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("no consistency check"), "{e}");
    }

    #[test]
    fn lists_parse() {
        assert_eq!(parse_list("").unwrap(), Vec::<i64>::new());
        assert_eq!(parse_list("1,2,-3").unwrap(), vec![1, 2, -3]);
        assert!(parse_list("1,x").is_err());
    }

    #[test]
    fn string_keys_are_refused_before_anything_runs() {
        let plan = Plan {
            kind: "t",
            steps: vec![Step::Read(Key::Int(1)), Step::Write(Key::str("x"), 1)],
        };
        let e = check_keys(&plan).unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
    }
}
