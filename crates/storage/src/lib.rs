//! The only crate that does I/O. A [`TableStore`] names one table root on a local disk, an
//! S3-compatible bucket, Azure Blob / ADLS Gen2, Google Cloud Storage or in memory, and offers:
//! - reads, listings and overwriting writes of files under the root (data files, DVs, checkpoints);
//! - one commit primitive, [`TableStore::put_if_absent`], whose outcome is `Created`,
//!   `AlreadyExists` or `Unknown` — an `Unknown` is never treated as a conflict by the engine without
//!   first reading who wrote that version.
//!
//! Every path given to this crate is a decoded path relative to the root, already checked by
//! `delta_rlc_protocol::table_path` (the engine resolves log paths before calling in). The store
//! re-checks segments so that nothing outside the root is ever read, written or deleted.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod cloud;
mod deltalake_options;
pub mod fault;
pub mod latency;
mod local;
pub mod meter;
pub mod object_cache;
mod opendal_fs;
mod retry;
mod store;

pub use cloud::CommitMode;
pub use meter::{RequestCounts, RequestMeter};
pub use retry::RetryPolicy;
pub use store::{
    CommitFaults, DirEntries, FileMeta, ObjectInfo, PendingUploads, PutOutcome, ReadBudget,
    StorageError, StorageErrorKind, TableStore,
};

pub use object_store;
