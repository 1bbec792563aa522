//! `TIMESTAMP AS OF`: the version a timestamp names — the latest commit whose timestamp (the
//! in-commit timestamp when present, else `commitInfo.timestamp`, else the file's modification
//! time) is at or before it, as Delta Spark resolves it.

use delta_rlc_protocol::actions::{parse_commit, Action};
use delta_rlc_protocol::log_path::{parse_log_file_name, LogFileKind};
use delta_rlc_storage::TableStore;

use crate::error::{EngineError, Result};

/// Parses `2026-12-01`, `2026-12-01 10:00:00[.fff]`, `2026-12-01T10:00:00[.fff]` (UTC) or an
/// RFC 3339 timestamp with an offset, to epoch milliseconds.
pub fn parse_timestamp_ms(s: &str) -> Result<i64> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let t = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.timestamp_millis());
    }
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, fmt) {
            return Ok(d.and_utc().timestamp_millis());
        }
    }
    if let Some(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
    {
        return Ok(d.and_utc().timestamp_millis());
    }
    Err(EngineError::invalid(format!(
        "TIMESTAMP AS OF: cannot read {s:?} as a timestamp (e.g. '2026-12-01 10:00:00', UTC)"
    )))
}

/// The latest version committed at or before `ts_ms`.
pub async fn version_at_timestamp(store: &TableStore, ts_ms: i64) -> Result<u64> {
    let listing = super::list_log(store).await?;
    let mut commits: Vec<(u64, String, i64)> = listing
        .iter()
        .filter_map(|o| {
            let name = o.path.rsplit('/').next().unwrap_or(&o.path);
            parse_log_file_name(name)
                .filter(|f| f.kind == LogFileKind::Commit)
                .map(|f| (f.version, o.path.clone(), o.last_modified_ms))
        })
        .collect();
    commits.sort_by_key(|c| std::cmp::Reverse(c.0));
    let Some(latest) = commits.first().map(|c| c.0) else {
        return Err(EngineError::NotFound(
            "no Delta table: the log has no commits".into(),
        ));
    };
    let mut latest_ts = None;
    for (v, path, mtime) in &commits {
        let bytes = store.get(path).await?;
        let ts = parse_commit(*v, &bytes)?
            .iter()
            .find_map(|a| match a {
                Action::CommitInfo(c) => c.in_commit_timestamp.or(c.timestamp),
                _ => None,
            })
            .unwrap_or(*mtime);
        if latest_ts.is_none() {
            latest_ts = Some(ts);
            if ts_ms > ts {
                return Err(EngineError::invalid(format!(
                    "TIMESTAMP AS OF is after the latest commit (version {latest} at {}); use the current version",
                    fmt_ms(ts)
                )));
            }
        }
        if ts <= ts_ms {
            return Ok(*v);
        }
    }
    Err(EngineError::NotFound(format!(
        "no version at or before {}: the earliest available commit is later",
        fmt_ms(ts_ms)
    )))
}

fn fmt_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string())
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_as_utc() {
        assert_eq!(parse_timestamp_ms("1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_timestamp_ms("1970-01-01 00:00:01.5").unwrap(), 1_500);
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:02").unwrap(), 2_000);
        assert_eq!(parse_timestamp_ms("1970-01-01T01:00:00+01:00").unwrap(), 0);
        assert!(parse_timestamp_ms("yesterday").is_err());
    }
}
