//! delta-rlc engine: snapshots, scans, writes, transactions and the conflict checker.

pub mod arrow_conv;
pub mod conflict;
pub mod dv_io;
pub mod env;
pub mod error;
pub mod scan;
pub mod snapshot;

pub use error::{EngineError, ErrorKind, Result};
pub use snapshot::Snapshot;
