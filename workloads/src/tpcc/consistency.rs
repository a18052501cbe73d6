//! TPC-C's consistency conditions 1–4 (Clause 3.3.2.1–3.3.2.4), checked on
//! aggregates of the final database state. Any execution of the TPC-C
//! transactions that is serializable (or merely snapshot isolated: TPC-C is
//! SI-robust) keeps them; a lost update of a year-to-date total or of a
//! district's next order id breaks them.
//!
//! 1. W_YTD = sum(D_YTD) over the warehouse's districts.
//! 2. D_NEXT_O_ID − 1 = max(O_ID) = max(NO_O_ID) in each district.
//! 3. max(NO_O_ID) − min(NO_O_ID) + 1 = the number of new_order rows in
//!    each district.
//! 4. sum(O_OL_CNT) = the number of order_line rows in each district.
//!
//! TPC-C's initial population keeps 900 undelivered orders per district,
//! so it never runs out of new_order rows; this scaled-down one can. A
//! district without new_order rows checks condition 2 as D_NEXT_O_ID − 1 =
//! max(O_ID) (0 without orders) and condition 3 trivially.

use std::collections::BTreeMap;

use crate::end::{ConditionResult, EndCheck, EndReport};

use super::{LoadRow, TpccTable};

/// A warehouse's year-to-date total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarehouseTotals {
    pub w: i64,
    pub ytd: i64,
}

/// A district's year-to-date total and next order id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistrictTotals {
    pub w: i64,
    pub d: i64,
    pub ytd: i64,
    pub next_o_id: i64,
}

/// A district's orders: max(O_ID), sum(O_OL_CNT), count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderTotals {
    pub w: i64,
    pub d: i64,
    pub max_o_id: i64,
    pub sum_ol_cnt: i64,
    pub count: i64,
}

/// A district's new_order rows: max and min NO_O_ID, count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewOrderTotals {
    pub w: i64,
    pub d: i64,
    pub max_o_id: i64,
    pub min_o_id: i64,
    pub count: i64,
}

/// A district's order_line rows: count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderLineTotals {
    pub w: i64,
    pub d: i64,
    pub count: i64,
}

/// What the conditions need from the database: one aggregate query per
/// table, grouped by warehouse and district (districts without orders,
/// new_order or order_line rows are simply absent from those lists).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TpccTotals {
    pub warehouses: Vec<WarehouseTotals>,
    pub districts: Vec<DistrictTotals>,
    pub orders: Vec<OrderTotals>,
    pub new_orders: Vec<NewOrderTotals>,
    pub order_lines: Vec<OrderLineTotals>,
}

impl TpccTotals {
    /// The totals of a set of rows (an initial population, or a test's
    /// stand-in for a database).
    pub fn of_rows(rows: &[LoadRow]) -> TpccTotals {
        let mut t = TpccTotals::default();
        let mut orders: BTreeMap<(i64, i64), OrderTotals> = BTreeMap::new();
        let mut nos: BTreeMap<(i64, i64), NewOrderTotals> = BTreeMap::new();
        let mut ols: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for r in rows {
            let v = &r.values;
            match r.table {
                TpccTable::Warehouse => t.warehouses.push(WarehouseTotals { w: v[0], ytd: v[2] }),
                TpccTable::District => t.districts.push(DistrictTotals {
                    w: v[0],
                    d: v[1],
                    ytd: v[3],
                    next_o_id: v[4],
                }),
                TpccTable::Orders => {
                    let e = orders.entry((v[0], v[1])).or_insert(OrderTotals {
                        w: v[0],
                        d: v[1],
                        max_o_id: 0,
                        sum_ol_cnt: 0,
                        count: 0,
                    });
                    e.max_o_id = e.max_o_id.max(v[2]);
                    e.sum_ol_cnt += v[5];
                    e.count += 1;
                }
                TpccTable::NewOrder => {
                    let e = nos.entry((v[0], v[1])).or_insert(NewOrderTotals {
                        w: v[0],
                        d: v[1],
                        max_o_id: v[2],
                        min_o_id: v[2],
                        count: 0,
                    });
                    e.max_o_id = e.max_o_id.max(v[2]);
                    e.min_o_id = e.min_o_id.min(v[2]);
                    e.count += 1;
                }
                TpccTable::OrderLine => *ols.entry((v[0], v[1])).or_default() += 1,
                TpccTable::Customer | TpccTable::Item | TpccTable::Stock => {}
            }
        }
        t.orders = orders.into_values().collect();
        t.new_orders = nos.into_values().collect();
        t.order_lines = ols
            .into_iter()
            .map(|((w, d), count)| OrderLineTotals { w, d, count })
            .collect();
        t
    }
}

/// Money in cents as `1234.56`.
fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", c / 100, c % 100)
}

/// Checks conditions 1–4 on `t`; each violation names the warehouse or
/// district and the numbers that disagree.
pub fn check_consistency(t: &TpccTotals) -> EndReport {
    let mut c1 = ConditionResult::new(1, "W_YTD = sum(D_YTD)");
    let mut c2 = ConditionResult::new(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)");
    let mut c3 = ConditionResult::new(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER)");
    let mut c4 = ConditionResult::new(4, "sum(O_OL_CNT) = count(ORDER_LINE)");

    let mut d_ytd: BTreeMap<i64, i64> = BTreeMap::new();
    for d in &t.districts {
        *d_ytd.entry(d.w).or_default() += d.ytd;
    }
    for w in &t.warehouses {
        let sum = d_ytd.get(&w.w).copied().unwrap_or(0);
        c1.record((w.ytd != sum).then(|| {
            format!(
                "warehouse {}: W_YTD {} but sum(D_YTD) {} (off by {})",
                w.w,
                money(w.ytd),
                money(sum),
                money(w.ytd - sum)
            )
        }));
    }

    let orders: BTreeMap<(i64, i64), &OrderTotals> =
        t.orders.iter().map(|o| ((o.w, o.d), o)).collect();
    let nos: BTreeMap<(i64, i64), &NewOrderTotals> =
        t.new_orders.iter().map(|n| ((n.w, n.d), n)).collect();
    let ols: BTreeMap<(i64, i64), i64> = t
        .order_lines
        .iter()
        .map(|l| ((l.w, l.d), l.count))
        .collect();
    for d in &t.districts {
        let key = (d.w, d.d);
        let name = format!("district {}:{}", d.w, d.d);
        let max_o = orders.get(&key).map_or(0, |o| o.max_o_id);
        let no = nos.get(&key);
        let last = d.next_o_id - 1;
        c2.record(match no {
            Some(n) if last != max_o || max_o != n.max_o_id => Some(format!(
                "{name}: D_NEXT_O_ID - 1 = {last}, max(O_ID) = {max_o}, max(NO_O_ID) = {}",
                n.max_o_id
            )),
            None if last != max_o => Some(format!(
                "{name}: D_NEXT_O_ID - 1 = {last}, max(O_ID) = {max_o} (no new-order rows)"
            )),
            _ => None,
        });
        c3.record(no.and_then(|n| {
            let span = n.max_o_id - n.min_o_id + 1;
            (span != n.count).then(|| {
                format!(
                    "{name}: max(NO_O_ID) - min(NO_O_ID) + 1 = {} - {} + 1 = {span} but {} new-order rows",
                    n.max_o_id, n.min_o_id, n.count
                )
            })
        }));
        let sum_ol = orders.get(&key).map_or(0, |o| o.sum_ol_cnt);
        let lines = ols.get(&key).copied().unwrap_or(0);
        c4.record(
            (sum_ol != lines)
                .then(|| format!("{name}: sum(O_OL_CNT) = {sum_ol} but {lines} order-line rows")),
        );
    }
    EndReport::new(EndCheck::TpccConsistency, vec![c1, c2, c3, c4])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::{load, TpccScale};

    fn base() -> TpccTotals {
        TpccTotals::of_rows(&load(TpccScale::default(), 1))
    }

    #[test]
    fn each_condition_catches_its_violation() {
        assert!(check_consistency(&base()).ok);

        let mut t = base();
        t.districts[3].ytd += 1234;
        let r = check_consistency(&t);
        assert!(!r.ok);
        let c1 = &r.conditions[0];
        assert_eq!((c1.ok, c1.violation_count, c1.checked), (false, 1, 2));
        assert!(
            c1.violations[0].contains("sum(D_YTD) 300012.34")
                && c1.violations[0].contains("-12.34"),
            "{}",
            c1.violations[0]
        );
        assert!(r.conditions[1..].iter().all(|c| c.ok));
        let text = r.to_string();
        assert!(
            text.starts_with("tpcc-consistency: 3 of 4 conditions hold (FAILED)"),
            "{text}"
        );
        assert!(
            text.contains("condition 1 failed (W_YTD = sum(D_YTD)) on 1 of 2"),
            "{text}"
        );

        let mut t = base();
        t.districts[0].next_o_id += 1;
        let r = check_consistency(&t);
        assert_eq!(
            r.conditions.iter().map(|c| c.ok).collect::<Vec<_>>(),
            [true, false, true, true]
        );

        let mut t = base();
        t.new_orders[0].count += 1;
        let r = check_consistency(&t);
        assert!(!r.conditions[2].ok && r.conditions[1].ok, "{r}");

        let mut t = base();
        t.order_lines[5].count -= 1;
        let r = check_consistency(&t);
        assert!(!r.conditions[3].ok, "{r}");
        assert_eq!(r.conditions[3].checked, 20);
    }

    #[test]
    fn districts_without_new_orders_check_condition_2_against_the_orders() {
        let mut t = base();
        t.new_orders.retain(|n| (n.w, n.d) != (1, 1));
        assert!(check_consistency(&t).ok);
        t.orders.retain(|o| (o.w, o.d) != (1, 1));
        t.order_lines.retain(|o| (o.w, o.d) != (1, 1));
        let r = check_consistency(&t);
        assert!(!r.conditions[1].ok, "{r}");
        assert!(r.conditions[1].violations[0].contains("(no new-order rows)"));
    }

    #[test]
    fn money_prints_cents() {
        assert_eq!(money(123_456), "1234.56");
        assert_eq!(money(-5), "-0.05");
        assert_eq!(money(0), "0.00");
    }

    #[test]
    fn many_violations_are_counted_but_few_shown() {
        let mut t = base();
        for d in &mut t.districts {
            d.next_o_id += 7;
        }
        let r = check_consistency(&t);
        let c2 = &r.conditions[1];
        assert_eq!(c2.violation_count, 20);
        assert_eq!(c2.violations.len(), crate::end::MAX_SHOWN);
        assert!(r.to_string().contains("... 15 more"));
    }
}
