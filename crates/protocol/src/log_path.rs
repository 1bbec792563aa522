//! Names of files in `_delta_log`: commits, checkpoints (classic, multi-part, UUID-named), CRCs,
//! log compactions. Parsing is strict; anything else in the directory is classified `Other`.

use crate::error::{ProtocolError, Result};

pub const LOG_DIR: &str = "_delta_log";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFileKind {
    Commit,
    /// Single-file classic checkpoint.
    Checkpoint,
    /// Part `part` of `parts` of a multi-part checkpoint.
    MultiPartCheckpoint {
        part: u32,
        parts: u32,
    },
    /// UUID-named V2 checkpoint (`.json` or `.parquet`).
    UuidCheckpoint {
        uuid: String,
        json: bool,
    },
    Crc,
    Compaction {
        end: u64,
    },
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFileName {
    pub version: u64,
    pub kind: LogFileKind,
}

pub fn commit_file_name(version: u64) -> String {
    format!("{version:020}.json")
}

pub fn checkpoint_file_name(version: u64) -> String {
    format!("{version:020}.checkpoint.parquet")
}

fn parse_version(s: &str) -> Option<u64> {
    if s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Classifies a file name (just the name, not the path).
pub fn parse_log_file_name(name: &str) -> Option<LogFileName> {
    let (head, rest) = name.split_once('.')?;
    let version = parse_version(head)?;
    let kind = match rest {
        "json" => LogFileKind::Commit,
        "crc" => LogFileKind::Crc,
        "checkpoint.parquet" => LogFileKind::Checkpoint,
        _ => {
            if let Some(tail) = rest.strip_prefix("checkpoint.") {
                let parts: Vec<&str> = tail.split('.').collect();
                match parts.as_slice() {
                    [a, b, "parquet"] if a.len() == 10 && b.len() == 10 => {
                        let part: u32 = a.parse().ok()?;
                        let total: u32 = b.parse().ok()?;
                        if part == 0 || part > total {
                            return None;
                        }
                        LogFileKind::MultiPartCheckpoint { part, parts: total }
                    }
                    [uuid, ext] if *ext == "json" || *ext == "parquet" => {
                        LogFileKind::UuidCheckpoint {
                            uuid: (*uuid).to_string(),
                            json: *ext == "json",
                        }
                    }
                    _ => LogFileKind::Other,
                }
            } else if let Some(tail) = rest.strip_suffix(".compacted.json") {
                let end = parse_version(tail)?;
                if end <= version {
                    return None;
                }
                LogFileKind::Compaction { end }
            } else {
                LogFileKind::Other
            }
        }
    };
    Some(LogFileName { version, kind })
}

/// Strict parse of a commit file name into its version.
pub fn commit_version(name: &str) -> Result<u64> {
    match parse_log_file_name(name) {
        Some(LogFileName {
            version,
            kind: LogFileKind::Commit,
        }) => Ok(version),
        _ => Err(ProtocolError::LogFileName(name.to_string())),
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(commit_file_name(12), "00000000000000000012.json");
        assert_eq!(
            parse_log_file_name("00000000000000000012.json")
                .unwrap()
                .kind,
            LogFileKind::Commit
        );
        assert_eq!(
            parse_log_file_name("00000000000000000010.checkpoint.0000000001.0000000002.parquet")
                .unwrap()
                .kind,
            LogFileKind::MultiPartCheckpoint { part: 1, parts: 2 }
        );
        assert!(matches!(
            parse_log_file_name(
                "00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
            )
            .unwrap()
            .kind,
            LogFileKind::UuidCheckpoint { json: true, .. }
        ));
        assert_eq!(
            parse_log_file_name("00000000000000000001.00000000000000000004.compacted.json")
                .unwrap()
                .kind,
            LogFileKind::Compaction { end: 4 }
        );
        assert!(parse_log_file_name("_last_checkpoint").is_none());
        assert!(parse_log_file_name("1.json").is_none());
        assert!(commit_version("00000000000000000001.crc").is_err());
    }
}
