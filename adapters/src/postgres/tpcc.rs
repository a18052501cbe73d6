//! PostgreSQL's TPC-C statements (see [`crate::tpcc`] for the contract):
//! parameters are `$N`, every column BIGINT (sums cast back from NUMERIC).
//! YugabyteDB's YSQL shares them through the same connection type.

use async_trait::async_trait;
use tokio_postgres::types::ToSql;

use super::PgConn;
use crate::error::DbError;
use crate::tpcc::{Dialect, Placeholders, Texts, TpccConn, TpccStmt};

/// PostgreSQL's dialect of the shared texts ([`crate::tpcc::Texts`]).
static TEXTS: Texts = Texts::new(Dialect {
    placeholders: Placeholders::Dollar,
    int: "BIGINT",
    cast_int: "BIGINT",
    table_options: "",
    prologue: &["SET lock_timeout = '10s'"],
});

/// The statements that drop and create the eight tables.
pub fn setup() -> &'static [&'static str] {
    TEXTS.setup()
}

/// The text of every statement.
pub fn sql(stmt: TpccStmt) -> &'static str {
    TEXTS.sql(stmt)
}

#[async_trait]
impl TpccConn for PgConn {
    async fn query(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<Vec<Vec<i64>>, DbError> {
        let st = self.stmt(sql(stmt)).await?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = self
            .client
            .query(&st, &refs)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| r.try_get::<_, i64>(i)).collect())
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(|e| self.err(e))
    }

    async fn execute(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<u64, DbError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.run_prepared(sql(stmt), &refs).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::check_dialect;

    #[test]
    fn every_statement_has_its_placeholders() {
        assert_eq!(
            check_dialect(sql, Placeholders::Dollar),
            Vec::<String>::new()
        );
    }
}
