//! The Delta Lake protocol as pure data: actions and their exact JSON form, log file names, table
//! features, deletion vectors (bitmap, file and inline codecs), per-file statistics, partition values,
//! the Delta schema, and path containment. No I/O and no async: everything here can be fuzzed and
//! property-tested in isolation.
#![deny(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod actions;
pub mod column_mapping;
pub mod dv;
pub mod error;
pub mod features;
pub mod fuzzing;
pub mod log_compaction;
pub mod log_path;
pub mod partition;
pub mod schema;
pub mod stats;
pub mod table_path;
pub mod table_properties;
pub mod type_widening;

pub use actions::{
    Action, Add, Cdc, CheckpointMetadata, CommitInfo, DomainMetadata, Metadata, Protocol, Remove,
    Sidecar, Txn,
};
pub use dv::DvDescriptor;
pub use error::{ProtocolError, Result};
