//! SQLite's TPC-C statements (see [`crate::tpcc`] for the contract):
//! parameters are `?N`, every column INTEGER.

use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Row};

use super::{classify, SqliteConn};
use crate::error::DbError;
use crate::tpcc::{Dialect, Placeholders, Texts, TpccConn, TpccStmt};

/// SQLite's dialect of the shared texts ([`crate::tpcc::Texts`]).
static TEXTS: Texts = Texts::new(Dialect {
    placeholders: Placeholders::QuestionNumbered,
    int: "INTEGER",
    cast_int: "INTEGER",
    table_options: "",
    prologue: &[],
});

/// The script that drops and creates the eight tables.
pub fn setup() -> &'static str {
    TEXTS.script()
}

/// The text of every statement.
pub fn sql(stmt: TpccStmt) -> &'static str {
    TEXTS.sql(stmt)
}

#[async_trait]
impl TpccConn for SqliteConn {
    async fn query(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<Vec<Vec<i64>>, DbError> {
        let mut q = sqlx::query(AssertSqlSafe(self.sql.get(sql(stmt))));
        for p in params {
            q = q.bind(*p);
        }
        let rows = q.fetch_all(self.c()?).await.map_err(|e| classify(&e))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| r.try_get::<i64, _>(i)).collect())
            .collect::<Result<_, sqlx::Error>>()
            .map_err(|e| classify(&e))
    }

    async fn execute(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<u64, DbError> {
        let mut q = sqlx::query(AssertSqlSafe(self.sql.get(sql(stmt))));
        for p in params {
            q = q.bind(*p);
        }
        let r = q.execute(self.c()?).await;
        r.map(|r| r.rows_affected()).map_err(|e| classify(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::check_dialect;

    #[test]
    fn every_statement_has_its_placeholders() {
        assert_eq!(
            check_dialect(sql, Placeholders::QuestionNumbered),
            Vec::<String>::new()
        );
    }
}
