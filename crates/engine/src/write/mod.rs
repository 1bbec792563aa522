//! The write path: data files with stats, deletion vectors, checkpoints.

pub mod change_data;
pub mod checkpoint;
mod decimal_range;
pub mod encoding;
pub mod files;
pub mod log_compaction;
mod parallel_encode;
pub mod stats;

pub use decimal_range::check_decimal_range;
pub use files::{encode_log_path, FileWriter, DEFAULT_TARGET_FILE_SIZE};
pub use stats::{compute_stats, StatsConfig};

/// The column mapping mode a table configuration sets (an unknown mode is an error).
pub fn column_mapping_of(
    configuration: &std::collections::BTreeMap<String, String>,
) -> crate::error::Result<delta_rlc_protocol::column_mapping::ColumnMappingMode> {
    Ok(delta_rlc_protocol::column_mapping::ColumnMappingMode::from_configuration(configuration)?)
}
