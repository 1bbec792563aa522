//! Loading and storing deletion vectors through the table store. Every DV is checked against its
//! descriptor (size, checksum, cardinality) and its file (max row index < numRecords).

use bytes::Bytes;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::dv::{
    decode_bitmap, decode_dv_file_entry, validate_bitmap, DvDescriptor, DvLocation,
};
use delta_rlc_protocol::stats::FileStats;
use delta_rlc_protocol::table_path::TableRoot;
use delta_rlc_storage::TableStore;
use roaring::RoaringTreemap;

use crate::error::{EngineError, Result};

/// Reads and validates the DV of a descriptor. `num_records` bounds the row indexes when known.
pub async fn load_dv(
    store: &TableStore,
    root: &TableRoot,
    dv: &DvDescriptor,
    num_records: Option<i64>,
) -> Result<RoaringTreemap> {
    let payload: Vec<u8> = match dv.location()? {
        DvLocation::Inline(bytes) => bytes,
        DvLocation::Relative { path, offset } => {
            let rel = root.resolve(&path)?;
            let file = store.get(&rel).await?;
            decode_dv_file_entry(&file, offset, dv.checked_size()?)?.to_vec()
        }
        DvLocation::Absolute { uri, offset } => {
            let rel = root.resolve(&uri)?;
            let file = store.get(&rel).await?;
            decode_dv_file_entry(&file, offset, dv.checked_size()?)?.to_vec()
        }
    };
    let bitmap = decode_bitmap(&payload)?;
    validate_bitmap(&bitmap, dv.cardinality, num_records)?;
    Ok(bitmap)
}

/// The DV of a live file, or an empty bitmap when it has none.
pub async fn load_file_dv(
    store: &TableStore,
    root: &TableRoot,
    add: &Add,
) -> Result<RoaringTreemap> {
    let Some(dv) = &add.deletion_vector else {
        return Ok(RoaringTreemap::new());
    };
    let num_records = match &add.stats {
        Some(s) => FileStats::parse(s)?.num_records,
        None => None,
    };
    let num_records = num_records.ok_or_else(|| {
        EngineError::corrupt(format!(
            "file {} has a deletion vector but no numRecords",
            add.path
        ))
    })?;
    load_dv(store, root, dv, Some(num_records))
        .await
        .map_err(|e| EngineError::corrupt(format!("deletion vector of {}: {e}", add.path)))
}

/// Writes `bitmap` as a new DV file (one DV per file) and returns its descriptor. Small bitmaps could
/// be inlined; we always use files so other engines see the common layout.
pub async fn write_dv(
    store: &TableStore,
    uuid: uuid::Uuid,
    bitmap: &RoaringTreemap,
) -> Result<DvDescriptor> {
    let payload = delta_rlc_protocol::dv::encode_bitmap(bitmap)?;
    let (file, offsets) = delta_rlc_protocol::dv::encode_dv_file(&[&payload])?;
    let size =
        i32::try_from(payload.len()).map_err(|_| EngineError::Internal("DV too large".into()))?;
    let card =
        i64::try_from(bitmap.len()).map_err(|_| EngineError::Internal("DV too large".into()))?;
    let desc =
        DvDescriptor::for_uuid_file(uuid, "", offsets.first().copied().unwrap_or(1), size, card);
    let rel = format!("deletion_vector_{uuid}.bin");
    store.put(&rel, Bytes::from(file)).await?;
    Ok(desc)
}
