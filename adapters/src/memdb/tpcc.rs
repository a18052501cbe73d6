//! memdb's TPC-C statements: each [`TpccStmt`] interpreted on rows kept in
//! the multi-version store, so TPC-C runs at memdb's levels and with its
//! bugs (a lost-update bug then breaks TPC-C's consistency conditions too).
//!
//! A row is stored whole ([`Val::Row`], columns in insert order, write id
//! last) under its primary key packed into one `i64`; a delete leaves
//! [`Val::Gone`]. Scans ("the oldest new order", "a customer's newest
//! order", "the lines of an order") go through the transaction's view key
//! by key, so they read like point reads and register their key range for
//! serializable validation, as the register workload's range reads do.
//! Outside a transaction (the end-of-run check) statements see the latest
//! committed state.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use workloads::tpcc::TpccTable;

use super::{MemConn, Table, Val};
use crate::error::{DbError, ErrorClass};
use crate::tpcc::{TpccConn, TpccStmt};

/// Bits per primary-key column, per table (the limits of
/// [`workloads::tpcc::TpccScale::MAX`]; order ids get 32 bits).
fn widths(t: TpccTable) -> &'static [u32] {
    match t {
        TpccTable::Warehouse | TpccTable::Item => &[62],
        TpccTable::District => &[10, 7],
        TpccTable::Customer => &[10, 7, 17],
        TpccTable::Stock => &[10, 20],
        TpccTable::Orders | TpccTable::NewOrder => &[10, 7, 32],
        TpccTable::OrderLine => &[10, 7, 32, 5],
    }
}

/// Packs a primary key (or a prefix of it, padded with `fill`) into an
/// `i64` that sorts like the key.
fn pack(t: TpccTable, pk: &[i64], fill: i64) -> i64 {
    let mut k = 0i64;
    for (i, &w) in widths(t).iter().enumerate() {
        let mask = (1i64 << w) - 1;
        let v = pk.get(i).copied().unwrap_or(fill) & mask;
        k = (k << w) | v;
    }
    k
}

/// The key range of every row whose primary key starts with `prefix`.
fn prefix(t: TpccTable, prefix: &[i64]) -> (i64, i64) {
    (pack(t, prefix, 0), pack(t, prefix, -1))
}

/// A stored row, shared with the store.
type RowRef = Arc<Vec<i64>>;

fn bad(message: String) -> DbError {
    DbError {
        class: ErrorClass::Statement,
        code: "MEMDB_TPCC".into(),
        message,
    }
}

/// The table an insert statement fills.
fn insert_table(stmt: TpccStmt) -> Option<TpccTable> {
    TpccTable::ALL
        .into_iter()
        .find(|&t| TpccStmt::insert(t) == stmt)
}

/// An update: its table and the columns it sets, in parameter order.
fn update(stmt: TpccStmt) -> Option<(TpccTable, &'static [usize])> {
    use TpccStmt::*;
    Some(match stmt {
        SetWarehouseYtd => (TpccTable::Warehouse, &[2]),
        SetDistrictYtd => (TpccTable::District, &[3]),
        SetDistrictNextOId => (TpccTable::District, &[4]),
        SetCustomerPayment => (TpccTable::Customer, &[4, 5, 6]),
        SetCustomerDelivery => (TpccTable::Customer, &[4, 7]),
        SetStock => (TpccTable::Stock, &[2, 3, 4, 5]),
        SetOrderCarrier => (TpccTable::Orders, &[4]),
        SetOrderLineDelivery => (TpccTable::OrderLine, &[8]),
        _ => return None,
    })
}

/// A point read: its table and the columns it returns.
fn point(stmt: TpccStmt) -> Option<(TpccTable, &'static [usize])> {
    use TpccStmt::*;
    Some(match stmt {
        Warehouse => (TpccTable::Warehouse, &[1, 2, 3]),
        District => (TpccTable::District, &[2, 3, 4, 5]),
        Customer => (TpccTable::Customer, &[3, 4, 5, 6, 7, 8]),
        Item => (TpccTable::Item, &[1, 2]),
        Stock => (TpccTable::Stock, &[2, 3, 4, 5, 6]),
        Order => (TpccTable::Orders, &[3, 4, 5, 7]),
        _ => return None,
    })
}

fn project(row: &[i64], cols: &[usize]) -> Vec<i64> {
    cols.iter().map(|&c| row[c]).collect()
}

impl MemConn {
    /// The row at `pk` as this connection sees it: the transaction's view
    /// (a registered read), or the latest committed row outside one.
    fn row(&mut self, t: TpccTable, pk: &[i64]) -> Result<Option<RowRef>, DbError> {
        let k = (Table::Tpcc(t), pack(t, pk, 0));
        let v = if self.txn.is_some() {
            self.get(k)?
        } else {
            let st = self.db.state.lock().expect("memdb lock");
            st.at(k, st.clock).cloned()
        };
        Ok(match v {
            Some(Val::Row(r)) => Some(r),
            _ => None,
        })
    }

    /// Every live row of `t` with keys in `lo..=hi`, in key order; inside a
    /// transaction each is read through its view and the range is kept for
    /// validation.
    fn scan(&mut self, t: TpccTable, lo: i64, hi: i64) -> Result<Vec<RowRef>, DbError> {
        if lo > hi {
            return Ok(Vec::new()); // empty (a `BTreeMap` range would panic)
        }
        let table = Table::Tpcc(t);
        let keys: Vec<i64> = {
            let mut ks: Vec<i64> = match self.txn.as_mut() {
                Some(txn) => {
                    txn.ranges.push((table, lo, hi));
                    txn.writes
                        .range((table, lo)..=(table, hi))
                        .map(|(k, _)| k.1)
                        .collect()
                }
                None => Vec::new(),
            };
            let st = self.db.state.lock().expect("memdb lock");
            ks.extend(st.data.range((table, lo)..=(table, hi)).map(|(k, _)| k.1));
            ks.sort_unstable();
            ks.dedup();
            ks
        };
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let v = if self.txn.is_some() {
                self.get((table, k))?
            } else {
                let st = self.db.state.lock().expect("memdb lock");
                st.at((table, k), st.clock).cloned()
            };
            if let Some(Val::Row(r)) = v {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Installs `row` at `pk` in the transaction's writes.
    fn put_row(&mut self, t: TpccTable, pk: &[i64], row: Option<Vec<i64>>) -> Result<(), DbError> {
        let v = match row {
            Some(r) => Val::Row(Arc::new(r)),
            None => Val::Gone,
        };
        self.put((Table::Tpcc(t), pack(t, pk, 0)), v)
    }

    /// Aggregates per (warehouse, district) of a whole table.
    fn per_district(&mut self, t: TpccTable) -> Result<BTreeMap<(i64, i64), Vec<RowRef>>, DbError> {
        let mut m: BTreeMap<(i64, i64), Vec<RowRef>> = BTreeMap::new();
        for r in self.scan(t, 0, i64::MAX)? {
            m.entry((r[0], r[1])).or_default().push(r);
        }
        Ok(m)
    }
}

#[async_trait]
impl TpccConn for MemConn {
    async fn query(&mut self, stmt: TpccStmt, p: &[i64]) -> Result<Vec<Vec<i64>>, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        if p.len() != stmt.params() {
            return Err(bad(format!("{stmt:?} takes {} parameters", stmt.params())));
        }
        if let Some((t, cols)) = point(stmt) {
            return Ok(self
                .row(t, p)?
                .map(|r| vec![project(&r, cols)])
                .unwrap_or_default());
        }
        use TpccStmt::*;
        Ok(match stmt {
            LastOrder => {
                let (lo, hi) = prefix(TpccTable::Orders, &p[..2]);
                let rows = self.scan(TpccTable::Orders, lo, hi)?;
                rows.iter()
                    .rev()
                    .find(|r| r[3] == p[2])
                    .map(|r| vec![project(r, &[2, 4, 5, 7])])
                    .unwrap_or_default()
            }
            OldestNewOrder => {
                let (lo, hi) = prefix(TpccTable::NewOrder, p);
                let rows = self.scan(TpccTable::NewOrder, lo, hi)?;
                rows.first()
                    .map(|r| vec![project(r, &[2, 3])])
                    .unwrap_or_default()
            }
            OrderLines => {
                let (lo, hi) = prefix(TpccTable::OrderLine, p);
                let rows = self.scan(TpccTable::OrderLine, lo, hi)?;
                rows.iter().map(|r| project(r, &[3, 4, 7, 8, 9])).collect()
            }
            StockLevel => {
                let (w, d, from, to) = (p[0], p[1], p[2], p[3]);
                if from >= to {
                    return Ok(Vec::new());
                }
                let lo = pack(TpccTable::OrderLine, &[w, d, from], 0);
                let hi = pack(TpccTable::OrderLine, &[w, d, to - 1], -1);
                let lines = self.scan(TpccTable::OrderLine, lo, hi)?;
                let mut out = Vec::with_capacity(lines.len());
                for l in lines {
                    let s = self.row(TpccTable::Stock, &[w, l[4]])?;
                    let (qty, wid) = s.map_or((0, 0), |s| (s[2], s[6]));
                    out.push(vec![l[2], l[3], l[9], l[4], qty, wid]);
                }
                out
            }
            TotalsWarehouses => self
                .scan(TpccTable::Warehouse, 0, i64::MAX)?
                .iter()
                .map(|r| project(r, &[0, 2]))
                .collect(),
            TotalsDistricts => self
                .scan(TpccTable::District, 0, i64::MAX)?
                .iter()
                .map(|r| project(r, &[0, 1, 3, 4]))
                .collect(),
            TotalsOrders => self
                .per_district(TpccTable::Orders)?
                .into_iter()
                .map(|((w, d), rs)| {
                    let max = rs.iter().map(|r| r[2]).max().unwrap_or(0);
                    let sum: i64 = rs.iter().map(|r| r[5]).sum();
                    vec![w, d, max, sum, rs.len() as i64]
                })
                .collect(),
            TotalsNewOrders => self
                .per_district(TpccTable::NewOrder)?
                .into_iter()
                .map(|((w, d), rs)| {
                    let max = rs.iter().map(|r| r[2]).max().unwrap_or(0);
                    let min = rs.iter().map(|r| r[2]).min().unwrap_or(0);
                    vec![w, d, max, min, rs.len() as i64]
                })
                .collect(),
            TotalsOrderLines => self
                .per_district(TpccTable::OrderLine)?
                .into_iter()
                .map(|((w, d), rs)| vec![w, d, rs.len() as i64])
                .collect(),
            other => return Err(bad(format!("{other:?} is not a query"))),
        })
    }

    async fn execute(&mut self, stmt: TpccStmt, p: &[i64]) -> Result<u64, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        if p.len() != stmt.params() {
            return Err(bad(format!("{stmt:?} takes {} parameters", stmt.params())));
        }
        if let Some(t) = insert_table(stmt) {
            let pk = &p[..t.pk_len()];
            if self.row(t, pk)?.is_some() {
                return Err(DbError {
                    class: ErrorClass::UniqueViolation,
                    code: "MEMDB_UNIQUE".into(),
                    message: format!("{} exists", t.key(pk)),
                });
            }
            self.put_row(t, pk, Some(p.to_vec()))?;
            return Ok(1);
        }
        if let Some((t, cols)) = update(stmt) {
            let (set, rest) = p.split_at(cols.len());
            let (wid, pk) = (rest[0], &rest[1..]);
            let Some(row) = self.row(t, pk)? else {
                return Ok(0);
            };
            let mut row = (*row).clone();
            for (&c, &v) in cols.iter().zip(set) {
                row[c] = v;
            }
            *row.last_mut().expect("a row has columns") = wid;
            self.put_row(t, pk, Some(row))?;
            return Ok(1);
        }
        match stmt {
            TpccStmt::DeleteNewOrder => {
                if self.row(TpccTable::NewOrder, p)?.is_none() {
                    return Ok(0);
                }
                self.put_row(TpccTable::NewOrder, p, None)?;
                Ok(1)
            }
            other => Err(bad(format!("{other:?} is a query"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_keys_sort_like_primary_keys_and_prefixes_bound_them() {
        let t = TpccTable::OrderLine;
        let a = pack(t, &[1, 3, 7, 15], 0);
        let b = pack(t, &[1, 3, 8, 1], 0);
        let c = pack(t, &[1, 4, 1, 1], 0);
        let d = pack(t, &[2, 1, 1, 1], 0);
        assert!(a < b && b < c && c < d);
        let (lo, hi) = prefix(t, &[1, 3, 7]);
        assert!(lo <= a && a <= hi && b > hi);
        let (lo, hi) = prefix(TpccTable::NewOrder, &[1000, 100]);
        let k = pack(TpccTable::NewOrder, &[1000, 100, u32::MAX as i64], 0);
        assert!(lo <= k && k <= hi && hi > 0);
        assert!(pack(TpccTable::Customer, &[1000, 100, 100_000], 0) > 0);
    }

    #[test]
    fn statements_are_classified_once() {
        for s in TpccStmt::ALL {
            let kinds = [
                insert_table(s).is_some(),
                update(s).is_some(),
                point(s).is_some(),
            ];
            assert!(kinds.iter().filter(|k| **k).count() <= 1, "{s:?}");
            if let Some((_, cols)) = point(s) {
                assert_eq!(cols.len(), s.columns(), "{s:?}");
            }
            if let Some((t, cols)) = update(s) {
                assert_eq!(cols.len() + 1 + t.pk_len(), s.params(), "{s:?}");
            }
        }
    }
}
