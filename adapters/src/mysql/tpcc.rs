//! The MySQL dialect's TPC-C statements (MySQL, MariaDB, Galera, TiDB; see
//! [`crate::tpcc`] for the contract): parameters are `?`, every column
//! BIGINT, InnoDB tables; SUM of BIGINT is DECIMAL, so it is cast to
//! SIGNED.

use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row, Value};

use super::MyConn;
use crate::error::{DbError, ErrorClass};
use crate::tpcc::{Dialect, Placeholders, Texts, TpccConn, TpccStmt};

/// The MySQL dialect of the shared texts ([`crate::tpcc::Texts`]).
static TEXTS: Texts = Texts::new(Dialect {
    placeholders: Placeholders::Question,
    int: "BIGINT",
    cast_int: "SIGNED",
    table_options: " ENGINE=InnoDB",
    prologue: &[],
});

/// The statements that drop and create the eight tables.
pub fn setup() -> &'static [&'static str] {
    TEXTS.setup()
}

/// The text of every statement.
pub fn sql(stmt: TpccStmt) -> &'static str {
    TEXTS.sql(stmt)
}

/// The parameters, bound as integers.
fn params(values: &[i64]) -> Params {
    if values.is_empty() {
        Params::Empty
    } else {
        Params::Positional(values.iter().map(|&v| Value::Int(v)).collect())
    }
}

/// A row of 64-bit integers, or why a value is not one.
fn ints(stmt: TpccStmt, row: Row) -> Result<Vec<i64>, DbError> {
    row.unwrap()
        .into_iter()
        .map(|v| {
            mysql_async::from_value_opt::<i64>(v).map_err(|e| DbError {
                class: ErrorClass::Statement,
                code: "tpcc-bad-row".into(),
                message: format!("{stmt:?} returned a value that is not a BIGINT: {:?}", e.0),
            })
        })
        .collect()
}

#[async_trait]
impl TpccConn for MyConn {
    async fn query(&mut self, stmt: TpccStmt, values: &[i64]) -> Result<Vec<Vec<i64>>, DbError> {
        let text = self.sql.get(sql(stmt));
        let r = self.conn()?.exec::<Row, _, _>(&*text, params(values)).await;
        let rows = r.map_err(|e| self.err(&e))?;
        rows.into_iter().map(|row| ints(stmt, row)).collect()
    }

    async fn execute(&mut self, stmt: TpccStmt, values: &[i64]) -> Result<u64, DbError> {
        self.exec_drop(sql(stmt), params(values)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::check_dialect;

    #[test]
    fn every_statement_has_its_placeholders() {
        let problems = check_dialect(sql, Placeholders::Question);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn tables_are_innodb_and_sums_are_signed() {
        let creates: Vec<&str> = setup()
            .iter()
            .copied()
            .filter(|s| s.starts_with("CREATE TABLE"))
            .collect();
        assert_eq!(creates.len(), 8);
        assert!(creates.iter().all(|s| s.ends_with(" ENGINE=InnoDB")));
        assert!(sql(TpccStmt::TotalsOrders).contains("CAST(SUM(o_ol_cnt) AS SIGNED)"));
        assert!(!sql(TpccStmt::StockLevel).contains('$'));
    }
}
