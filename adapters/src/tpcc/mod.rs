//! TPC-C on SQL databases: the five transactions as small programs over a
//! fixed catalogue of parameterized statements ([`TpccStmt`]), run by the
//! shared executor and recorded row by row (see [`workloads::tpcc`] for the
//! workload and what the history looks like).
//!
//! A TPC-C transaction cannot be a static list of steps: New-Order writes
//! the district's next order id it just read, Payment adds to the totals it
//! read, Delivery updates the order lines it finds. So the plan carries a
//! [`TpccTxn`] (inputs plus reserved write ids) as one
//! [`Step::Tpcc`](workloads::Step::Tpcc), and the program logic lives here,
//! once for every database. A database only supplies the statements.
//!
//! # Adding TPC-C to an adapter
//!
//! 1. Write `adapters/src/<db>/tpcc.rs` (a child module of the adapter, so
//!    it can use the private connection type) with:
//!    - a `static TEXTS: Texts` of its [`Dialect`]: the tables and the
//!      statements are written once (`text.rs`) and rendered per dialect
//!      (placeholder style, integer and cast types, table options); a
//!      dialect that needs more than that extends [`Dialect`] rather than
//!      writing the texts again;
//!    - `fn sql(stmt: TpccStmt) -> &'static str` (`TEXTS.sql(stmt)`): the
//!      text of every statement, its parameters in the order [`TpccStmt`]
//!      documents (the order they appear in the text, so `?` placeholders
//!      work), its result columns in the documented order, all BIGINT;
//!    - `impl TpccConn for <YourConn>`: bind the `i64` parameters, return
//!      rows of `i64` ([`TpccConn::query`]) or the affected row count
//!      ([`TpccConn::execute`]), errors classified like the adapter's others.
//! 2. In the adapter's `impl Conn`, override [`Conn::tpcc`](crate::exec::Conn::tpcc)
//!    to return `Some(self)`.
//! 3. In its `setup`, run `TEXTS.setup()` (or `TEXTS.script()`) for
//!    `Schema::Tpcc`, with the run's table names like its other tables.
//! 4. Test the text with [`check_dialect`] (placeholders match
//!    [`TpccStmt::params`]).
//!
//! The end-of-run consistency check ([`totals`]) then works too. memdb,
//! which has no SQL, interprets each [`TpccStmt`] on its rows instead
//! (`adapters/src/memdb/tpcc.rs`). The
//! tables (SQL names, primary keys):
//!
//! | table | primary key | other columns, in insert order |
//! |---|---|---|
//! | tpcc_warehouse | w_id | w_tax, w_ytd, wid |
//! | tpcc_district | d_w_id, d_id | d_tax, d_ytd, d_next_o_id, wid |
//! | tpcc_customer | c_w_id, c_d_id, c_id | c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, wid |
//! | tpcc_item | i_id | i_price, wid |
//! | tpcc_stock | s_w_id, s_i_id | s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid |
//! | tpcc_orders | o_w_id, o_d_id, o_id | o_c_id, o_carrier_id, o_ol_cnt, o_all_local, wid |
//! | tpcc_new_order | no_w_id, no_d_id, no_o_id | wid |
//! | tpcc_order_line | ol_w_id, ol_d_id, ol_o_id, ol_number | ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d, wid |

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use history::{Key, Op};
use workloads::tpcc::check_consistency;
use workloads::tpcc::{
    Delivery, DistrictTotals, NewOrder, NewOrderTotals, OrderLineTotals, OrderStatus, OrderTotals,
    Payment, StockLevel, TpccTable, TpccTotals, TpccTxn, WarehouseTotals, STOCK_LEVEL_ORDERS,
};
use workloads::{EndCheck, EndReport, WriteIdBlock};

use crate::error::timed;
use crate::error::{AdapterError, DbError, ErrorClass, Limits};

mod text;
pub use text::{Dialect, Texts};

/// Every statement the TPC-C programs send. Parameters and result columns
/// are BIGINT; the documented order is the order of the placeholders in the
/// text (SET values, then the write id, then the key, for updates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TpccStmt {
    /// (w_id, w_tax, w_ytd, wid)
    InsertWarehouse,
    /// (d_w_id, d_id, d_tax, d_ytd, d_next_o_id, wid)
    InsertDistrict,
    /// (c_w_id, c_d_id, c_id, c_discount, c_balance, c_ytd_payment,
    /// c_payment_cnt, c_delivery_cnt, wid)
    InsertCustomer,
    /// (i_id, i_price, wid)
    InsertItem,
    /// (s_w_id, s_i_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid)
    InsertStock,
    /// (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local, wid)
    InsertOrder,
    /// (no_w_id, no_d_id, no_o_id, wid)
    InsertNewOrder,
    /// (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id,
    /// ol_quantity, ol_amount, ol_delivery_d, wid)
    InsertOrderLine,
    /// (w_id) → w_tax, w_ytd, wid
    Warehouse,
    /// (d_w_id, d_id) → d_tax, d_ytd, d_next_o_id, wid
    District,
    /// (c_w_id, c_d_id, c_id) → c_discount, c_balance, c_ytd_payment,
    /// c_payment_cnt, c_delivery_cnt, wid
    Customer,
    /// (i_id) → i_price, wid
    Item,
    /// (s_w_id, s_i_id) → s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid
    Stock,
    /// (o_w_id, o_d_id, o_id) → o_c_id, o_carrier_id, o_ol_cnt, wid
    Order,
    /// (o_w_id, o_d_id, o_c_id) → o_id, o_carrier_id, o_ol_cnt, wid of the
    /// customer's newest order (largest o_id; at most one row)
    LastOrder,
    /// (no_w_id, no_d_id) → no_o_id, wid of the oldest new_order row
    /// (smallest no_o_id; at most one row)
    OldestNewOrder,
    /// (ol_w_id, ol_d_id, ol_o_id) → ol_number, ol_i_id, ol_amount,
    /// ol_delivery_d, wid of every line of the order, by ol_number
    OrderLines,
    /// (w_id, d_id, lo, hi) → ol_o_id, ol_number, ol.wid, ol_i_id,
    /// s_quantity, s.wid: every order line of the district with
    /// lo <= ol_o_id < hi, joined (LEFT) with the stock row of its item in
    /// warehouse w_id (s_quantity and s.wid 0 when there is none), ordered
    /// by ol_o_id, ol_number; one statement
    StockLevel,
    /// (w_ytd, wid, w_id)
    SetWarehouseYtd,
    /// (d_ytd, wid, d_w_id, d_id)
    SetDistrictYtd,
    /// (d_next_o_id, wid, d_w_id, d_id)
    SetDistrictNextOId,
    /// (c_balance, c_ytd_payment, c_payment_cnt, wid, c_w_id, c_d_id, c_id)
    SetCustomerPayment,
    /// (c_balance, c_delivery_cnt, wid, c_w_id, c_d_id, c_id)
    SetCustomerDelivery,
    /// (s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid, s_w_id, s_i_id)
    SetStock,
    /// (o_carrier_id, wid, o_w_id, o_d_id, o_id)
    SetOrderCarrier,
    /// (ol_delivery_d, wid, ol_w_id, ol_d_id, ol_o_id, ol_number)
    SetOrderLineDelivery,
    /// (no_w_id, no_d_id, no_o_id); affects 0 rows when it is gone
    DeleteNewOrder,
    /// () → w_id, w_ytd of every warehouse
    TotalsWarehouses,
    /// () → d_w_id, d_id, d_ytd, d_next_o_id of every district
    TotalsDistricts,
    /// () → o_w_id, o_d_id, max(o_id), sum(o_ol_cnt), count(*) per district
    TotalsOrders,
    /// () → no_w_id, no_d_id, max(no_o_id), min(no_o_id), count(*) per district
    TotalsNewOrders,
    /// () → ol_w_id, ol_d_id, count(*) per district
    TotalsOrderLines,
}

impl TpccStmt {
    /// Every statement, for dialect tests.
    pub const ALL: [TpccStmt; 32] = [
        TpccStmt::InsertWarehouse,
        TpccStmt::InsertDistrict,
        TpccStmt::InsertCustomer,
        TpccStmt::InsertItem,
        TpccStmt::InsertStock,
        TpccStmt::InsertOrder,
        TpccStmt::InsertNewOrder,
        TpccStmt::InsertOrderLine,
        TpccStmt::Warehouse,
        TpccStmt::District,
        TpccStmt::Customer,
        TpccStmt::Item,
        TpccStmt::Stock,
        TpccStmt::Order,
        TpccStmt::LastOrder,
        TpccStmt::OldestNewOrder,
        TpccStmt::OrderLines,
        TpccStmt::StockLevel,
        TpccStmt::SetWarehouseYtd,
        TpccStmt::SetDistrictYtd,
        TpccStmt::SetDistrictNextOId,
        TpccStmt::SetCustomerPayment,
        TpccStmt::SetCustomerDelivery,
        TpccStmt::SetStock,
        TpccStmt::SetOrderCarrier,
        TpccStmt::SetOrderLineDelivery,
        TpccStmt::DeleteNewOrder,
        TpccStmt::TotalsWarehouses,
        TpccStmt::TotalsDistricts,
        TpccStmt::TotalsOrders,
        TpccStmt::TotalsNewOrders,
        TpccStmt::TotalsOrderLines,
    ];

    /// The insert statement of a table.
    pub fn insert(table: TpccTable) -> TpccStmt {
        match table {
            TpccTable::Warehouse => TpccStmt::InsertWarehouse,
            TpccTable::District => TpccStmt::InsertDistrict,
            TpccTable::Customer => TpccStmt::InsertCustomer,
            TpccTable::Item => TpccStmt::InsertItem,
            TpccTable::Stock => TpccStmt::InsertStock,
            TpccTable::Orders => TpccStmt::InsertOrder,
            TpccTable::NewOrder => TpccStmt::InsertNewOrder,
            TpccTable::OrderLine => TpccStmt::InsertOrderLine,
        }
    }

    /// How many parameters the statement takes.
    pub fn params(self) -> usize {
        use TpccStmt::*;
        match self {
            InsertWarehouse => 4,
            InsertDistrict => 6,
            InsertCustomer => 9,
            InsertItem => 3,
            InsertStock => 7,
            InsertOrder => 8,
            InsertNewOrder => 4,
            InsertOrderLine => 10,
            Warehouse | Item => 1,
            District | Stock | OldestNewOrder => 2,
            Customer | Order | LastOrder | OrderLines | DeleteNewOrder => 3,
            StockLevel => 4,
            SetWarehouseYtd => 3,
            SetDistrictYtd | SetDistrictNextOId => 4,
            SetCustomerPayment | SetStock => 7,
            SetCustomerDelivery | SetOrderLineDelivery => 6,
            SetOrderCarrier => 5,
            TotalsWarehouses | TotalsDistricts | TotalsOrders | TotalsNewOrders
            | TotalsOrderLines => 0,
        }
    }

    /// How many columns a row of its result has (0: not a query).
    pub fn columns(self) -> usize {
        use TpccStmt::*;
        match self {
            Warehouse => 3,
            District => 4,
            Customer => 6,
            Item | OldestNewOrder | TotalsWarehouses => 2,
            Stock | OrderLines | TotalsOrders | TotalsNewOrders => 5,
            Order | LastOrder | TotalsDistricts => 4,
            StockLevel => 6,
            TotalsOrderLines => 3,
            _ => 0,
        }
    }
}

/// The TPC-C statements of one connection: the whole of what a database
/// must implement to run the `tpcc` workload (see the module docs). Every
/// parameter and column is an `i64`.
#[async_trait]
pub trait TpccConn: Send {
    /// Runs query `stmt` with `params`; every row has
    /// [`TpccStmt::columns`] values.
    async fn query(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<Vec<Vec<i64>>, DbError>;
    /// Runs insert, update or delete `stmt`; returns the rows affected.
    async fn execute(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<u64, DbError>;
}

/// The error a TPC-C program ends its transaction with on purpose, or when
/// a row it needs is missing; the executor rolls back and records `fail`.
fn program_error(code: &str, message: String) -> DbError {
    DbError {
        class: ErrorClass::Statement,
        code: code.into(),
        message,
    }
}

/// The code of New-Order's deliberate rollback (an unused item, TPC-C
/// 2.4.2.3), so reports can tell it from real failures.
pub const ROLLBACK_CODE: &str = "tpcc-rollback";

/// One running program: the connection, where its ops go, its write ids.
struct Prog<'a> {
    c: &'a mut dyn TpccConn,
    ops: &'a mut Vec<Op>,
    limits: &'a Limits,
    wids: WriteIdBlock,
    used: u32,
}

impl Prog<'_> {
    async fn query(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<Vec<Vec<i64>>, DbError> {
        let rows = self.limits.timed(self.c.query(stmt, params)).await?;
        if let Some(r) = rows.iter().find(|r| r.len() != stmt.columns()) {
            return Err(program_error(
                "tpcc-bad-row",
                format!(
                    "{stmt:?} returned {} columns, expected {}",
                    r.len(),
                    stmt.columns()
                ),
            ));
        }
        Ok(rows)
    }

    async fn execute(&mut self, stmt: TpccStmt, params: &[i64]) -> Result<u64, DbError> {
        self.limits.timed(self.c.execute(stmt, params)).await
    }

    /// The next reserved write id.
    fn wid(&mut self) -> Result<i64, DbError> {
        let w = self.wids.get(self.used).ok_or_else(|| {
            program_error(
                "tpcc-write-ids",
                format!("the plan reserved only {} write ids", self.wids.len),
            )
        })?;
        self.used += 1;
        Ok(w)
    }

    /// Reads the row `pk` of `table` with `stmt`, recording `["r", key,
    /// wid]` (`null` when absent). The write id is the last column.
    async fn read(
        &mut self,
        table: TpccTable,
        stmt: TpccStmt,
        pk: &[i64],
    ) -> Result<Option<Vec<i64>>, DbError> {
        let mut rows = self.query(stmt, pk).await?;
        let row = if rows.is_empty() {
            None
        } else {
            Some(rows.swap_remove(0))
        };
        self.ops.push(Op::Read {
            key: table.key(pk),
            value: row.as_ref().and_then(|r| r.last().copied()),
        });
        Ok(row)
    }

    /// Like [`Prog::read`], but a missing row ends the transaction: the
    /// initial population has it, so only a broken database loses it.
    async fn read_existing(
        &mut self,
        table: TpccTable,
        stmt: TpccStmt,
        pk: &[i64],
    ) -> Result<Vec<i64>, DbError> {
        self.read(table, stmt, pk).await?.ok_or_else(|| {
            program_error("tpcc-missing-row", format!("{} is missing", table.key(pk)))
        })
    }

    /// Updates row `pk` of `table`: `set` values, a fresh write id, the key;
    /// recorded as `["w", key, wid]` before the statement runs.
    async fn update(
        &mut self,
        table: TpccTable,
        stmt: TpccStmt,
        pk: &[i64],
        set: &[i64],
    ) -> Result<(), DbError> {
        let wid = self.wid()?;
        self.ops.push(Op::Write {
            key: table.key(pk),
            value: wid,
        });
        let mut params = Vec::with_capacity(set.len() + 1 + pk.len());
        params.extend_from_slice(set);
        params.push(wid);
        params.extend_from_slice(pk);
        let n = self.execute(stmt, &params).await?;
        if n != 1 {
            return Err(program_error(
                "tpcc-missing-row",
                format!("updating {} changed {n} rows", table.key(pk)),
            ));
        }
        Ok(())
    }

    /// Inserts a row of `table` (columns without the write id), recorded as
    /// `["i", key, wid]` before the statement runs.
    async fn insert(&mut self, table: TpccTable, values: &[i64]) -> Result<(), DbError> {
        let wid = self.wid()?;
        let mut row = Vec::with_capacity(values.len() + 1);
        row.extend_from_slice(values);
        row.push(wid);
        self.insert_row(table, &row).await
    }

    /// Inserts a complete row (write id last).
    async fn insert_row(&mut self, table: TpccTable, row: &[i64]) -> Result<(), DbError> {
        self.ops.push(Op::Insert {
            key: table.key(&row[..table.pk_len()]),
            value: *row.last().expect("a row has columns"),
        });
        self.execute(TpccStmt::insert(table), row).await?;
        Ok(())
    }

    /// Reads every line of order (w, d, o), recorded as one range read of
    /// the order's key prefix.
    async fn order_lines(&mut self, w: i64, d: i64, o: i64) -> Result<Vec<Vec<i64>>, DbError> {
        let rows = self.query(TpccStmt::OrderLines, &[w, d, o]).await?;
        let (lo, hi) = TpccTable::OrderLine.prefix_range(&[w, d, o]);
        self.ops.push(Op::RangeRead {
            lo,
            hi,
            rows: Box::new(
                rows.iter()
                    .map(|r| (TpccTable::OrderLine.key(&[w, d, o, r[0]]), r[4]))
                    .collect(),
            ),
        });
        Ok(rows)
    }
}

/// Runs one TPC-C transaction's statements on `c` (inside the transaction
/// the executor opened), pushing an op for every row read or written.
pub async fn run(
    c: &mut dyn TpccConn,
    txn: &TpccTxn,
    ops: &mut Vec<Op>,
    limits: &Limits,
) -> Result<(), DbError> {
    let mut p = Prog {
        c,
        ops,
        limits,
        wids: txn.wids().unwrap_or(WriteIdBlock { first: 0, len: 0 }),
        used: 0,
    };
    match txn {
        TpccTxn::Load(rows) => {
            for r in rows {
                p.insert_row(r.table, &r.values).await?;
            }
            Ok(())
        }
        TpccTxn::NewOrder(t) => new_order(&mut p, t).await,
        TpccTxn::Payment(t) => payment(&mut p, t).await,
        TpccTxn::OrderStatus(t) => order_status(&mut p, t).await,
        TpccTxn::Delivery(t) => delivery(&mut p, t).await,
        TpccTxn::StockLevel(t) => stock_level(&mut p, t).await,
    }
}

/// TPC-C 2.4.2: the district's next order id becomes the order's id.
async fn new_order(p: &mut Prog<'_>, t: &NewOrder) -> Result<(), DbError> {
    let (w, d, c) = (t.w, t.d, t.c);
    p.read_existing(TpccTable::Warehouse, TpccStmt::Warehouse, &[w])
        .await?;
    let dist = p
        .read_existing(TpccTable::District, TpccStmt::District, &[w, d])
        .await?;
    let o = dist[2];
    p.update(
        TpccTable::District,
        TpccStmt::SetDistrictNextOId,
        &[w, d],
        &[o + 1],
    )
    .await?;
    p.read_existing(TpccTable::Customer, TpccStmt::Customer, &[w, d, c])
        .await?;
    let all_local = i64::from(t.lines.iter().all(|l| l.supply_w == w));
    let ol_cnt = t.lines.len() as i64;
    p.insert(TpccTable::Orders, &[w, d, o, c, 0, ol_cnt, all_local])
        .await?;
    p.insert(TpccTable::NewOrder, &[w, d, o]).await?;
    for (n, l) in (1..).zip(&t.lines) {
        let Some(item) = p.read(TpccTable::Item, TpccStmt::Item, &[l.item]).await? else {
            return Err(program_error(
                ROLLBACK_CODE,
                format!("item {} is unused: New-Order rolls back", l.item),
            ));
        };
        let sw = l.supply_w;
        let s = p
            .read_existing(TpccTable::Stock, TpccStmt::Stock, &[sw, l.item])
            .await?;
        let quantity = if s[0] >= l.quantity + 10 {
            s[0] - l.quantity
        } else {
            s[0] - l.quantity + 91
        };
        let remote = i64::from(sw != w);
        p.update(
            TpccTable::Stock,
            TpccStmt::SetStock,
            &[sw, l.item],
            &[quantity, s[1] + l.quantity, s[2] + 1, s[3] + remote],
        )
        .await?;
        let amount = l.quantity * item[0];
        p.insert(
            TpccTable::OrderLine,
            &[w, d, o, n, l.item, sw, l.quantity, amount, 0],
        )
        .await?;
    }
    Ok(())
}

/// TPC-C 2.5.2: the amount goes to the warehouse's and district's
/// year-to-date totals and off the customer's balance.
async fn payment(p: &mut Prog<'_>, t: &Payment) -> Result<(), DbError> {
    let (w, d) = (t.w, t.d);
    let wh = p
        .read_existing(TpccTable::Warehouse, TpccStmt::Warehouse, &[w])
        .await?;
    p.update(
        TpccTable::Warehouse,
        TpccStmt::SetWarehouseYtd,
        &[w],
        &[wh[1] + t.amount],
    )
    .await?;
    let dist = p
        .read_existing(TpccTable::District, TpccStmt::District, &[w, d])
        .await?;
    p.update(
        TpccTable::District,
        TpccStmt::SetDistrictYtd,
        &[w, d],
        &[dist[1] + t.amount],
    )
    .await?;
    let ck = [t.c_w, t.c_d, t.c];
    let cu = p
        .read_existing(TpccTable::Customer, TpccStmt::Customer, &ck)
        .await?;
    p.update(
        TpccTable::Customer,
        TpccStmt::SetCustomerPayment,
        &ck,
        &[cu[1] - t.amount, cu[2] + t.amount, cu[3] + 1],
    )
    .await
}

/// TPC-C 2.6.2: the customer, their newest order and its lines.
async fn order_status(p: &mut Prog<'_>, t: &OrderStatus) -> Result<(), DbError> {
    let (w, d, c) = (t.w, t.d, t.c);
    p.read_existing(TpccTable::Customer, TpccStmt::Customer, &[w, d, c])
        .await?;
    let rows = p.query(TpccStmt::LastOrder, &[w, d, c]).await?;
    if let Some(r) = rows.first() {
        let o = r[0];
        p.ops.push(Op::Read {
            key: TpccTable::Orders.key(&[w, d, o]),
            value: Some(r[3]),
        });
        p.order_lines(w, d, o).await?;
    }
    Ok(())
}

/// TPC-C 2.7.4: in each district, the oldest new order is delivered; a
/// district whose new order another Delivery took first is skipped
/// (2.7.4.2).
async fn delivery(p: &mut Prog<'_>, t: &Delivery) -> Result<(), DbError> {
    let w = t.w;
    for d in 1..=t.districts {
        let rows = p.query(TpccStmt::OldestNewOrder, &[w, d]).await?;
        let Some(r) = rows.first() else { continue };
        let o = r[0];
        let no_key = TpccTable::NewOrder.key(&[w, d, o]);
        p.ops.push(Op::Read {
            key: no_key.clone(),
            value: Some(r[1]),
        });
        let wid = p.wid()?;
        p.ops.push(Op::Delete {
            key: no_key,
            value: wid,
        });
        if p.execute(TpccStmt::DeleteNewOrder, &[w, d, o]).await? == 0 {
            p.ops.pop(); // gone already: nothing was deleted
            continue;
        }
        let order = p
            .read_existing(TpccTable::Orders, TpccStmt::Order, &[w, d, o])
            .await?;
        let c = order[0];
        p.update(
            TpccTable::Orders,
            TpccStmt::SetOrderCarrier,
            &[w, d, o],
            &[t.carrier],
        )
        .await?;
        let lines = p.order_lines(w, d, o).await?;
        let mut total = 0;
        for l in &lines {
            total += l[2];
            p.update(
                TpccTable::OrderLine,
                TpccStmt::SetOrderLineDelivery,
                &[w, d, o, l[0]],
                &[t.delivery_d],
            )
            .await?;
        }
        let cu = p
            .read_existing(TpccTable::Customer, TpccStmt::Customer, &[w, d, c])
            .await?;
        p.update(
            TpccTable::Customer,
            TpccStmt::SetCustomerDelivery,
            &[w, d, c],
            &[cu[1] + total, cu[4] + 1],
        )
        .await?;
    }
    Ok(())
}

/// TPC-C 2.8.2: the stock of the items of the district's last 20 orders,
/// in one join; recorded as a range read of each order's lines and a read
/// of each distinct stock row.
async fn stock_level(p: &mut Prog<'_>, t: &StockLevel) -> Result<(), DbError> {
    let (w, d) = (t.w, t.d);
    let dist = p
        .read_existing(TpccTable::District, TpccStmt::District, &[w, d])
        .await?;
    let next = dist[2];
    let lo = (next - STOCK_LEVEL_ORDERS).max(1);
    let rows = p.query(TpccStmt::StockLevel, &[w, d, lo, next]).await?;
    let mut per_order: BTreeMap<i64, Vec<(Key, i64)>> = (lo..next).map(|o| (o, vec![])).collect();
    // item → (s_quantity, s.wid), in order of first appearance.
    let mut stock: Vec<(i64, i64, i64)> = Vec::new();
    for r in &rows {
        let (o, n, ol_wid, item, qty, s_wid) = (r[0], r[1], r[2], r[3], r[4], r[5]);
        per_order
            .entry(o)
            .or_default()
            .push((TpccTable::OrderLine.key(&[w, d, o, n]), ol_wid));
        if !stock.iter().any(|s| s.0 == item) {
            stock.push((item, qty, s_wid));
        }
    }
    for (o, rows) in per_order {
        let (lo, hi) = TpccTable::OrderLine.prefix_range(&[w, d, o]);
        p.ops.push(Op::RangeRead {
            lo,
            hi,
            rows: Box::new(rows),
        });
    }
    let mut low = 0;
    for (item, qty, s_wid) in stock {
        p.ops.push(Op::Read {
            key: TpccTable::Stock.key(&[w, item]),
            value: (s_wid != 0).then_some(s_wid),
        });
        if s_wid != 0 && qty < t.threshold {
            low += 1;
        }
    }
    let _ = low; // TPC-C displays it; nothing checks it
    Ok(())
}

/// Reads the aggregates consistency conditions 1–4 need, one query per
/// table (run when the clients have stopped).
pub async fn totals(c: &mut dyn TpccConn, limit: Duration) -> Result<TpccTotals, DbError> {
    let mut q = async |stmt: TpccStmt| -> Result<Vec<Vec<i64>>, DbError> {
        let rows = timed(limit, c.query(stmt, &[])).await?;
        match rows.iter().find(|r| r.len() != stmt.columns()) {
            Some(r) => Err(program_error(
                "tpcc-bad-row",
                format!("{stmt:?} returned {} columns", r.len()),
            )),
            None => Ok(rows),
        }
    };
    let mut t = TpccTotals::default();
    for r in q(TpccStmt::TotalsWarehouses).await? {
        t.warehouses.push(WarehouseTotals { w: r[0], ytd: r[1] });
    }
    for r in q(TpccStmt::TotalsDistricts).await? {
        t.districts.push(DistrictTotals {
            w: r[0],
            d: r[1],
            ytd: r[2],
            next_o_id: r[3],
        });
    }
    for r in q(TpccStmt::TotalsOrders).await? {
        t.orders.push(OrderTotals {
            w: r[0],
            d: r[1],
            max_o_id: r[2],
            sum_ol_cnt: r[3],
            count: r[4],
        });
    }
    for r in q(TpccStmt::TotalsNewOrders).await? {
        t.new_orders.push(NewOrderTotals {
            w: r[0],
            d: r[1],
            max_o_id: r[2],
            min_o_id: r[3],
            count: r[4],
        });
    }
    for r in q(TpccStmt::TotalsOrderLines).await? {
        t.order_lines.push(OrderLineTotals {
            w: r[0],
            d: r[1],
            count: r[2],
        });
    }
    Ok(t)
}

/// Runs an end-of-run check on a connection (for
/// [`Session::end_check`](crate::Session::end_check)).
pub(crate) async fn end_check(
    conn: Option<&mut dyn TpccConn>,
    check: EndCheck,
    limit: Duration,
) -> Result<EndReport, AdapterError> {
    match check {
        EndCheck::TpccConsistency => {
            let Some(c) = conn else {
                return Err(AdapterError::Unsupported(
                    "this database has no TPC-C statements, so no consistency check".into(),
                ));
            };
            let t = totals(c, limit).await.map_err(|e| {
                AdapterError::Check(format!("reading the TPC-C totals: {}", e.text()))
            })?;
            Ok(check_consistency(&t))
        }
    }
}

/// How a dialect writes its placeholders.
#[derive(Clone, Copy, Debug)]
pub enum Placeholders {
    /// `$1`, `$2`, … (PostgreSQL, YugabyteDB).
    Dollar,
    /// `?1`, `?2`, … (SQLite).
    QuestionNumbered,
    /// `?` in order (MySQL, TiDB).
    Question,
}

/// Checks a dialect's statement table: every statement has text, and its
/// placeholders are exactly 1..=[`TpccStmt::params`] (for numbered styles,
/// each used). Returns the problems, empty when all is well; for tests.
pub fn check_dialect(sql: fn(TpccStmt) -> &'static str, style: Placeholders) -> Vec<String> {
    let mut problems = Vec::new();
    for stmt in TpccStmt::ALL {
        let text = sql(stmt);
        if text.trim().is_empty() {
            problems.push(format!("{stmt:?}: no text"));
            continue;
        }
        let want = stmt.params();
        let found: Vec<usize> = match style {
            Placeholders::Question => {
                let n = text.matches('?').count();
                (1..=n).collect()
            }
            Placeholders::Dollar | Placeholders::QuestionNumbered => {
                let mark = if matches!(style, Placeholders::Dollar) {
                    '$'
                } else {
                    '?'
                };
                let mut out = Vec::new();
                let b = text.as_bytes();
                for (i, ch) in text.char_indices() {
                    if ch == mark {
                        let digits: String = b[i + 1..]
                            .iter()
                            .take_while(|c| c.is_ascii_digit())
                            .map(|&c| c as char)
                            .collect();
                        if let Ok(n) = digits.parse() {
                            out.push(n);
                        }
                    }
                }
                out.sort_unstable();
                out.dedup();
                out
            }
        };
        if found != (1..=want).collect::<Vec<_>>() {
            problems.push(format!(
                "{stmt:?}: placeholders {found:?}, expected 1..={want}"
            ));
        }
        let is_query = text.trim_start().to_ascii_uppercase().starts_with("SELECT");
        if is_query != (stmt.columns() > 0) {
            problems.push(format!("{stmt:?}: query/statement mismatch"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_is_complete() {
        let mut seen = std::collections::HashSet::new();
        for s in TpccStmt::ALL {
            assert!(seen.insert(s), "{s:?} twice");
        }
        for t in TpccTable::ALL {
            assert_eq!(TpccStmt::insert(t).params(), t.columns(), "{t:?}");
        }
    }
}
