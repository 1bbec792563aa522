//! The `deletionVector` descriptor on add/remove actions, its unique id, and where its bytes live.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::z85;
use crate::error::{ProtocolError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageType {
    /// `u`: a file under the table root named from a UUID (optionally behind a random prefix).
    UuidRelative,
    /// `i`: the bitmap itself, z85-encoded in the log.
    Inline,
    /// `p`: an absolute URI-encoded path.
    AbsolutePath,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DvDescriptor {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    pub size_in_bytes: i32,
    pub cardinality: i64,
    /// Spark keeps a transient `maxRowIndex`; it must never be written, but tolerate it on read.
    #[serde(default, skip_serializing)]
    pub max_row_index: Option<i64>,
}

/// Where a DV's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DvLocation {
    /// Bytes inline in the log (already z85-decoded and truncated).
    Inline(Vec<u8>),
    /// Relative path under the table root (random prefix + `deletion_vector_<uuid>.bin`).
    Relative { path: String, offset: u64 },
    /// An absolute path as written in the log (still URI-encoded; resolve it against the root).
    Absolute { uri: String, offset: u64 },
}

impl DvDescriptor {
    pub fn storage(&self) -> Result<StorageType> {
        match self.storage_type.as_str() {
            "u" => Ok(StorageType::UuidRelative),
            "i" => Ok(StorageType::Inline),
            "p" => Ok(StorageType::AbsolutePath),
            other => Err(ProtocolError::dv(format!("unknown storage type {other:?}"))),
        }
    }

    /// `storageType + pathOrInlineDv [+ "@" + offset]` (the protocol's derived unique id).
    pub fn unique_id(&self) -> String {
        match self.offset {
            Some(o) => format!("{}{}@{}", self.storage_type, self.path_or_inline_dv, o),
            None => format!("{}{}", self.storage_type, self.path_or_inline_dv),
        }
    }

    /// Whether [`DvDescriptor::unique_id`] is `id`, without building the string (snapshot updates
    /// compare every tombstone of a touched path).
    pub fn has_unique_id(&self, id: &str) -> bool {
        let Some(rest) = id.strip_prefix(self.storage_type.as_str()) else {
            return false;
        };
        let Some(rest) = rest.strip_prefix(self.path_or_inline_dv.as_str()) else {
            return false;
        };
        match self.offset {
            None => rest.is_empty(),
            Some(o) => {
                // The offset's decimal form, formatted on the stack (an i32 takes at most 11 bytes).
                let mut buf = [0u8; 12];
                let mut cursor = std::io::Cursor::new(&mut buf[..]);
                if std::io::Write::write_fmt(&mut cursor, format_args!("{o}")).is_err() {
                    return false;
                }
                let len = usize::try_from(cursor.position()).unwrap_or(0);
                rest.strip_prefix('@')
                    .is_some_and(|n| Some(n.as_bytes()) == buf.get(..len))
            }
        }
    }

    fn checked_offset(&self) -> Result<u64> {
        let o = self.offset.unwrap_or(0);
        u64::try_from(o).map_err(|_| ProtocolError::dv(format!("negative offset {o}")))
    }

    pub fn checked_size(&self) -> Result<usize> {
        usize::try_from(self.size_in_bytes)
            .map_err(|_| ProtocolError::dv(format!("negative sizeInBytes {}", self.size_in_bytes)))
    }

    /// Resolves where the bytes are. Validates the z85 text for `u` and `i`.
    pub fn location(&self) -> Result<DvLocation> {
        if self.cardinality < 0 {
            return Err(ProtocolError::dv(format!(
                "negative cardinality {}",
                self.cardinality
            )));
        }
        match self.storage()? {
            StorageType::Inline => {
                let size = self.checked_size()?;
                Ok(DvLocation::Inline(z85::decode_truncated(
                    &self.path_or_inline_dv,
                    size,
                )?))
            }
            StorageType::UuidRelative => {
                let s = &self.path_or_inline_dv;
                let split = s.len().checked_sub(20).ok_or_else(|| {
                    ProtocolError::dv(format!("`u` path {s:?} is shorter than 20 characters"))
                })?;
                let (prefix, encoded) = (
                    s.get(..split)
                        .ok_or_else(|| ProtocolError::dv("non-ASCII `u` path"))?,
                    s.get(split..)
                        .ok_or_else(|| ProtocolError::dv("non-ASCII `u` path"))?,
                );
                let raw = z85::decode_truncated(encoded, 16)?;
                let uuid = Uuid::from_slice(&raw).map_err(|e| ProtocolError::dv(e.to_string()))?;
                let file = format!("deletion_vector_{uuid}.bin");
                let path = if prefix.is_empty() {
                    file
                } else {
                    format!("{prefix}/{file}")
                };
                Ok(DvLocation::Relative {
                    path,
                    offset: self.checked_offset()?,
                })
            }
            StorageType::AbsolutePath => Ok(DvLocation::Absolute {
                uri: self.path_or_inline_dv.clone(),
                offset: self.checked_offset()?,
            }),
        }
    }

    /// Descriptor for a DV stored at `offset` of the file named by `uuid` (with an optional prefix).
    pub fn for_uuid_file(
        uuid: Uuid,
        prefix: &str,
        offset: i32,
        size_in_bytes: i32,
        cardinality: i64,
    ) -> Self {
        DvDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: format!("{prefix}{}", z85::encode_padded(uuid.as_bytes())),
            offset: Some(offset),
            size_in_bytes,
            cardinality,
            max_row_index: None,
        }
    }

    /// Inline descriptor for an encoded bitmap payload.
    pub fn inline(payload: &[u8], cardinality: i64) -> Result<Self> {
        Ok(DvDescriptor {
            storage_type: "i".into(),
            path_or_inline_dv: z85::encode_padded(payload),
            offset: None,
            size_in_bytes: i32::try_from(payload.len())
                .map_err(|_| ProtocolError::dv("inline DV too large"))?,
            cardinality,
            max_row_index: None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn has_unique_id_agrees_with_unique_id() {
        let mut d = DvDescriptor::inline(&[1, 2, 3, 4, 5], 3).unwrap();
        for offset in [None, Some(0), Some(1), Some(42), Some(i32::MAX), Some(-7)] {
            d.offset = offset;
            let id = d.unique_id();
            assert!(d.has_unique_id(&id), "{id}");
            for other in [
                format!("{id}0"),
                id[..id.len() - 1].to_string(),
                format!("x{id}"),
                String::new(),
            ] {
                assert!(!d.has_unique_id(&other), "{other} vs {id}");
            }
        }
        d.offset = Some(5);
        assert!(!d.has_unique_id(&format!("{}{}@05", d.storage_type, d.path_or_inline_dv)));
        assert!(!d.has_unique_id(&format!("{}{}", d.storage_type, d.path_or_inline_dv)));
    }

    #[test]
    fn uuid_path_with_prefix() {
        let d = DvDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(1),
            size_in_bytes: 36,
            cardinality: 2,
            max_row_index: None,
        };
        assert_eq!(
            d.location().unwrap(),
            DvLocation::Relative {
                path: "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin".into(),
                offset: 1
            }
        );
        assert_eq!(d.unique_id(), "uab^-aqEH.-t@S}K{vb[*k^@1");
    }

    #[test]
    fn for_uuid_file_round_trips() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let d = DvDescriptor::for_uuid_file(id, "", 1, 10, 1);
        let DvLocation::Relative { path, .. } = d.location().unwrap() else {
            panic!()
        };
        assert_eq!(path, format!("deletion_vector_{id}.bin"));
    }

    #[test]
    fn short_and_unknown_are_errors() {
        let mut d = DvDescriptor::inline(&[1, 2, 3, 4], 0).unwrap();
        d.storage_type = "x".into();
        assert!(d.location().is_err());
        d.storage_type = "u".into();
        d.path_or_inline_dv = "abc".into();
        assert!(d.location().is_err());
    }
}
