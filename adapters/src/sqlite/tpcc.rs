//! SQLite's TPC-C statements (see [`crate::tpcc`] for the contract):
//! parameters are `?N`, every column INTEGER.

use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Row};

use super::{classify, SqliteConn};
use crate::error::DbError;
use crate::tpcc::{TpccConn, TpccStmt};

/// Drops and creates the eight tables.
pub const SETUP: &str = "\
DROP TABLE IF EXISTS tpcc_warehouse; DROP TABLE IF EXISTS tpcc_district;
DROP TABLE IF EXISTS tpcc_customer; DROP TABLE IF EXISTS tpcc_item;
DROP TABLE IF EXISTS tpcc_stock; DROP TABLE IF EXISTS tpcc_orders;
DROP TABLE IF EXISTS tpcc_new_order; DROP TABLE IF EXISTS tpcc_order_line;
CREATE TABLE tpcc_warehouse (w_id INTEGER NOT NULL, w_tax INTEGER NOT NULL,
  w_ytd INTEGER NOT NULL, wid INTEGER NOT NULL, PRIMARY KEY (w_id));
CREATE TABLE tpcc_district (d_w_id INTEGER NOT NULL, d_id INTEGER NOT NULL,
  d_tax INTEGER NOT NULL, d_ytd INTEGER NOT NULL, d_next_o_id INTEGER NOT NULL,
  wid INTEGER NOT NULL, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE tpcc_customer (c_w_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL,
  c_id INTEGER NOT NULL, c_discount INTEGER NOT NULL, c_balance INTEGER NOT NULL,
  c_ytd_payment INTEGER NOT NULL, c_payment_cnt INTEGER NOT NULL,
  c_delivery_cnt INTEGER NOT NULL, wid INTEGER NOT NULL, PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE TABLE tpcc_item (i_id INTEGER NOT NULL, i_price INTEGER NOT NULL,
  wid INTEGER NOT NULL, PRIMARY KEY (i_id));
CREATE TABLE tpcc_stock (s_w_id INTEGER NOT NULL, s_i_id INTEGER NOT NULL,
  s_quantity INTEGER NOT NULL, s_ytd INTEGER NOT NULL, s_order_cnt INTEGER NOT NULL,
  s_remote_cnt INTEGER NOT NULL, wid INTEGER NOT NULL, PRIMARY KEY (s_w_id, s_i_id));
CREATE TABLE tpcc_orders (o_w_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL,
  o_id INTEGER NOT NULL, o_c_id INTEGER NOT NULL, o_carrier_id INTEGER NOT NULL,
  o_ol_cnt INTEGER NOT NULL, o_all_local INTEGER NOT NULL, wid INTEGER NOT NULL,
  PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX tpcc_orders_customer ON tpcc_orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE tpcc_new_order (no_w_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL,
  no_o_id INTEGER NOT NULL, wid INTEGER NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE tpcc_order_line (ol_w_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL,
  ol_o_id INTEGER NOT NULL, ol_number INTEGER NOT NULL, ol_i_id INTEGER NOT NULL,
  ol_supply_w_id INTEGER NOT NULL, ol_quantity INTEGER NOT NULL, ol_amount INTEGER NOT NULL,
  ol_delivery_d INTEGER NOT NULL, wid INTEGER NOT NULL,
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));";

/// The text of every statement.
pub fn sql(stmt: TpccStmt) -> &'static str {
    use TpccStmt::*;
    match stmt {
        InsertWarehouse => "INSERT INTO tpcc_warehouse (w_id, w_tax, w_ytd, wid) VALUES (?1, ?2, ?3, ?4)",
        InsertDistrict => "INSERT INTO tpcc_district (d_w_id, d_id, d_tax, d_ytd, d_next_o_id, wid) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        InsertCustomer => "INSERT INTO tpcc_customer (c_w_id, c_d_id, c_id, c_discount, c_balance, \
             c_ytd_payment, c_payment_cnt, c_delivery_cnt, wid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        InsertItem => "INSERT INTO tpcc_item (i_id, i_price, wid) VALUES (?1, ?2, ?3)",
        InsertStock => "INSERT INTO tpcc_stock (s_w_id, s_i_id, s_quantity, s_ytd, s_order_cnt, \
             s_remote_cnt, wid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        InsertOrder => "INSERT INTO tpcc_orders (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, \
             o_all_local, wid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        InsertNewOrder => "INSERT INTO tpcc_new_order (no_w_id, no_d_id, no_o_id, wid) VALUES (?1, ?2, ?3, ?4)",
        InsertOrderLine => "INSERT INTO tpcc_order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, \
             ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d, wid) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        Warehouse => "SELECT w_tax, w_ytd, wid FROM tpcc_warehouse WHERE w_id = ?1",
        District => "SELECT d_tax, d_ytd, d_next_o_id, wid FROM tpcc_district \
             WHERE d_w_id = ?1 AND d_id = ?2",
        Customer => "SELECT c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, wid \
             FROM tpcc_customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        Item => "SELECT i_price, wid FROM tpcc_item WHERE i_id = ?1",
        Stock => "SELECT s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid FROM tpcc_stock \
             WHERE s_w_id = ?1 AND s_i_id = ?2",
        Order => "SELECT o_c_id, o_carrier_id, o_ol_cnt, wid FROM tpcc_orders \
             WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
        LastOrder => "SELECT o_id, o_carrier_id, o_ol_cnt, wid FROM tpcc_orders \
             WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_c_id = ?3 ORDER BY o_id DESC LIMIT 1",
        OldestNewOrder => "SELECT no_o_id, wid FROM tpcc_new_order \
             WHERE no_w_id = ?1 AND no_d_id = ?2 ORDER BY no_o_id LIMIT 1",
        OrderLines => "SELECT ol_number, ol_i_id, ol_amount, ol_delivery_d, wid FROM tpcc_order_line \
             WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3 ORDER BY ol_number",
        StockLevel => "SELECT ol.ol_o_id, ol.ol_number, ol.wid, ol.ol_i_id, \
             COALESCE(s.s_quantity, 0), COALESCE(s.wid, 0) \
             FROM tpcc_order_line ol LEFT JOIN tpcc_stock s \
             ON s.s_w_id = ol.ol_w_id AND s.s_i_id = ol.ol_i_id \
             WHERE ol.ol_w_id = ?1 AND ol.ol_d_id = ?2 AND ol.ol_o_id >= ?3 AND ol.ol_o_id < ?4 \
             ORDER BY ol.ol_o_id, ol.ol_number",
        SetWarehouseYtd => "UPDATE tpcc_warehouse SET w_ytd = ?1, wid = ?2 WHERE w_id = ?3",
        SetDistrictYtd => "UPDATE tpcc_district SET d_ytd = ?1, wid = ?2 WHERE d_w_id = ?3 AND d_id = ?4",
        SetDistrictNextOId => "UPDATE tpcc_district SET d_next_o_id = ?1, wid = ?2 \
             WHERE d_w_id = ?3 AND d_id = ?4",
        SetCustomerPayment => "UPDATE tpcc_customer SET c_balance = ?1, c_ytd_payment = ?2, \
             c_payment_cnt = ?3, wid = ?4 WHERE c_w_id = ?5 AND c_d_id = ?6 AND c_id = ?7",
        SetCustomerDelivery => "UPDATE tpcc_customer SET c_balance = ?1, c_delivery_cnt = ?2, wid = ?3 \
             WHERE c_w_id = ?4 AND c_d_id = ?5 AND c_id = ?6",
        SetStock => "UPDATE tpcc_stock SET s_quantity = ?1, s_ytd = ?2, s_order_cnt = ?3, \
             s_remote_cnt = ?4, wid = ?5 WHERE s_w_id = ?6 AND s_i_id = ?7",
        SetOrderCarrier => "UPDATE tpcc_orders SET o_carrier_id = ?1, wid = ?2 \
             WHERE o_w_id = ?3 AND o_d_id = ?4 AND o_id = ?5",
        SetOrderLineDelivery => "UPDATE tpcc_order_line SET ol_delivery_d = ?1, wid = ?2 \
             WHERE ol_w_id = ?3 AND ol_d_id = ?4 AND ol_o_id = ?5 AND ol_number = ?6",
        DeleteNewOrder => "DELETE FROM tpcc_new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id = ?3",
        TotalsWarehouses => "SELECT w_id, w_ytd FROM tpcc_warehouse ORDER BY w_id",
        TotalsDistricts => "SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM tpcc_district \
             ORDER BY d_w_id, d_id",
        TotalsOrders => "SELECT o_w_id, o_d_id, MAX(o_id), CAST(SUM(o_ol_cnt) AS INTEGER), COUNT(*) \
             FROM tpcc_orders GROUP BY o_w_id, o_d_id ORDER BY o_w_id, o_d_id",
        TotalsNewOrders => "SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), COUNT(*) \
             FROM tpcc_new_order GROUP BY no_w_id, no_d_id ORDER BY no_w_id, no_d_id",
        TotalsOrderLines => "SELECT ol_w_id, ol_d_id, COUNT(*) FROM tpcc_order_line \
             GROUP BY ol_w_id, ol_d_id ORDER BY ol_w_id, ol_d_id",
    }
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
    use crate::tpcc::{check_dialect, Placeholders};

    #[test]
    fn every_statement_has_its_placeholders() {
        assert_eq!(
            check_dialect(sql, Placeholders::QuestionNumbered),
            Vec::<String>::new()
        );
    }
}
