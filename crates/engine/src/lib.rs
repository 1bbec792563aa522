//! delta-rlc engine: snapshots, scans, writes, transactions and the conflict checker.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod arrow_conv;
pub mod changes;
pub mod column_mapping;
pub mod conflict;
pub mod conflict_config;
pub mod conflict_error;
pub mod constraints;
pub mod dv_io;
pub mod env;
pub mod error;
pub mod events;
pub mod expr_plan;
pub mod identity_schema;
pub mod key_equality;
pub mod key_set;
pub mod metadata_intent;
pub mod operation;
pub mod operation_metrics;
pub mod ops;
pub mod parquet_settings;
pub mod read_set;
pub mod retention;
pub mod row_tracking;
pub mod scan;
pub mod scenario;
pub mod snapshot;
pub mod spark;
pub mod sql;
pub mod value_cast;

pub use error::{EngineError, ErrorKind, Result};
pub use snapshot::Snapshot;
pub mod table;
pub mod txn;
pub mod vacuum;
pub mod variant;
pub mod warnings;
pub mod write;

pub use table::DeltaTable;
pub use txn::{CommitResult, Transaction};
