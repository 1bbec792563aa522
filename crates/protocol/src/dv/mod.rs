//! Deletion vectors: the descriptor stored on add/remove actions, the z85 text codec, the portable
//! RoaringBitmapArray payload, and the DV file container.
//!
//! Every length, offset, checksum, cardinality and row index read from disk is checked before use;
//! allocation is bounded by the bytes actually present, never by a length field.

mod bitmap;
mod descriptor;
mod file;
pub mod z85;

pub use bitmap::{
    decode_bitmap, encode_bitmap, without_run_containers, MAGIC_NATIVE, MAGIC_PORTABLE,
};
pub use descriptor::{DvDescriptor, DvLocation, StorageType};
pub use file::{
    check_dv_file_version, decode_dv_entry, decode_dv_file_entry, dv_entry_len, encode_dv_file,
    DV_FILE_VERSION,
};

use roaring::RoaringTreemap;

use crate::error::{ProtocolError, Result};

/// Checks that a decoded DV matches its descriptor and the file it applies to.
pub fn validate_bitmap(
    bitmap: &RoaringTreemap,
    expected_cardinality: i64,
    num_records: Option<i64>,
) -> Result<()> {
    let card = bitmap.len();
    if i64::try_from(card).ok() != Some(expected_cardinality) {
        return Err(ProtocolError::dv(format!(
            "cardinality mismatch: descriptor says {expected_cardinality}, bitmap holds {card}"
        )));
    }
    if let (Some(n), Some(max)) = (num_records, bitmap.max()) {
        let n = u64::try_from(n).map_err(|_| ProtocolError::dv("negative numRecords"))?;
        if max >= n {
            return Err(ProtocolError::dv(format!(
                "row index {max} out of range: the file has {n} physical rows"
            )));
        }
    }
    Ok(())
}
