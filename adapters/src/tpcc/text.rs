//! The text of the TPC-C tables and statements, written once and rendered
//! per SQL dialect ([`Dialect`]): the dialects differ only in how they
//! write parameters (`$1`, `?1`, `?`), the integer type of the columns and
//! of a cast aggregate (`BIGINT`, `INTEGER`, `SIGNED`), what follows a
//! `CREATE TABLE` (`ENGINE=InnoDB`) and what runs before the tables are
//! made (a lock timeout). The texts use the base table names; the adapters
//! render them into the run's names ([`crate::tables`]) as for their
//! other statements.
//!
//! The canonical texts number their parameters `$1`, `$2`, … in the order
//! they appear, so that rendering them as plain `?` keeps their order.

use std::sync::OnceLock;

use workloads::tpcc::TpccTable;

use super::{Placeholders, TpccStmt};

/// What sets one dialect's TPC-C text apart.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    /// How parameters are written.
    pub placeholders: Placeholders,
    /// The type of every column (all are integers).
    pub int: &'static str,
    /// The type the sum of `TotalsOrders` is cast to, so that it comes
    /// back as a 64-bit integer (PostgreSQL's and MySQL's SUM of BIGINT is
    /// NUMERIC / DECIMAL).
    pub cast_int: &'static str,
    /// Appended to every `CREATE TABLE` (`""` for none).
    pub table_options: &'static str,
    /// Statements run before the tables are dropped and created.
    pub prologue: &'static [&'static str],
}

/// The eight tables: SQL name and columns in insert order, the primary key
/// first ([`TpccTable::pk_len`] of them).
const TABLES: [(TpccTable, &str, &[&str]); 8] = [
    (
        TpccTable::Warehouse,
        "tpcc_warehouse",
        &["w_id", "w_tax", "w_ytd", "wid"],
    ),
    (
        TpccTable::District,
        "tpcc_district",
        &["d_w_id", "d_id", "d_tax", "d_ytd", "d_next_o_id", "wid"],
    ),
    (
        TpccTable::Customer,
        "tpcc_customer",
        &[
            "c_w_id",
            "c_d_id",
            "c_id",
            "c_discount",
            "c_balance",
            "c_ytd_payment",
            "c_payment_cnt",
            "c_delivery_cnt",
            "wid",
        ],
    ),
    (TpccTable::Item, "tpcc_item", &["i_id", "i_price", "wid"]),
    (
        TpccTable::Stock,
        "tpcc_stock",
        &[
            "s_w_id",
            "s_i_id",
            "s_quantity",
            "s_ytd",
            "s_order_cnt",
            "s_remote_cnt",
            "wid",
        ],
    ),
    (
        TpccTable::Orders,
        "tpcc_orders",
        &[
            "o_w_id",
            "o_d_id",
            "o_id",
            "o_c_id",
            "o_carrier_id",
            "o_ol_cnt",
            "o_all_local",
            "wid",
        ],
    ),
    (
        TpccTable::NewOrder,
        "tpcc_new_order",
        &["no_w_id", "no_d_id", "no_o_id", "wid"],
    ),
    (
        TpccTable::OrderLine,
        "tpcc_order_line",
        &[
            "ol_w_id",
            "ol_d_id",
            "ol_o_id",
            "ol_number",
            "ol_i_id",
            "ol_supply_w_id",
            "ol_quantity",
            "ol_amount",
            "ol_delivery_d",
            "wid",
        ],
    ),
];

/// The index New-Order's customer lookup (Order-Status) uses.
const INDEX: &str =
    "CREATE INDEX tpcc_orders_customer ON tpcc_orders (o_w_id, o_d_id, o_c_id, o_id)";

/// The SQL name and columns of `table`.
fn table(t: TpccTable) -> (&'static str, &'static [&'static str]) {
    let (_, name, cols) = TABLES
        .iter()
        .find(|(x, _, _)| *x == t)
        .expect("every table is listed");
    (name, cols)
}

/// The canonical text of `stmt`: `$N` parameters, `{cast_int}` for the
/// cast type. The inserts are made from [`TABLES`].
fn canonical(stmt: TpccStmt) -> String {
    use TpccStmt::*;
    let text = match stmt {
        InsertWarehouse | InsertDistrict | InsertCustomer | InsertItem | InsertStock
        | InsertOrder | InsertNewOrder | InsertOrderLine => {
            let t = TpccTable::ALL
                .into_iter()
                .find(|&t| TpccStmt::insert(t) == stmt)
                .expect("an insert of a table");
            let (name, cols) = table(t);
            let params: Vec<String> = (1..=cols.len()).map(|i| format!("${i}")).collect();
            return format!(
                "INSERT INTO {name} ({}) VALUES ({})",
                cols.join(", "),
                params.join(", ")
            );
        }
        Warehouse => "SELECT w_tax, w_ytd, wid FROM tpcc_warehouse WHERE w_id = $1",
        District => {
            "SELECT d_tax, d_ytd, d_next_o_id, wid FROM tpcc_district \
             WHERE d_w_id = $1 AND d_id = $2"
        }
        Customer => {
            "SELECT c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, wid \
             FROM tpcc_customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3"
        }
        Item => "SELECT i_price, wid FROM tpcc_item WHERE i_id = $1",
        Stock => {
            "SELECT s_quantity, s_ytd, s_order_cnt, s_remote_cnt, wid FROM tpcc_stock \
             WHERE s_w_id = $1 AND s_i_id = $2"
        }
        Order => {
            "SELECT o_c_id, o_carrier_id, o_ol_cnt, wid FROM tpcc_orders \
             WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3"
        }
        LastOrder => {
            "SELECT o_id, o_carrier_id, o_ol_cnt, wid FROM tpcc_orders \
             WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1"
        }
        OldestNewOrder => {
            "SELECT no_o_id, wid FROM tpcc_new_order \
             WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1"
        }
        OrderLines => {
            "SELECT ol_number, ol_i_id, ol_amount, ol_delivery_d, wid FROM tpcc_order_line \
             WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 ORDER BY ol_number"
        }
        StockLevel => {
            "SELECT ol.ol_o_id, ol.ol_number, ol.wid, ol.ol_i_id, \
             COALESCE(s.s_quantity, 0), COALESCE(s.wid, 0) \
             FROM tpcc_order_line ol LEFT JOIN tpcc_stock s \
             ON s.s_w_id = ol.ol_w_id AND s.s_i_id = ol.ol_i_id \
             WHERE ol.ol_w_id = $1 AND ol.ol_d_id = $2 AND ol.ol_o_id >= $3 AND ol.ol_o_id < $4 \
             ORDER BY ol.ol_o_id, ol.ol_number"
        }
        SetWarehouseYtd => "UPDATE tpcc_warehouse SET w_ytd = $1, wid = $2 WHERE w_id = $3",
        SetDistrictYtd => {
            "UPDATE tpcc_district SET d_ytd = $1, wid = $2 WHERE d_w_id = $3 AND d_id = $4"
        }
        SetDistrictNextOId => {
            "UPDATE tpcc_district SET d_next_o_id = $1, wid = $2 \
             WHERE d_w_id = $3 AND d_id = $4"
        }
        SetCustomerPayment => {
            "UPDATE tpcc_customer SET c_balance = $1, c_ytd_payment = $2, \
             c_payment_cnt = $3, wid = $4 WHERE c_w_id = $5 AND c_d_id = $6 AND c_id = $7"
        }
        SetCustomerDelivery => {
            "UPDATE tpcc_customer SET c_balance = $1, c_delivery_cnt = $2, wid = $3 \
             WHERE c_w_id = $4 AND c_d_id = $5 AND c_id = $6"
        }
        SetStock => {
            "UPDATE tpcc_stock SET s_quantity = $1, s_ytd = $2, s_order_cnt = $3, \
             s_remote_cnt = $4, wid = $5 WHERE s_w_id = $6 AND s_i_id = $7"
        }
        SetOrderCarrier => {
            "UPDATE tpcc_orders SET o_carrier_id = $1, wid = $2 \
             WHERE o_w_id = $3 AND o_d_id = $4 AND o_id = $5"
        }
        SetOrderLineDelivery => {
            "UPDATE tpcc_order_line SET ol_delivery_d = $1, wid = $2 \
             WHERE ol_w_id = $3 AND ol_d_id = $4 AND ol_o_id = $5 AND ol_number = $6"
        }
        DeleteNewOrder => {
            "DELETE FROM tpcc_new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3"
        }
        TotalsWarehouses => "SELECT w_id, w_ytd FROM tpcc_warehouse ORDER BY w_id",
        TotalsDistricts => {
            "SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM tpcc_district ORDER BY d_w_id, d_id"
        }
        TotalsOrders => {
            "SELECT o_w_id, o_d_id, MAX(o_id), CAST(SUM(o_ol_cnt) AS {cast_int}), COUNT(*) \
             FROM tpcc_orders GROUP BY o_w_id, o_d_id ORDER BY o_w_id, o_d_id"
        }
        TotalsNewOrders => {
            "SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), COUNT(*) \
             FROM tpcc_new_order GROUP BY no_w_id, no_d_id ORDER BY no_w_id, no_d_id"
        }
        TotalsOrderLines => {
            "SELECT ol_w_id, ol_d_id, COUNT(*) FROM tpcc_order_line \
             GROUP BY ol_w_id, ol_d_id ORDER BY ol_w_id, ol_d_id"
        }
    };
    text.to_string()
}

/// `text` with its `$N` parameters written in `style`.
fn placeholders(text: &str, style: Placeholders) -> String {
    let numbered = match style {
        Placeholders::Dollar => return text.to_string(),
        Placeholders::QuestionNumbered => true,
        Placeholders::Question => false,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' || !chars.peek().is_some_and(char::is_ascii_digit) {
            out.push(c);
            continue;
        }
        out.push('?');
        while let Some(d) = chars.next_if(char::is_ascii_digit) {
            if numbered {
                out.push(d);
            }
        }
    }
    out
}

impl Dialect {
    /// The text of `stmt` in this dialect.
    pub fn render(&self, stmt: TpccStmt) -> String {
        let text = canonical(stmt).replace("{cast_int}", self.cast_int);
        placeholders(&text, self.placeholders)
    }

    /// The statements that drop and create the eight tables and the index,
    /// one statement each, after the prologue.
    pub fn setup(&self) -> Vec<String> {
        let mut out: Vec<String> = self.prologue.iter().map(|s| s.to_string()).collect();
        for (_, name, _) in TABLES {
            out.push(format!("DROP TABLE IF EXISTS {name}"));
        }
        for (t, name, cols) in TABLES {
            let cols: Vec<String> = cols
                .iter()
                .map(|c| format!("{c} {} NOT NULL", self.int))
                .collect();
            let pk = &cols[..t.pk_len()];
            let pk: Vec<&str> = pk.iter().map(|c| &c[..c.find(' ').unwrap()]).collect();
            out.push(format!(
                "CREATE TABLE {name} ({}, PRIMARY KEY ({})){}",
                cols.join(", "),
                pk.join(", "),
                self.table_options
            ));
            if t == TpccTable::Orders {
                out.push(INDEX.to_string());
            }
        }
        out
    }
}

/// A dialect's rendered texts, made on first use and kept for the process
/// (so they are `&'static str`, like the adapters' other statements).
pub struct Texts {
    dialect: Dialect,
    stmts: OnceLock<Vec<String>>,
    setup: OnceLock<Vec<String>>,
    setup_refs: OnceLock<Vec<&'static str>>,
    script: OnceLock<String>,
}

impl Texts {
    /// The texts of `dialect` (nothing rendered yet).
    pub const fn new(dialect: Dialect) -> Texts {
        Texts {
            dialect,
            stmts: OnceLock::new(),
            setup: OnceLock::new(),
            setup_refs: OnceLock::new(),
            script: OnceLock::new(),
        }
    }

    /// The text of `stmt`.
    pub fn sql(&'static self, stmt: TpccStmt) -> &'static str {
        let all = self
            .stmts
            .get_or_init(|| TpccStmt::ALL.map(|s| self.dialect.render(s)).to_vec());
        &all[stmt as usize]
    }

    /// The statements that drop and create the tables, one each.
    pub fn setup(&'static self) -> &'static [&'static str] {
        self.setup_refs.get_or_init(|| {
            let owned = self.setup.get_or_init(|| self.dialect.setup());
            owned.iter().map(String::as_str).collect()
        })
    }

    /// [`Texts::setup`] as one script, the statements separated by `;`.
    pub fn script(&'static self) -> &'static str {
        self.script
            .get_or_init(|| format!("{};", self.setup().join(";\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statements_are_listed_in_declaration_order() {
        for (i, s) in TpccStmt::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i, "{s:?}");
        }
    }

    #[test]
    fn the_tables_match_the_workload() {
        for (i, (t, name, cols)) in TABLES.iter().enumerate() {
            assert_eq!(*t, TpccTable::ALL[i]);
            assert_eq!(cols.len(), t.columns(), "{name}");
            assert_eq!(cols.last(), Some(&"wid"), "{name}");
            assert!(crate::tables::BASES.contains(name), "{name}");
        }
    }

    /// Parameters are numbered in the order they appear, each once, so
    /// plain `?` keeps their order.
    #[test]
    fn canonical_parameters_appear_in_order() {
        for stmt in TpccStmt::ALL {
            let text = canonical(stmt);
            let nums: Vec<usize> = text
                .split('$')
                .skip(1)
                .map(|s| {
                    let d: String = s.chars().take_while(char::is_ascii_digit).collect();
                    d.parse().unwrap()
                })
                .collect();
            assert_eq!(nums, (1..=stmt.params()).collect::<Vec<_>>(), "{stmt:?}");
        }
    }

    #[test]
    fn placeholders_are_rewritten_per_style() {
        let t = "a = $1 AND b = $10, c = '$x'";
        assert_eq!(placeholders(t, Placeholders::Dollar), t);
        assert_eq!(
            placeholders(t, Placeholders::QuestionNumbered),
            "a = ?1 AND b = ?10, c = '$x'"
        );
        assert_eq!(
            placeholders(t, Placeholders::Question),
            "a = ? AND b = ?, c = '$x'"
        );
    }

    #[test]
    fn the_setup_drops_and_creates_every_table() {
        let d = Dialect {
            placeholders: Placeholders::Question,
            int: "BIGINT",
            cast_int: "SIGNED",
            table_options: " ENGINE=InnoDB",
            prologue: &["SET x = 1"],
        };
        let s = d.setup();
        assert_eq!(s.len(), 1 + 8 + 8 + 1);
        assert_eq!(s[0], "SET x = 1");
        assert_eq!(s[1], "DROP TABLE IF EXISTS tpcc_warehouse");
        assert_eq!(
            s[9],
            "CREATE TABLE tpcc_warehouse (w_id BIGINT NOT NULL, w_tax BIGINT NOT NULL, \
             w_ytd BIGINT NOT NULL, wid BIGINT NOT NULL, PRIMARY KEY (w_id)) ENGINE=InnoDB"
        );
        assert!(s[14].starts_with("CREATE TABLE tpcc_orders ("), "{}", s[14]);
        assert!(
            s[14].contains("PRIMARY KEY (o_w_id, o_d_id, o_id))"),
            "{}",
            s[14]
        );
        assert_eq!(s[15], INDEX);
        assert!(
            s[17].contains("PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))"),
            "{}",
            s[17]
        );
        assert_eq!(
            d.render(TpccStmt::InsertItem),
            "INSERT INTO tpcc_item (i_id, i_price, wid) VALUES (?, ?, ?)"
        );
        assert!(d
            .render(TpccStmt::TotalsOrders)
            .contains("CAST(SUM(o_ol_cnt) AS SIGNED)"));
    }
}
