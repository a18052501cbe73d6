//! TPC-C-lite's scale: plain data that the workload configuration holds
//! (a leaf module).

/// How big the database is. Small by default: contention is what finds
/// isolation bugs, and the initial load is one recorded transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccScale {
    /// Warehouses (TPC-C's scale factor W).
    pub warehouses: u32,
    /// Districts per warehouse (TPC-C: 10).
    pub districts: u32,
    /// Customers per district (TPC-C: 3000).
    pub customers: u32,
    /// Items, and stock rows per warehouse (TPC-C: 100 000).
    pub items: u32,
    /// Orders per district in the initial population (TPC-C: 3000); the
    /// last 30% (rounded up) are undelivered and have new_order rows.
    pub orders: u32,
}

impl Default for TpccScale {
    fn default() -> TpccScale {
        TpccScale {
            warehouses: 2,
            districts: 10,
            customers: 30,
            items: 100,
            orders: 3,
        }
    }
}
