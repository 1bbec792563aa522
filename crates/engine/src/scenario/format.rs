//! The scenario file format, version 1 (TOML), with source spans so errors can name the line.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{EngineError, Result};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub steps: Vec<Spanned<String>>,
    pub table: TableSpec,
    #[serde(default)]
    pub config: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub txn: Vec<TxnSpec>,
    #[serde(default)]
    pub expect: Option<ExpectSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub columns: String,
    #[serde(default)]
    pub partition_by: Vec<String>,
    #[serde(default)]
    pub cluster_by: Vec<String>,
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default)]
    pub setup: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxnSpec {
    pub name: Spanned<String>,
    pub sql: Spanned<String>,
}

#[derive(Debug, Deserialize)]
pub struct QueryExpect {
    pub sql: Spanned<String>,
    pub rows: Vec<Vec<toml::Value>>,
}

#[derive(Debug, Deserialize)]
pub struct ExpectSpec {
    #[serde(default)]
    pub query: Vec<QueryExpect>,
    /// Events each transaction must have fired: `A = ["delta.rowLevelConcurrency.deletionVectorsMerged"]`.
    #[serde(default)]
    pub events: BTreeMap<String, Vec<Spanned<String>>>,
    /// How many times a transaction's statement ran (`[config] retryOnConflict` re-runs a
    /// statement that aborted on a true conflict): `A = 2`.
    #[serde(default)]
    pub runs: BTreeMap<String, Spanned<u32>>,
    /// Why each named transaction aborted (`AbortReason::name`): `B = "true-overlap"`.
    #[serde(default)]
    pub reasons: BTreeMap<String, Spanned<String>>,
    /// Per-transaction outcome: "committed", "aborted", or a conflict kind. (serde cannot keep
    /// spans through `flatten`; lines are found with [`expect_key_offset`].)
    #[serde(flatten)]
    pub outcomes: BTreeMap<String, toml::Value>,
}

/// 1-based line of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source
        .get(..offset.min(source.len()))
        .map(|s| s.matches('\n').count() + 1)
        .unwrap_or(1)
}

pub fn parse(path: &str, source: &str) -> Result<ScenarioFile> {
    toml::from_str(source).map_err(|e| {
        let line = e.span().map(|s| line_of(source, s.start)).unwrap_or(0);
        EngineError::invalid(format!("{path}:{line}: {}", e.message()))
    })
}

pub const OUTCOMES: &[&str] = &[
    "committed",
    "aborted",
    "ConcurrentAppend",
    "ConcurrentDeleteRead",
    "ConcurrentDeleteDelete",
    "MetadataChanged",
    "ProtocolChanged",
    "ConcurrentTransaction",
    "ConcurrentDomainMetadata",
    "MaxCommitAttemptsExceeded",
];

/// Byte offset of `key = …` inside the `[expect]` table (for error lines), or of `[expect]` itself.
pub fn expect_key_offset(source: &str, key: &str) -> usize {
    let start = source.find("[expect]").unwrap_or(0);
    let mut offset = start;
    for line in source.get(start..).unwrap_or("").split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with(key)
            && t.get(key.len()..)
                .is_some_and(|r| r.trim_start().starts_with('='))
        {
            return offset;
        }
        offset += line.len();
    }
    start
}
