//! Errors of the pure protocol layer. Every parse of untrusted bytes returns one of these; nothing in
//! this crate panics on input from disk or users.

use thiserror::Error;

/// What went wrong while parsing or validating protocol data.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    #[error("commit {version}: line {line}: {reason}")]
    MalformedCommit {
        version: u64,
        line: usize,
        reason: String,
    },
    #[error("malformed action: {0}")]
    MalformedAction(String),
    #[error("unsupported reader feature(s): {0}")]
    UnsupportedReaderFeature(String),
    #[error("unsupported writer feature(s): {0}")]
    UnsupportedWriterFeature(String),
    #[error("unsupported protocol version: reader {reader}, writer {writer}")]
    UnsupportedProtocolVersion { reader: i32, writer: i32 },
    #[error("invalid protocol: {0}")]
    InvalidProtocol(String),
    #[error("path escapes the table root: {path:?} ({reason})")]
    PathEscape { path: String, reason: &'static str },
    #[error("deletion vector: {0}")]
    DeletionVector(String),
    #[error("stats: {0}")]
    Stats(String),
    #[error("schema: {0}")]
    Schema(String),
    #[error("partition value for column {column:?}: {reason}")]
    PartitionValue { column: String, reason: String },
    #[error("invalid log file name: {0}")]
    LogFileName(String),
    /// An action this engine cannot carry where it was asked to (e.g. into a log compaction).
    #[error("unsupported action: {0}")]
    UnsupportedAction(String),
}

pub type Result<T, E = ProtocolError> = std::result::Result<T, E>;

impl ProtocolError {
    pub(crate) fn dv(msg: impl Into<String>) -> Self {
        ProtocolError::DeletionVector(msg.into())
    }
}
