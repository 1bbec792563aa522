//! `TIMESTAMP AS OF`: the version a timestamp names — the latest commit whose time is at or
//! before it, a commit's time as the protocol and Delta Spark define it: its in-commit timestamp
//! when the table has them, else the commit file's modification time (made increasing).

use std::collections::BTreeMap;

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

/// Each commit's time as Delta Spark reads it, ascending by version, from the listed commits
/// (`listed`: version and the commit file's modification time, ascending) and the in-commit
/// timestamps of the commits that carry one (`ict`): a commit's in-commit timestamp when it has
/// one, else its file's modification time made strictly increasing in version order (Spark's
/// `monotonizeCommitTimestamps`: a file not newer than the previous commit's time counts as 1 ms
/// after it). `commitInfo.timestamp` (the writer's clock) is not a commit's time.
pub fn spark_commit_times(listed: &[(u64, i64)], ict: &BTreeMap<u64, i64>) -> Vec<(u64, i64)> {
    let mut out: Vec<(u64, i64)> = Vec::with_capacity(listed.len());
    for &(v, mtime) in listed {
        let t = match (ict.get(&v), out.last()) {
            (Some(t), _) => *t,
            (None, Some(&(_, prev))) if mtime <= prev => prev.saturating_add(1),
            (None, _) => mtime,
        };
        out.push((v, t));
    }
    out
}

/// The commits in a log listing: (version, path, modification time), ascending by version.
pub fn listed_commits(listing: &[delta_rlc_storage::ObjectInfo]) -> Vec<(u64, String, i64)> {
    let mut commits: Vec<(u64, String, i64)> = listing
        .iter()
        .filter_map(|o| {
            let name = o.path.rsplit('/').next().unwrap_or(&o.path);
            parse_log_file_name(name)
                .filter(|f| f.kind == LogFileKind::Commit)
                .map(|f| (f.version, o.path.clone(), o.last_modified_ms))
        })
        .collect();
    commits.sort_by_key(|c| c.0);
    commits
}

/// The latest version committed at or before `ts_ms`, by [`spark_commit_times`]. In-commit
/// timestamps are read from the newest commit back while commits carry one (a table's in-commit
/// timestamps run from their enablement to the latest commit; if the latest has none they are
/// off and every commit's time is its file's); a table without them costs one listing and one
/// read. A timestamp after the latest commit is refused, as Spark refuses it.
pub async fn version_at_timestamp(store: &TableStore, ts_ms: i64) -> Result<u64> {
    let commits = listed_commits(&super::list_log(store).await?);
    let Some(latest) = commits.last().map(|c| c.0) else {
        return Err(EngineError::NotFound(
            "no Delta table: the log has no commits".into(),
        ));
    };
    let mut ict = BTreeMap::new();
    for (v, path, _) in commits.iter().rev() {
        let bytes = store.get(path).await?;
        let t = parse_commit(*v, &bytes)?.iter().find_map(|a| match a {
            Action::CommitInfo(c) => c.in_commit_timestamp,
            _ => None,
        });
        match t {
            Some(t) => ict.insert(*v, t),
            None => break,
        };
    }
    let listed: Vec<(u64, i64)> = commits.iter().map(|c| (c.0, c.2)).collect();
    let times = spark_commit_times(&listed, &ict);
    if let Some(&(_, latest_ts)) = times.last() {
        if ts_ms > latest_ts {
            return Err(EngineError::invalid(format!(
                "TIMESTAMP AS OF {} is after the latest commit: it is greater than latest commit timestamp {} (version {latest}); use the current version",
                fmt_ms(ts_ms),
                fmt_ms(latest_ts)
            )));
        }
    }
    times
        .iter()
        .rev()
        .find(|(_, t)| *t <= ts_ms)
        .map(|(v, _)| *v)
        .ok_or_else(|| {
            EngineError::NotFound(format!(
                "no version at or before {}: the earliest available commit is later",
                fmt_ms(ts_ms)
            ))
        })
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

    #[test]
    fn commit_times_are_file_times_made_increasing_or_in_commit_timestamps() {
        // v1's file is older than v0's, v2's equal to v1's adjusted time: each counts 1 ms after.
        let listed = [(0, 1_000), (1, 900), (2, 1_001), (3, 5_000), (4, 5_000)];
        let ict = BTreeMap::from([(3, 4_000), (4, 4_500)]);
        assert_eq!(
            spark_commit_times(&listed, &ict),
            vec![(0, 1_000), (1, 1_001), (2, 1_002), (3, 4_000), (4, 4_500)]
        );
        assert_eq!(
            spark_commit_times(&listed, &BTreeMap::new()),
            vec![(0, 1_000), (1, 1_001), (2, 1_002), (3, 5_000), (4, 5_001)]
        );
    }
}
