//! Why a workload could not be built: each message fits on one line and says
//! what would have been accepted.

use thiserror::Error;

/// A workload configuration the generators refuse, with the accepted choices.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum WorkloadError {
    /// `--workload` named no workload this crate knows.
    #[error("unknown workload `{name}` (valid: {valid})")]
    UnknownWorkload { name: String, valid: String },
    /// The variant does not exist for this workload.
    #[error("unknown variant `{variant}` for workload `{workload}` (valid: {valid})")]
    UnknownVariant {
        workload: String,
        variant: String,
        valid: String,
    },
    /// A variant was given to a workload that has none.
    #[error("workload `{workload}` has no variants (got `{variant}`)")]
    NoVariants { workload: String, variant: String },
    /// A key distribution spec that does not parse or has out-of-range
    /// parameters.
    #[error(
        "bad key distribution `{spec}`: {reason} (valid: uniform, zipf[:THETA], \
         hotspot[:KEY_FRACTION:PROBABILITY], exponential[:LAMBDA])"
    )]
    BadDist { spec: String, reason: String },
    /// A numeric setting outside what the workload can honour.
    #[error("bad workload setting for `{workload}`: {reason}")]
    BadConfig { workload: String, reason: String },
}
