//! Time limits that make "written after a time" a proof: how long a transaction may stay open,
//! the floor below which no file or log entry is removed, and the retention intervals tables
//! configure. Shared by the commit loop, the log probe and VACUUM; imports nothing of the engine.

/// The longest a transaction may stay open: its commit is refused after this (a retryable error).
pub const MAX_TRANSACTION_MS: i64 = 6 * 3600 * 1000;

/// VACUUM never deletes a file younger than this, whatever the retention.
pub const MIN_RETENTION_FLOOR_MS: i64 = MAX_TRANSACTION_MS + 3600 * 1000;

/// Tombstones younger than this are kept (Delta's default `delta.deletedFileRetentionDuration`).
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// A table's `delta.deletedFileRetentionDuration` (its value, when set), or the default.
pub fn deleted_file_retention_ms(configured: Option<&str>) -> i64 {
    configured
        .and_then(parse_interval_ms)
        .unwrap_or(DEFAULT_RETENTION_MS)
}

/// Parses `interval N <unit>` (Spark's `delta.deletedFileRetentionDuration`).
pub fn parse_interval_ms(s: &str) -> Option<i64> {
    let s = s.trim().to_ascii_lowercase();
    let s = s.strip_prefix("interval").unwrap_or(&s).trim();
    let mut parts = s.split_whitespace();
    let n: i64 = parts.next()?.parse().ok()?;
    let unit = parts.next().unwrap_or("days");
    let ms = match unit.trim_end_matches('s') {
        "millisecond" => 1,
        "second" => 1000,
        "minute" => 60_000,
        "hour" => 3_600_000,
        "day" => 86_400_000,
        "week" => 7 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(ms)
}
