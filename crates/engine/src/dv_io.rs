//! Loading and storing deletion vectors through the table store. Every DV is checked against its
//! descriptor (size, checksum, cardinality) and its file (max row index < numRecords).

use bytes::Bytes;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::dv::{
    check_dv_file_version, decode_bitmap, decode_dv_entry, decode_dv_file_entry, dv_entry_len,
    validate_bitmap, without_run_containers, DvDescriptor, DvLocation,
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
            read_entry(store, &root.resolve(&path)?, offset, dv.checked_size()?).await?
        }
        DvLocation::Absolute { uri, offset } => {
            read_entry(store, &root.resolve(&uri)?, offset, dv.checked_size()?).await?
        }
    };
    let bitmap = decode_bitmap(&payload)?;
    validate_bitmap(&bitmap, dv.cardinality, num_records)?;
    // Run containers make set operations quadratic (see `without_run_containers`). Expanded only
    // when numRecords bounds the rows: at most numRecords / 8 bytes.
    Ok(if num_records.is_some() {
        without_run_containers(&bitmap)
    } else {
        bitmap
    })
}

/// The payload of the DV entry at `offset` of DV file `rel`. Reads only the version byte and the
/// entry (a DV file may hold the DVs of many data files); should those ranges not be readable or
/// not decode (an entry past the end of the file, a bad checksum, a store without range reads) the
/// whole file is read and decoded, so errors are reported exactly as for a whole-file decode.
async fn read_entry(store: &TableStore, rel: &str, offset: u64, size: usize) -> Result<Vec<u8>> {
    let entry_end = dv_entry_len(size)
        .and_then(|n| u64::try_from(n).ok())
        .and_then(|n| offset.checked_add(n));
    if let Some(end) = entry_end.filter(|_| offset >= 1) {
        if let Ok(parts) = store.get_ranges(rel, &[0..1, offset..end]).await {
            if let [version, entry] = parts.as_slice() {
                if check_dv_file_version(version.first().copied()).is_ok() {
                    if let Ok(payload) = decode_dv_entry(entry, size) {
                        return Ok(payload.to_vec());
                    }
                }
            }
        }
    }
    let file = store.get(rel).await?;
    Ok(decode_dv_file_entry(&file, offset, size)?.to_vec())
}

/// The DV file (relative to the root) that holds `add`'s deletion vector, if it has one in a file.
pub fn dv_file_of(root: &TableRoot, add: &Add) -> Option<String> {
    match add.deletion_vector.as_ref()?.location().ok()? {
        DvLocation::Inline(_) => None,
        DvLocation::Relative { path, .. } => root.resolve(&path).ok(),
        DvLocation::Absolute { uri, .. } => root.resolve(&uri).ok(),
    }
}

/// Fetches the data files `adds` and their DV files into the statement's cache in one stage of
/// concurrent reads ([`TableStore::prefetch`]), before a pass decodes them a few at a time.
pub async fn prefetch_files<'a>(
    store: &TableStore,
    root: &TableRoot,
    adds: impl IntoIterator<Item = &'a Add>,
) {
    let mut objects = Vec::new();
    for add in adds {
        objects.push((add.path.clone(), u64::try_from(add.size).ok()));
        if let Some(dv) = dv_file_of(root, add) {
            objects.push((dv, None));
        }
    }
    store.prefetch(objects).await;
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
        Some(s) => FileStats::parse_num_records(s)?,
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
        .map_err(|e| match e {
            // A DV file that is not there is a storage error (the caller may know why: a file
            // VACUUM deleted under a statement, `scan::vanished`); anything else is corrupt.
            EngineError::Storage(s) if s.kind == delta_rlc_storage::StorageErrorKind::NotFound => {
                EngineError::Storage(s)
            }
            e => EngineError::corrupt(format!("deletion vector of {}: {e}", add.path)),
        })
}

/// Writes `bitmaps` into one new DV file (as Spark writes the DVs of one task) and returns their
/// descriptors, in order: one object per statement instead of one per data file. Nothing is written
/// for no bitmaps. Small bitmaps could be inlined; we always use files so other engines see the
/// common layout.
pub async fn write_dvs(
    store: &TableStore,
    uuid: uuid::Uuid,
    bitmaps: &[RoaringTreemap],
) -> Result<Vec<DvDescriptor>> {
    let Some((rel, file, descriptors)) = encode_dvs(uuid, bitmaps)? else {
        return Ok(Vec::new());
    };
    store.put(&rel, file).await?;
    Ok(descriptors)
}

/// The DV file holding `bitmaps` (its path, bytes and the descriptors, in order); `None` for no
/// bitmaps. A caller that uploads it in the background uses this
/// ([`delta_rlc_storage::PendingUploads`]).
pub fn encode_dvs(
    uuid: uuid::Uuid,
    bitmaps: &[RoaringTreemap],
) -> Result<Option<(String, Bytes, Vec<DvDescriptor>)>> {
    if bitmaps.is_empty() {
        return Ok(None);
    }
    let payloads = bitmaps
        .iter()
        .map(delta_rlc_protocol::dv::encode_bitmap)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
    let (file, offsets) = delta_rlc_protocol::dv::encode_dv_file(&refs)?;
    let mut descriptors = Vec::with_capacity(bitmaps.len());
    for ((payload, bitmap), offset) in payloads.iter().zip(bitmaps).zip(offsets) {
        let size = i32::try_from(payload.len())
            .map_err(|_| EngineError::Internal("DV too large".into()))?;
        let card = i64::try_from(bitmap.len())
            .map_err(|_| EngineError::Internal("DV too large".into()))?;
        descriptors.push(DvDescriptor::for_uuid_file(uuid, "", offset, size, card));
    }
    Ok(Some((
        format!("deletion_vector_{uuid}.bin"),
        Bytes::from(file),
        descriptors,
    )))
}

/// Writes `bitmap` as a new DV file (one DV per file) and returns its descriptor.
pub async fn write_dv(
    store: &TableStore,
    uuid: uuid::Uuid,
    bitmap: &RoaringTreemap,
) -> Result<DvDescriptor> {
    write_dvs(store, uuid, std::slice::from_ref(bitmap))
        .await?
        .pop()
        .ok_or_else(|| EngineError::Internal("no DV descriptor written".into()))
}
