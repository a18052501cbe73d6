//! `tpcc`: TPC-C-lite, a real application workload over eight tables
//! (TPC-C Standard Specification 5.11, scaled down).
//!
//! What it is for. The micro-workloads (`mini`, `blindw`, `range`,
//! `append`) find anomalies with as few operations as possible; TPC-C shows
//! whether they matter to an application. Its transactions read values and
//! decide what to write from them (the next order id, stock levels,
//! balances), exactly the read-modify-write pattern that lost updates and
//! write skew break, and it comes with consistency conditions on the data
//! (Clause 3.3.2) that hold whenever the transactions ran serializably (and
//! under snapshot isolation too: TPC-C is SI-robust, Fekete et al. 2005).
//! So a run gives two independent verdicts: the checker's, from the history,
//! and the conditions', from the final state.
//!
//! The tables: warehouse, district, customer, item, stock, orders,
//! new_order and order_line (TPC-C's HISTORY table is left out: nothing
//! reads it). Every row carries a unique write id column `wid`, set by each
//! insert and update. The executor records each row read or written as an
//! op on the key `table:pk` ([`TpccTable::key`], e.g. `stock:1:42`,
//! `district:1:3`, `order_line:1:3:17:5`) with the row's write id as the
//! value, so the history is an ordinary read/write history over string
//! keys: `["r", k, wid]` (`null` for an absent row), `["w", k, wid]` for an
//! update, `["i", k, wid]` for an insert and `["d", k, wid]` for Delivery's
//! delete of a new_order row. A predicate read over every order line of one
//! order is a range read `["rq", "order_line:w:d:o:", "order_line:w:d:o;",
//! rows]` (the `;` bound is the byte after `:`, so the range holds exactly
//! that order's lines).
//!
//! The five transactions, in the standard mix:
//!
//! | kind | share | reads and writes |
//! |---|---|---|
//! | `new-order` | 45% | r warehouse, r+w district (next order id), r customer, i order, i new_order, per line r item, r+w stock, i order_line; 1% name an unused item and roll back |
//! | `payment` | 43% | r+w warehouse, r+w district, r+w customer (15% of a remote warehouse) |
//! | `order-status` | 4% | r customer, r its newest order, rq that order's lines |
//! | `delivery` | 4% | per district: r oldest new_order, d it, r+w order, rq+w its lines, r+w customer |
//! | `stock-level` | 4% | r district, rq the lines of its last 20 orders, r the stock of their items |
//!
//! Every write follows a read of the same row in the same transaction, or
//! inserts a fresh key, so the checker knows each key's version order.
//!
//! Scale ([`TpccScale`], flags `--warehouses`, `--districts`,
//! `--customers`, `--items`, `--orders`): 2 warehouses × 10 districts × 30
//! customers, 100 items and 3 initial orders per district by default, so a
//! run of a few hundred transactions is fast to load and heavily contended.
//! Warehouse, district, customer and item are drawn from the shared key
//! distribution (`--dist`, default uniform) instead of TPC-C's NURand, so
//! the same skew knobs as every other workload apply. The initial
//! population is the workload's [`Workload::prelude`]: one transaction of
//! inserts, recorded as the history's first transaction, its write ids from
//! [`LOADER_CLIENT`], its values drawn from the seed.
//!
//! Simplifications, all in the direction of fewer statements: no HISTORY
//! table, no customer lookup by last name, no text columns; money is in
//! integer cents and rates in basis points, so the conditions compare
//! exactly. Delivery deletes new_order rows (TPC-C does); no later
//! transaction reads a deleted row by its key (only "the oldest row",
//! which a deleted row never is), so the deletes never need tombstones.
//! Where TPC-C reads a whole predicate the history records what can be
//! recorded exactly: Delivery's "oldest new order" and Order-Status's
//! "newest order of a customer" as point reads of the row found.

mod consistency;
pub mod scale;

pub use scale::TpccScale;

use std::sync::Arc;

use history::Key;
use rand::RngExt;

use crate::config::WorkloadConfig;
use crate::error::WorkloadError;
use crate::keys::KeySampler;
use crate::{
    client_rng, ClientPlans, EndCheck, Plan, Schema, Seat, Step, Workload, WriteIdBlock, WriteIds,
    LOADER_CLIENT,
};

pub use consistency::{
    check_consistency, DistrictTotals, NewOrderTotals, OrderLineTotals, OrderTotals, TpccTotals,
    WarehouseTotals,
};

/// The fewest lines of a New-Order (TPC-C 2.4.1.3).
pub const MIN_OL_CNT: u32 = 5;
/// The most lines of a New-Order; Delivery reserves write ids for this many.
pub const MAX_OL_CNT: u32 = 15;
/// How many of a district's newest orders Stock-Level looks at (2.8.2.2).
pub const STOCK_LEVEL_ORDERS: i64 = 20;
/// TPC-C's carrier ids are 1..=10; 0 in `o_carrier_id` means undelivered.
pub const CARRIERS: i64 = 10;
/// Write ids a Delivery reserves per district: the new_order delete, the
/// order, up to [`MAX_OL_CNT`] lines and the customer.
pub const DELIVERY_WIDS_PER_DISTRICT: u32 = 3 + MAX_OL_CNT;

/// The transaction kinds with their share of the mix (TPC-C 5.2.3), in
/// percent.
pub const MIX: [(&str, f64); 5] = [
    ("new-order", 45.0),
    ("payment", 43.0),
    ("order-status", 4.0),
    ("delivery", 4.0),
    ("stock-level", 4.0),
];

/// The plan kind of the initial population.
pub const LOAD_KIND: &str = "load";

impl TpccScale {
    /// The largest values accepted, so that every id fits the packed keys
    /// of in-process stores and the load stays one transaction.
    pub const MAX: TpccScale = TpccScale {
        warehouses: 1000,
        districts: 100,
        customers: 100_000,
        items: 1_000_000,
        orders: 10_000,
    };

    /// Checks every dimension against 1..=[`TpccScale::MAX`] (orders may be 0).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let m = TpccScale::MAX;
        let dims = [
            ("warehouses", self.warehouses, 1, m.warehouses),
            ("districts", self.districts, 1, m.districts),
            ("customers", self.customers, 1, m.customers),
            ("items", self.items, 1, m.items),
            ("orders", self.orders, 0, m.orders),
        ];
        for (name, v, lo, hi) in dims {
            if !(lo..=hi).contains(&v) {
                return Err(WorkloadError::BadConfig {
                    workload: "tpcc".into(),
                    reason: format!("{name} must be in {lo}..={hi} (got {v})"),
                });
            }
        }
        Ok(())
    }

    /// How many initial orders per district are still undelivered.
    pub fn undelivered(&self) -> u32 {
        (self.orders * 3).div_ceil(10)
    }
}

/// The eight tables, each with its key prefix in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TpccTable {
    Warehouse,
    District,
    Customer,
    Item,
    Stock,
    Orders,
    NewOrder,
    OrderLine,
}

impl TpccTable {
    /// Every table, in load order.
    pub const ALL: [TpccTable; 8] = [
        TpccTable::Warehouse,
        TpccTable::District,
        TpccTable::Customer,
        TpccTable::Item,
        TpccTable::Stock,
        TpccTable::Orders,
        TpccTable::NewOrder,
        TpccTable::OrderLine,
    ];

    /// The key prefix in the history (`order`, not the SQL name `orders`).
    pub fn name(self) -> &'static str {
        match self {
            TpccTable::Warehouse => "warehouse",
            TpccTable::District => "district",
            TpccTable::Customer => "customer",
            TpccTable::Item => "item",
            TpccTable::Stock => "stock",
            TpccTable::Orders => "order",
            TpccTable::NewOrder => "new_order",
            TpccTable::OrderLine => "order_line",
        }
    }

    /// How many leading columns form the primary key.
    pub fn pk_len(self) -> usize {
        match self {
            TpccTable::Warehouse | TpccTable::Item => 1,
            TpccTable::District | TpccTable::Stock => 2,
            TpccTable::Customer | TpccTable::Orders | TpccTable::NewOrder => 3,
            TpccTable::OrderLine => 4,
        }
    }

    /// How many columns a row has, write id last (the column order of the
    /// table's insert statement; see [`LoadRow`]).
    pub fn columns(self) -> usize {
        match self {
            TpccTable::Warehouse => 4,
            TpccTable::District => 6,
            TpccTable::Customer => 9,
            TpccTable::Item => 3,
            TpccTable::Stock => 7,
            TpccTable::Orders => 8,
            TpccTable::NewOrder => 4,
            TpccTable::OrderLine => 10,
        }
    }

    /// The history key of the row with primary key `pk`: `name:pk1:pk2…`.
    pub fn key(self, pk: &[i64]) -> Key {
        use std::fmt::Write as _;
        let mut s = String::with_capacity(24);
        s.push_str(self.name());
        for p in pk {
            let _ = write!(s, ":{p}");
        }
        Key::str(&s)
    }

    /// The inclusive key range holding exactly the rows whose primary key
    /// starts with `prefix`: from `name:p1:…:pn:` to `name:p1:…:pn;` (`;`
    /// is the byte after `:`, and keys compare bytewise).
    pub fn prefix_range(self, prefix: &[i64]) -> (Key, Key) {
        let Key::Str(base) = self.key(prefix) else {
            unreachable!("tpcc keys are strings")
        };
        (Key::str(&format!("{base}:")), Key::str(&format!("{base};")))
    }
}

/// One row of the initial population: its table and its column values in
/// the order of [`TpccTable::columns`], primary key first, write id last.
///
/// | table | columns |
/// |---|---|
/// | warehouse | w_id, w_tax, w_ytd, wid |
/// | district | d_w_id, d_id, d_tax, d_ytd, d_next_o_id, wid |
/// | customer | c_w_id, c_d_id, c_id, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, wid |
/// | item | i_id, i_price, wid |
/// | stock | s_w_id, s_i_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid |
/// | orders | o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local, wid |
/// | new_order | no_w_id, no_d_id, no_o_id, wid |
/// | order_line | ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d, wid |
///
/// Money is in cents, tax and discount in basis points; 0 in
/// `o_carrier_id` and `ol_delivery_d` means "not delivered".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadRow {
    /// The table.
    pub table: TpccTable,
    /// The column values, write id last.
    pub values: Vec<i64>,
}

impl LoadRow {
    /// The row's primary key columns.
    pub fn pk(&self) -> &[i64] {
        &self.values[..self.table.pk_len()]
    }

    /// The row's write id.
    pub fn wid(&self) -> i64 {
        *self.values.last().expect("a row has columns")
    }
}

/// One line of a New-Order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInput {
    /// The item; an id above the item count is TPC-C's "unused item",
    /// which makes the transaction roll back.
    pub item: i64,
    /// The warehouse that supplies it (1% remote when there are several).
    pub supply_w: i64,
    /// 1..=10.
    pub quantity: i64,
}

/// New-Order (TPC-C 2.4): takes the district's next order id, inserts the
/// order, its new_order row and its lines, and takes the items from stock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrder {
    pub w: i64,
    pub d: i64,
    pub c: i64,
    pub lines: Vec<LineInput>,
    /// 1 (district) + 2 (order, new_order) + 2 per line (stock, order_line).
    pub wids: WriteIdBlock,
}

/// Payment (TPC-C 2.5): adds the amount to the warehouse's and district's
/// year-to-date and takes it from the customer's balance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    pub w: i64,
    pub d: i64,
    /// The customer's warehouse and district (15% remote).
    pub c_w: i64,
    pub c_d: i64,
    pub c: i64,
    /// In cents, 1.00..=5000.00.
    pub amount: i64,
    /// warehouse, district, customer.
    pub wids: WriteIdBlock,
}

/// Order-Status (TPC-C 2.6): a customer, their newest order and its lines;
/// read-only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatus {
    pub w: i64,
    pub d: i64,
    pub c: i64,
}

/// Delivery (TPC-C 2.7): in every district of the warehouse, delivers the
/// oldest undelivered order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub w: i64,
    /// How many districts the warehouse has (all are visited).
    pub districts: i64,
    /// 1..=10.
    pub carrier: i64,
    /// The delivery "date" written to the order lines: the client's
    /// transaction number, so it is deterministic and never 0.
    pub delivery_d: i64,
    /// [`DELIVERY_WIDS_PER_DISTRICT`] per district.
    pub wids: WriteIdBlock,
}

/// Stock-Level (TPC-C 2.8): how many items of the district's last 20
/// orders are below `threshold` in stock; read-only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockLevel {
    pub w: i64,
    pub d: i64,
    /// 10..=20.
    pub threshold: i64,
}

/// A TPC-C transaction with its inputs, as a plan carries it; the adapter's
/// executor turns it into statements and records what it read and wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TpccTxn {
    /// The initial population: insert every row.
    Load(Vec<LoadRow>),
    NewOrder(NewOrder),
    Payment(Payment),
    OrderStatus(OrderStatus),
    Delivery(Delivery),
    StockLevel(StockLevel),
}

impl TpccTxn {
    /// The transaction's kind, as plans and reports name it.
    pub fn kind(&self) -> &'static str {
        match self {
            TpccTxn::Load(_) => LOAD_KIND,
            TpccTxn::NewOrder(_) => MIX[0].0,
            TpccTxn::Payment(_) => MIX[1].0,
            TpccTxn::OrderStatus(_) => MIX[2].0,
            TpccTxn::Delivery(_) => MIX[3].0,
            TpccTxn::StockLevel(_) => MIX[4].0,
        }
    }

    /// The write ids the transaction may use (the load's are in its rows).
    pub fn wids(&self) -> Option<WriteIdBlock> {
        match self {
            TpccTxn::NewOrder(t) => Some(t.wids),
            TpccTxn::Payment(t) => Some(t.wids),
            TpccTxn::Delivery(t) => Some(t.wids),
            TpccTxn::Load(_) | TpccTxn::OrderStatus(_) | TpccTxn::StockLevel(_) => None,
        }
    }
}

struct Shared {
    seed: u64,
    scale: TpccScale,
    warehouses: KeySampler,
    districts: KeySampler,
    customers: KeySampler,
    items: KeySampler,
    /// Cumulative share of each kind of [`MIX`], the last one 1.0.
    cumulative: [f64; 5],
}

/// The `tpcc` workload.
pub struct Tpcc {
    shared: Arc<Shared>,
}

impl Tpcc {
    /// Checks the scale and sets up one sampler per id space; refuses
    /// variants and `read_ratio` (the mix is TPC-C's).
    pub fn new(cfg: &WorkloadConfig) -> Result<Tpcc, WorkloadError> {
        cfg.variant_index("tpcc", &[])?;
        if cfg.read_ratio.is_some() {
            return Err(WorkloadError::BadConfig {
                workload: "tpcc".into(),
                reason: "read_ratio is not used: the mix is TPC-C's 45/43/4/4/4".into(),
            });
        }
        let scale = cfg.tpcc;
        scale.validate()?;
        let sampler = |n: u32| KeySampler::new(cfg.dist, u64::from(n));
        let mut cumulative = [0.0; 5];
        let mut acc = 0.0;
        for (c, (_, pct)) in cumulative.iter_mut().zip(MIX) {
            acc += pct / 100.0;
            *c = acc;
        }
        cumulative[4] = 1.0;
        Ok(Tpcc {
            shared: Arc::new(Shared {
                seed: cfg.seed,
                scale,
                warehouses: sampler(scale.warehouses)?,
                districts: sampler(scale.districts)?,
                customers: sampler(scale.customers)?,
                items: sampler(scale.items)?,
                cumulative,
            }),
        })
    }

    /// The scale this workload runs at.
    pub fn scale(&self) -> TpccScale {
        self.shared.scale
    }

    /// The initial population, deterministic in the seed.
    pub fn load(&self) -> Vec<LoadRow> {
        load(self.shared.scale, self.shared.seed)
    }
}

/// Builds the initial population (TPC-C 4.3.3.1, scaled): W_YTD is the sum
/// of its districts' D_YTD, D_NEXT_O_ID follows the initial orders, and the
/// last 30% of them are undelivered with new_order rows, so consistency
/// conditions 1–4 hold from the start.
pub fn load(scale: TpccScale, seed: u64) -> Vec<LoadRow> {
    let mut rng = client_rng(seed, LOADER_CLIENT, "tpcc");
    let mut ids = WriteIds::new(LOADER_CLIENT);
    let mut rows = Vec::new();
    let mut push = |table: TpccTable, mut values: Vec<i64>, ids: &mut WriteIds| {
        values.push(ids.next_value());
        debug_assert_eq!(values.len(), table.columns());
        rows.push(LoadRow { table, values });
    };
    let (nw, nd, nc, ni, no) = (
        i64::from(scale.warehouses),
        i64::from(scale.districts),
        i64::from(scale.customers),
        i64::from(scale.items),
        i64::from(scale.orders),
    );
    let delivered = no - i64::from(scale.undelivered());
    const D_YTD: i64 = 3_000_000; // 30 000.00
    for i in 1..=ni {
        let price = rng.random_range(100..=10_000);
        push(TpccTable::Item, vec![i, price], &mut ids);
    }
    for w in 1..=nw {
        let tax = rng.random_range(0..=2000);
        push(TpccTable::Warehouse, vec![w, tax, D_YTD * nd], &mut ids);
        for i in 1..=ni {
            let qty = rng.random_range(10..=100);
            push(TpccTable::Stock, vec![w, i, qty, 0, 0, 0], &mut ids);
        }
        for d in 1..=nd {
            let tax = rng.random_range(0..=2000);
            push(
                TpccTable::District,
                vec![w, d, tax, D_YTD, no + 1],
                &mut ids,
            );
            for c in 1..=nc {
                let discount = rng.random_range(0..=5000);
                push(
                    TpccTable::Customer,
                    vec![w, d, c, discount, -1000, 1000, 1, 0],
                    &mut ids,
                );
            }
            for o in 1..=no {
                let c = rng.random_range(1..=nc);
                let done = o <= delivered;
                let carrier = if done {
                    rng.random_range(1..=CARRIERS)
                } else {
                    0
                };
                let ol_cnt = i64::from(rng.random_range(MIN_OL_CNT..=MAX_OL_CNT));
                push(
                    TpccTable::Orders,
                    vec![w, d, o, c, carrier, ol_cnt, 1],
                    &mut ids,
                );
                for n in 1..=ol_cnt {
                    let item = rng.random_range(1..=ni);
                    let (amount, when) = if done {
                        (0, 1)
                    } else {
                        (rng.random_range(1..=999_999), 0)
                    };
                    push(
                        TpccTable::OrderLine,
                        vec![w, d, o, n, item, w, 5, amount, when],
                        &mut ids,
                    );
                }
                if !done {
                    push(TpccTable::NewOrder, vec![w, d, o], &mut ids);
                }
            }
        }
    }
    rows
}

impl Workload for Tpcc {
    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn schema(&self) -> Schema {
        Schema::Tpcc
    }

    fn client(&self, client: u32) -> Box<dyn ClientPlans> {
        Box::new(TpccClient {
            seat: Seat::new(&self.shared, self.shared.seed, client, "tpcc"),
            seq: 0,
            items: Vec::with_capacity(MAX_OL_CNT as usize),
        })
    }

    fn prelude(&self) -> Option<Plan> {
        Some(Plan {
            kind: LOAD_KIND,
            steps: vec![Step::Tpcc(Box::new(TpccTxn::Load(self.load())))],
        })
    }

    fn end_check(&self) -> Option<EndCheck> {
        Some(EndCheck::TpccConsistency)
    }

    /// None: TPC-C's rows are `table:pk` keys its transactions reach
    /// through programs, not plain reads, and its end-of-run check
    /// ([`Workload::end_check`]) already reads the final state of every
    /// table once the faults have healed.
    fn final_reads(&self, _written: &[Key]) -> Vec<Plan> {
        Vec::new()
    }
}

struct TpccClient {
    seat: Seat<Shared>,
    /// Transactions generated so far (Delivery's date).
    seq: i64,
    items: Vec<u64>,
}

impl TpccClient {
    fn pick(&mut self, s: &KeySampler) -> i64 {
        s.sample(&mut self.seat.rng) as i64 + 1
    }

    /// A warehouse other than `home`, uniformly (TPC-C's remote choice).
    fn other_warehouse(&mut self, home: i64) -> i64 {
        let n = i64::from(self.seat.shared.scale.warehouses);
        let r = self.seat.rng.random_range(1..n);
        if r >= home {
            r + 1
        } else {
            r
        }
    }

    fn new_order(&mut self, w: i64) -> TpccTxn {
        let shared = Arc::clone(&self.seat.shared);
        let d = self.pick(&shared.districts);
        let c = self.pick(&shared.customers);
        let ol_cnt = self.seat.rng.random_range(MIN_OL_CNT..=MAX_OL_CNT) as usize;
        // Distinct items, so a transaction updates each stock row once.
        shared
            .items
            .sample_distinct(&mut self.seat.rng, ol_cnt, &mut self.items);
        let multi = shared.scale.warehouses > 1;
        let mut lines: Vec<LineInput> = Vec::with_capacity(self.items.len());
        for i in 0..self.items.len() {
            let supply_w = if multi && self.seat.rng.random_bool(0.01) {
                self.other_warehouse(w)
            } else {
                w
            };
            lines.push(LineInput {
                item: self.items[i] as i64 + 1,
                supply_w,
                quantity: self.seat.rng.random_range(1..=10),
            });
        }
        // In a fixed order, so that two New-Orders lock stock rows in the
        // same order and do not deadlock each other (TPC-C leaves it open).
        lines.sort_unstable_by_key(|l| (l.supply_w, l.item));
        // 1% name an unused item in their last line and roll back (2.4.1.4).
        if self.seat.rng.random_bool(0.01) {
            if let Some(last) = lines.last_mut() {
                last.item = i64::from(shared.scale.items) + 1;
            }
        }
        let wids = self.seat.ids.reserve(3 + 2 * lines.len() as u32);
        TpccTxn::NewOrder(NewOrder {
            w,
            d,
            c,
            lines,
            wids,
        })
    }

    fn payment(&mut self, w: i64) -> TpccTxn {
        let shared = Arc::clone(&self.seat.shared);
        let d = self.pick(&shared.districts);
        let (c_w, c_d) = if shared.scale.warehouses > 1 && self.seat.rng.random_bool(0.15) {
            let cw = self.other_warehouse(w);
            (cw, self.pick(&shared.districts))
        } else {
            (w, d)
        };
        let c = self.pick(&shared.customers);
        TpccTxn::Payment(Payment {
            w,
            d,
            c_w,
            c_d,
            c,
            amount: self.seat.rng.random_range(100..=500_000),
            wids: self.seat.ids.reserve(3),
        })
    }
}

impl ClientPlans for TpccClient {
    fn next_plan(&mut self) -> Plan {
        let shared = Arc::clone(&self.seat.shared);
        self.seq += 1;
        let u: f64 = self.seat.rng.random();
        let kind = shared.cumulative.iter().position(|&c| u < c).unwrap_or(4);
        let w = self.pick(&shared.warehouses);
        let txn = match kind {
            0 => self.new_order(w),
            1 => self.payment(w),
            2 => TpccTxn::OrderStatus(OrderStatus {
                w,
                d: self.pick(&shared.districts),
                c: self.pick(&shared.customers),
            }),
            3 => TpccTxn::Delivery(Delivery {
                w,
                districts: i64::from(shared.scale.districts),
                carrier: self.seat.rng.random_range(1..=CARRIERS),
                delivery_d: self.seq,
                wids: self
                    .seat
                    .ids
                    .reserve(DELIVERY_WIDS_PER_DISTRICT * shared.scale.districts),
            }),
            _ => TpccTxn::StockLevel(StockLevel {
                w,
                d: self.pick(&shared.districts),
                threshold: self.seat.rng.random_range(10..=20),
            }),
        };
        Plan {
            kind: txn.kind(),
            steps: vec![Step::Tpcc(Box::new(txn))],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap, HashSet};

    fn tpcc() -> Tpcc {
        Tpcc::new(&WorkloadConfig::for_workload("tpcc").unwrap()).unwrap()
    }

    fn txn(p: &Plan) -> &TpccTxn {
        match p.steps.as_slice() {
            [Step::Tpcc(t)] => t,
            other => panic!("not one tpcc step: {other:?}"),
        }
    }

    #[test]
    fn the_mix_is_tpccs() {
        let w = tpcc();
        let mut c = w.client(3);
        let n = 50_000;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for _ in 0..n {
            let p = c.next_plan();
            assert_eq!(p.kind, txn(&p).kind());
            *seen.entry(p.kind).or_default() += 1;
        }
        for (kind, pct) in MIX {
            let share = seen[kind] as f64 / n as f64;
            assert!((share - pct / 100.0).abs() < 0.01, "{kind}: {share}");
        }
    }

    #[test]
    fn inputs_stay_in_the_scale_and_reserve_enough_write_ids() {
        let w = tpcc();
        let s = w.scale();
        let (nw, nd, nc, ni) = (
            i64::from(s.warehouses),
            i64::from(s.districts),
            i64::from(s.customers),
            i64::from(s.items),
        );
        let mut c = w.client(0);
        let (mut remote_pay, mut rollbacks, mut new_orders) = (0, 0, 0);
        for _ in 0..20_000 {
            let p = c.next_plan();
            match txn(&p) {
                TpccTxn::NewOrder(t) => {
                    new_orders += 1;
                    assert!((1..=nw).contains(&t.w) && (1..=nd).contains(&t.d));
                    assert!((1..=nc).contains(&t.c));
                    let n = t.lines.len() as u32;
                    assert!((MIN_OL_CNT..=MAX_OL_CNT).contains(&n), "{n}");
                    assert_eq!(t.wids.len, 3 + 2 * n);
                    let items: HashSet<i64> = t.lines.iter().map(|l| l.item).collect();
                    assert_eq!(items.len(), t.lines.len(), "distinct items");
                    for (i, l) in t.lines.iter().enumerate() {
                        assert!((1..=nw).contains(&l.supply_w));
                        assert!((1..=10).contains(&l.quantity));
                        if l.item == ni + 1 {
                            assert_eq!(i, t.lines.len() - 1, "only the last is unused");
                            rollbacks += 1;
                        } else {
                            assert!((1..=ni).contains(&l.item));
                        }
                    }
                }
                TpccTxn::Payment(t) => {
                    assert!((1..=nc).contains(&t.c) && (100..=500_000).contains(&t.amount));
                    assert_eq!(t.wids.len, 3);
                    if t.c_w != t.w {
                        remote_pay += 1;
                    }
                }
                TpccTxn::Delivery(t) => {
                    assert!((1..=CARRIERS).contains(&t.carrier) && t.delivery_d > 0);
                    assert_eq!(t.wids.len, DELIVERY_WIDS_PER_DISTRICT * s.districts);
                }
                TpccTxn::OrderStatus(t) => assert!((1..=nc).contains(&t.c)),
                TpccTxn::StockLevel(t) => assert!((10..=20).contains(&t.threshold)),
                TpccTxn::Load(_) => panic!("clients never load"),
            }
        }
        let payments = 20_000.0 * 0.43;
        assert!(
            (remote_pay as f64 / payments - 0.15).abs() < 0.03,
            "{remote_pay}"
        );
        assert!(rollbacks > 0 && (rollbacks as f64) < new_orders as f64 * 0.03);
    }

    #[test]
    fn the_load_satisfies_the_consistency_conditions_and_has_unique_keys() {
        let scale = TpccScale {
            warehouses: 3,
            districts: 4,
            customers: 5,
            items: 7,
            orders: 10,
        };
        let rows = load(scale, 9);
        let mut per: BTreeMap<TpccTable, usize> = BTreeMap::new();
        let mut keys = HashSet::new();
        let mut wids = HashSet::new();
        for r in &rows {
            assert_eq!(r.values.len(), r.table.columns(), "{r:?}");
            *per.entry(r.table).or_default() += 1;
            assert!(keys.insert(r.table.key(r.pk())), "{r:?}");
            assert!(wids.insert(r.wid()));
            assert_eq!(r.wid() >> 32, i64::from(LOADER_CLIENT));
        }
        assert_eq!(per[&TpccTable::Warehouse], 3);
        assert_eq!(per[&TpccTable::District], 12);
        assert_eq!(per[&TpccTable::Customer], 60);
        assert_eq!(per[&TpccTable::Item], 7);
        assert_eq!(per[&TpccTable::Stock], 21);
        assert_eq!(per[&TpccTable::Orders], 120);
        assert_eq!(per[&TpccTable::NewOrder], 12 * 3);
        let totals = TpccTotals::of_rows(&rows);
        let r = check_consistency(&totals);
        assert!(r.ok, "{r}");
        assert_eq!(r.conditions.len(), 4);
        assert!(r.conditions.iter().all(|c| c.checked > 0));
        assert_eq!(load(scale, 9), rows, "deterministic in the seed");
        assert_ne!(load(scale, 10), rows);
    }

    #[test]
    fn keys_and_prefix_ranges() {
        assert_eq!(TpccTable::Stock.key(&[1, 42]), Key::str("stock:1:42"));
        assert_eq!(TpccTable::Orders.key(&[1, 3, 7]), Key::str("order:1:3:7"));
        let (lo, hi) = TpccTable::OrderLine.prefix_range(&[1, 3, 1]);
        let inside = TpccTable::OrderLine.key(&[1, 3, 1, 15]);
        assert!(lo <= inside && inside <= hi);
        for outside in [[1, 3, 10, 1], [1, 3, 12, 4], [1, 30, 1, 1], [1, 3, 0, 1]] {
            let k = TpccTable::OrderLine.key(&outside);
            assert!(k < lo || k > hi, "{k} in {lo}..={hi}");
        }
    }

    #[test]
    fn bad_scales_and_settings_are_refused() {
        let base = WorkloadConfig::for_workload("tpcc").unwrap();
        for scale in [
            TpccScale {
                warehouses: 0,
                ..TpccScale::default()
            },
            TpccScale {
                districts: 101,
                ..TpccScale::default()
            },
            TpccScale {
                items: 0,
                ..TpccScale::default()
            },
        ] {
            let cfg = WorkloadConfig {
                tpcc: scale,
                ..base.clone()
            };
            assert!(Tpcc::new(&cfg).is_err(), "{scale:?}");
        }
        let e = Tpcc::new(&WorkloadConfig {
            read_ratio: Some(0.5),
            ..base
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("45/43/4/4/4"), "{e}");
    }

    #[test]
    fn one_warehouse_never_goes_remote() {
        let w = Tpcc::new(&WorkloadConfig {
            tpcc: TpccScale {
                warehouses: 1,
                ..TpccScale::default()
            },
            ..WorkloadConfig::for_workload("tpcc").unwrap()
        })
        .unwrap();
        let mut c = w.client(1);
        for _ in 0..5_000 {
            match txn(&c.next_plan()) {
                TpccTxn::NewOrder(t) => assert!(t.lines.iter().all(|l| l.supply_w == 1)),
                TpccTxn::Payment(t) => assert_eq!((t.c_w, t.c_d), (t.w, t.d)),
                _ => {}
            }
        }
    }
}
