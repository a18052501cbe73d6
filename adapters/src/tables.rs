//! The names of the tables a run creates.
//!
//! Every run owns its tables: their names carry a suffix made of the run's
//! id and a random tag (`isoharness_registers_<runid>_<tag>`), so two runs
//! against one database never read or write each other's rows. The SQL of
//! the adapters is written with the base names ([`BASES`]); [`TableNames::render`]
//! rewrites them, whole words only, into the run's names. A suffix is made
//! of `[a-z0-9_]` only (it becomes part of identifiers that cannot be bound
//! as parameters) and keeps every name within PostgreSQL's 63 and MySQL's
//! 64 character limits.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use workloads::Schema;

use crate::error::AdapterError;

/// The base name of every table (and PostgreSQL index, whose names share
/// the schema's namespace) the adapters' SQL uses.
pub const BASES: [&str; 11] = [
    "isoharness_registers",
    "isoharness_lists",
    "tpcc_warehouse",
    "tpcc_district",
    "tpcc_customer",
    "tpcc_item",
    "tpcc_stock",
    "tpcc_orders",
    "tpcc_new_order",
    "tpcc_order_line",
    "tpcc_orders_customer",
];

/// The longest identifier the databases take (PostgreSQL: 63 bytes).
pub const MAX_IDENTIFIER: usize = 63;

/// The longest suffix: the longest base, `_`, the suffix fit in
/// [`MAX_IDENTIFIER`].
pub const MAX_SUFFIX: usize = MAX_IDENTIFIER - 20 - 1;

/// How many characters of the run id a suffix keeps (the rest is `_` and
/// the 8-character random tag).
const RUN_ID_CHARS: usize = MAX_SUFFIX - 9;

/// The tables of one run: the base names, or the base names with the run's
/// suffix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableNames {
    suffix: Option<String>,
}

/// The run id made fit for an identifier: lowercase, every character
/// outside `[a-z0-9_]` as `_`, runs of `_` collapsed, none at the ends, at
/// most `max` characters; `run` when nothing is left.
pub fn sanitize(id: &str, max: usize) -> String {
    let mut s = String::with_capacity(id.len());
    for c in id.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '_'
        };
        if c == '_' && (s.is_empty() || s.ends_with('_')) {
            continue;
        }
        s.push(c);
    }
    s.truncate(max);
    while s.ends_with('_') {
        s.pop();
    }
    if s.is_empty() {
        s.push_str("run");
    }
    s
}

/// Eight random lowercase hex digits, different on every call.
fn random_tag() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    std::process::id().hash(&mut h);
    COUNTER.fetch_add(1, Ordering::Relaxed).hash(&mut h);
    std::time::SystemTime::now().hash(&mut h);
    format!("{:08x}", h.finish() as u32)
}

impl TableNames {
    /// The base names, unchanged (for library users and tests that run
    /// alone on their database; `harness run` always uses [`Self::for_run`]).
    pub fn fixed() -> TableNames {
        TableNames { suffix: None }
    }

    /// The names of run `run_id`: its sanitized id and a random tag, so
    /// that two runs with the same id (e.g. started in the same second
    /// with different `--out` folders) still own different tables.
    pub fn for_run(run_id: &str) -> TableNames {
        TableNames {
            suffix: Some(format!(
                "{}_{}",
                sanitize(run_id, RUN_ID_CHARS),
                random_tag()
            )),
        }
    }

    /// The names with exactly this suffix (e.g. to reach a kept run's
    /// tables); refuses anything but 1 to [`MAX_SUFFIX`] characters of
    /// `[a-z0-9_]`.
    pub fn with_suffix(suffix: &str) -> Result<TableNames, AdapterError> {
        let ok = !suffix.is_empty()
            && suffix.len() <= MAX_SUFFIX
            && suffix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return Err(AdapterError::Config(format!(
                "table suffix {suffix:?} must be 1 to {MAX_SUFFIX} characters of [a-z0-9_]"
            )));
        }
        Ok(TableNames {
            suffix: Some(suffix.to_string()),
        })
    }

    /// The suffix, when there is one.
    pub fn suffix(&self) -> Option<&str> {
        self.suffix.as_deref()
    }

    /// The run's name of a table with base name `base`.
    pub fn name(&self, base: &str) -> String {
        match &self.suffix {
            None => base.to_string(),
            Some(s) => format!("{base}_{s}"),
        }
    }

    /// The tables (not indexes) `schema` needs, by their run's names.
    pub fn for_schema(&self, schema: &Schema) -> Vec<String> {
        let bases: &[&str] = match schema {
            Schema::Registers => &BASES[..1],
            Schema::Lists => &BASES[1..2],
            Schema::Tpcc => &BASES[2..10],
        };
        bases.iter().map(|b| self.name(b)).collect()
    }

    /// Every table any schema creates, by the run's names: what a run
    /// drops at its end.
    pub fn all_tables(&self) -> Vec<String> {
        BASES[..10].iter().map(|b| self.name(b)).collect()
    }

    /// The name of the run's database-level lock (advisory lock, GET_LOCK),
    /// at most 64 characters.
    pub fn lock_name(&self) -> String {
        format!("isoharness_{}", self.suffix.as_deref().unwrap_or("tables"))
    }

    /// [`Self::lock_name`] as a 64-bit key (PostgreSQL advisory locks):
    /// FNV-1a, the same in every process.
    pub fn lock_key(&self) -> i64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.lock_name().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h as i64
    }

    /// `sql` with every base name (whole words only) replaced by the run's
    /// name.
    pub fn render(&self, sql: &str) -> String {
        let Some(suffix) = &self.suffix else {
            return sql.to_string();
        };
        let mut out = String::with_capacity(sql.len() + 64);
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            out.push_str(word);
            if BASES.contains(&word.as_str()) {
                out.push('_');
                out.push_str(suffix);
            }
            word.clear();
        };
        for c in sql.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }
}

/// The rendered text of an adapter's static statements, made once per
/// connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rendered {
    names: TableNames,
    cache: HashMap<&'static str, Arc<str>>,
}

impl Rendered {
    pub(crate) fn new(names: TableNames) -> Rendered {
        Rendered {
            names,
            cache: HashMap::new(),
        }
    }

    /// The run's text of statement `sql`.
    pub(crate) fn get(&mut self, sql: &'static str) -> Arc<str> {
        let names = &self.names;
        Arc::clone(
            self.cache
                .entry(sql)
                .or_insert_with(|| Arc::from(names.render(sql))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(s: &str) -> bool {
        s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    }

    #[test]
    fn run_ids_are_sanitized_into_identifiers() {
        assert_eq!(
            sanitize("20240101T000000Z-postgres-mini-ser-2", 64),
            "20240101t000000z_postgres_mini_ser_2"
        );
        assert_eq!(sanitize("a; DROP TABLE x;--", 64), "a_drop_table_x");
        assert_eq!(sanitize("\"quoted\" `x`", 64), "quoted_x");
        assert_eq!(sanitize("Ünïcode—ids", 64), "n_code_ids");
        assert_eq!(sanitize("---", 64), "run");
        assert_eq!(sanitize("", 64), "run");
        assert_eq!(sanitize("abc-def", 4), "abc");
    }

    #[test]
    fn run_names_are_valid_short_and_distinct() {
        let id = "20991231T235959Z-yugabyte-append-strong-session-ser-999 ' OR 1=1";
        let a = TableNames::for_run(id);
        let b = TableNames::for_run(id);
        assert_ne!(a, b, "two runs with one id own different tables");
        for names in [&a, &b] {
            let s = names.suffix().unwrap();
            assert!(valid(s), "{s}");
            assert!(s.starts_with("20991231t235959z_yugabyte_append_"), "{s}");
            for base in BASES {
                let n = names.name(base);
                assert!(valid(&n) && n.len() <= MAX_IDENTIFIER, "{n}");
            }
            assert!(names.lock_name().len() <= 64);
        }
        assert_ne!(a.lock_key(), b.lock_key());
        assert_eq!(a.lock_key(), a.clone().lock_key());
    }

    #[test]
    fn suffixes_are_validated() {
        assert!(TableNames::with_suffix("abc_123").is_ok());
        for bad in ["", "ABC", "a-b", "a;b", "a b", &"x".repeat(MAX_SUFFIX + 1)] {
            assert!(TableNames::with_suffix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rendering_replaces_whole_table_names_only() {
        let n = TableNames::with_suffix("r1").unwrap();
        assert_eq!(
            n.render(
                "INSERT INTO isoharness_lists (k, v) VALUES ($1, $2) ON CONFLICT (k) \
                 DO UPDATE SET v = isoharness_lists.v || ',' || EXCLUDED.v"
            ),
            "INSERT INTO isoharness_lists_r1 (k, v) VALUES ($1, $2) ON CONFLICT (k) \
             DO UPDATE SET v = isoharness_lists_r1.v || ',' || EXCLUDED.v"
        );
        assert_eq!(
            n.render("CREATE INDEX tpcc_orders_customer ON tpcc_orders (o_w_id);"),
            "CREATE INDEX tpcc_orders_customer_r1 ON tpcc_orders_r1 (o_w_id);"
        );
        assert_eq!(
            n.render("SELECT no_o_id FROM tpcc_new_order, xtpcc_item"),
            "SELECT no_o_id FROM tpcc_new_order_r1, xtpcc_item"
        );
        let sql = "SELECT v FROM isoharness_registers";
        assert_eq!(TableNames::fixed().render(sql), sql);
        assert_eq!(
            n.for_schema(&Schema::Registers),
            vec!["isoharness_registers_r1"]
        );
        assert_eq!(n.for_schema(&Schema::Tpcc).len(), 8);
    }
}
