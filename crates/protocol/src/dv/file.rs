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
    check_dv_file_version(bytes.first().copied())?;
    let offset = usize::try_from(offset).map_err(|_| ProtocolError::dv("offset overflow"))?;
    let len = bytes.len();
    let entry = bytes.get(offset..).ok_or_else(|| {
        ProtocolError::dv(format!(
            "offset {offset} + size past the end of a {len}-byte DV file"
        ))
    })?;
    decode_dv_entry(entry, size_in_bytes)
        .map_err(|e| ProtocolError::dv(format!("{e} (offset {offset} of a {len}-byte DV file)")))
}

/// Checks a DV file's first byte (`None`: the file is empty).
pub fn check_dv_file_version(first: Option<u8>) -> Result<()> {
    match first {
        Some(DV_FILE_VERSION) => Ok(()),
        Some(v) => Err(ProtocolError::dv(format!(
            "unsupported DV file version {v}"
        ))),
        None => Err(ProtocolError::dv("empty DV file")),
    }
}

/// The bytes one entry of `size_in_bytes` occupies in a DV file, from its offset: the size field,
/// the payload and the checksum.
pub fn dv_entry_len(size_in_bytes: usize) -> Option<usize> {
    size_in_bytes.checked_add(8)
}

/// Extracts and checks one payload from the bytes of a DV file starting at the entry's offset
/// (at least [`dv_entry_len`] of them): stored size equal to the descriptor's, CRC correct.
pub fn decode_dv_entry(entry: &[u8], size_in_bytes: usize) -> Result<&[u8]> {
    let past_end = || ProtocolError::dv("entry runs past the end of the DV file");
    let size_field: [u8; 4] = entry
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(past_end)?;
    let stored = i32::from_be_bytes(size_field);
    if usize::try_from(stored).ok() != Some(size_in_bytes) {
        return Err(ProtocolError::dv(format!(
            "size mismatch: file says {stored}, descriptor says {size_in_bytes}"
        )));
    }
    let end = size_in_bytes.checked_add(4).ok_or_else(past_end)?;
    let payload = entry.get(4..end).ok_or_else(past_end)?;
    let crc: [u8; 4] = entry
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

    #[test]
    fn several_entries_in_one_file_decode_alone_or_from_their_offset() {
        let payloads: Vec<Vec<u8>> = vec![vec![1, 2, 3], vec![], vec![7; 300]];
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        let (file, offsets) = encode_dv_file(&refs).unwrap();
        assert_eq!(offsets, vec![1, 12, 20]);
        for (p, &o) in payloads.iter().zip(&offsets) {
            let o = o as usize;
            assert_eq!(
                decode_dv_file_entry(&file, o as u64, p.len()).unwrap(),
                p.as_slice()
            );
            let entry = &file[o..o + dv_entry_len(p.len()).unwrap()];
            assert_eq!(decode_dv_entry(entry, p.len()).unwrap(), p.as_slice());
            // One byte short of the checksum, or the size of a neighbour: errors, not panics.
            assert!(decode_dv_entry(&entry[..entry.len() - 1], p.len()).is_err());
            assert!(decode_dv_entry(entry, p.len() + 1).is_err());
        }
        assert!(check_dv_file_version(file.first().copied()).is_ok());
        assert!(check_dv_file_version(None).is_err());
        assert!(check_dv_file_version(Some(2)).is_err());
    }
}
