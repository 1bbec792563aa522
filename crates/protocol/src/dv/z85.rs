//! Delta's flavour of Z85 (ZeroMQ base-85): unaligned input is zero-padded to a multiple of 4 before
//! encoding and the decoder's output is truncated by the caller to `sizeInBytes`. The `z85` crate
//! encodes unaligned tails differently, so padding is done here and the crate only sees aligned data.

use crate::error::{ProtocolError, Result};

/// Encodes `bytes`, zero-padding to a multiple of 4 (Delta's Base85Codec behaviour).
pub fn encode_padded(bytes: &[u8]) -> String {
    let mut padded = bytes.to_vec();
    while !padded.len().is_multiple_of(4) {
        padded.push(0);
    }
    ::z85::encode(&padded)
}

/// Decodes `text` and truncates the output to `size` bytes. Fails if the text is not a multiple of 5
/// characters, holds characters outside the alphabet, or decodes to fewer than `size` bytes.
pub fn decode_truncated(text: &str, size: usize) -> Result<Vec<u8>> {
    if !text.len().is_multiple_of(5) {
        return Err(ProtocolError::dv(format!(
            "z85 text length {} is not a multiple of 5",
            text.len()
        )));
    }
    let mut bytes =
        ::z85::decode(text).map_err(|e| ProtocolError::dv(format!("invalid z85: {e:?}")))?;
    if bytes.len() < size {
        return Err(ProtocolError::dv(format!(
            "inline DV decodes to {} bytes, descriptor says {size}",
            bytes.len()
        )));
    }
    if bytes.len() - size >= 4 {
        return Err(ProtocolError::dv(
            "inline DV has more padding than z85 allows",
        ));
    }
    bytes.truncate(size);
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn padding_matches_delta_codec() {
        // 34-byte payload: Delta pads with zero bytes, so the tail is "00000"-style, not the z85 crate's.
        let data = [7u8; 34];
        let text = encode_padded(&data);
        assert_eq!(text.len(), 45);
        assert_eq!(decode_truncated(&text, 34).unwrap(), data.to_vec());
    }

    #[test]
    fn rejects_bad_length_and_chars() {
        assert!(decode_truncated("abcd", 4).is_err());
        assert!(decode_truncated("abc\"e", 4).is_err());
        assert!(decode_truncated("00000", 8).is_err());
    }
}
