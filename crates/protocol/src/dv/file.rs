//! The DV file container: a version byte `1`, then per DV at its `offset`: big-endian i32 size, the
//! bitmap payload, big-endian CRC-32 (IEEE) of the payload.

use crate::error::{ProtocolError, Result};

pub const DV_FILE_VERSION: u8 = 1;

/// Builds a DV file holding the given payloads; returns the bytes and each payload's offset (the
/// position of its size field, as the descriptor records it).
pub fn encode_dv_file(payloads: &[&[u8]]) -> Result<(Vec<u8>, Vec<i32>)> {
    let mut out = vec![DV_FILE_VERSION];
    let mut offsets = Vec::with_capacity(payloads.len());
    for p in payloads {
        offsets.push(i32::try_from(out.len()).map_err(|_| ProtocolError::dv("DV file too large"))?);
        let size = i32::try_from(p.len()).map_err(|_| ProtocolError::dv("DV too large"))?;
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(&crc32fast::hash(p).to_be_bytes());
    }
    Ok((out, offsets))
}

/// Extracts and checks one payload from DV file bytes: version byte, offset and size in range,
/// stored size equal to the descriptor's, CRC correct. `bytes` is the whole file.
pub fn decode_dv_file_entry(bytes: &[u8], offset: u64, size_in_bytes: usize) -> Result<&[u8]> {
    match bytes.first() {
        Some(&DV_FILE_VERSION) => {}
        Some(v) => {
            return Err(ProtocolError::dv(format!(
                "unsupported DV file version {v}"
            )))
        }
        None => return Err(ProtocolError::dv("empty DV file")),
    }
    let offset = usize::try_from(offset).map_err(|_| ProtocolError::dv("offset overflow"))?;
    let len = bytes.len();
    let past_end = || {
        ProtocolError::dv(format!(
            "offset {offset} + size past the end of a {len}-byte DV file"
        ))
    };
    let size_field: [u8; 4] = bytes
        .get(offset..offset.checked_add(4).ok_or_else(past_end)?)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(past_end)?;
    let stored = i32::from_be_bytes(size_field);
    if usize::try_from(stored).ok() != Some(size_in_bytes) {
        return Err(ProtocolError::dv(format!(
            "size mismatch: file says {stored}, descriptor says {size_in_bytes}"
        )));
    }
    let start = offset + 4;
    let end = start.checked_add(size_in_bytes).ok_or_else(past_end)?;
    let payload = bytes.get(start..end).ok_or_else(past_end)?;
    let crc: [u8; 4] = bytes
        .get(end..end.checked_add(4).ok_or_else(past_end)?)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(past_end)?;
    let crc = u32::from_be_bytes(crc);
    let actual = crc32fast::hash(payload);
    if crc != actual {
        return Err(ProtocolError::dv(format!(
            "checksum mismatch: stored {crc:08x}, computed {actual:08x}"
        )));
    }
    Ok(payload)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn reference_vector_envelope() {
        // Reference §3.6: the 44-byte portable payload of rows 3,4,7,11,18,29 has CRC acd74a79.
        let hex = "d1d339640100000000000000000000003a3000000100000000000500100000000300040007000b0012001d00";
        let hex: String = hex.chars().collect();
        let payload: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(payload.len(), 44);
        let (file, offsets) = encode_dv_file(&[&payload]).unwrap();
        assert_eq!(offsets, vec![1]);
        assert_eq!(file.len(), 53);
        assert_eq!(&file[..5], &[1, 0, 0, 0, 0x2c]);
        assert_eq!(&file[49..], &[0xac, 0xd7, 0x4a, 0x79]);
        assert_eq!(
            decode_dv_file_entry(&file, 1, 44).unwrap(),
            payload.as_slice()
        );
    }

    #[test]
    fn envelope_errors() {
        let (mut file, _) = encode_dv_file(&[&[9u8, 9, 9, 9]]).unwrap();
        assert!(decode_dv_file_entry(&file, 1, 5)
            .unwrap_err()
            .to_string()
            .contains("size mismatch"));
        assert!(decode_dv_file_entry(&file, 100, 4)
            .unwrap_err()
            .to_string()
            .contains("past the end"));
        let last = file.len() - 1;
        file[last] ^= 1;
        assert!(decode_dv_file_entry(&file, 1, 4)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        file[0] = 2;
        assert!(decode_dv_file_entry(&file, 1, 4).is_err());
    }
}
