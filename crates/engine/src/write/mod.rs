//! The write path: data files with stats, deletion vectors, checkpoints.

pub mod checkpoint;
pub mod encoding;
pub mod files;
pub mod stats;

pub use files::{encode_log_path, FileWriter, DEFAULT_TARGET_FILE_SIZE};
pub use stats::{compute_stats, StatsConfig};
