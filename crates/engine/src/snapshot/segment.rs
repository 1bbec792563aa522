//! Choosing the files that make up a version: the newest complete checkpoint at or below it, then
//! every commit after the checkpoint up to it, contiguous. `_last_checkpoint` is not trusted (a hint
//! at most); the listing decides. A gap in the commits is corruption (or a cleaned-up version).

use delta_rlc_protocol::log_path::{parse_log_file_name, LogFileKind, LOG_DIR};
use delta_rlc_storage::{ObjectInfo, TableStore};

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointFiles {
    /// One or more parquet parts (classic or multi-part), or a UUID-named V2 checkpoint.
    Parquet(Vec<String>),
    Json(String),
}

#[derive(Debug, Clone)]
pub struct LogSegment {
    pub version: u64,
    pub checkpoint: Option<(u64, CheckpointFiles)>,
    /// (version, relative path, modification time ms) in ascending version order.
    pub commits: Vec<(u64, String, i64)>,
    /// The listed commits at or below the checkpoint, ascending (not necessarily contiguous or
    /// complete: only a listing's). With `commits`, what replaying onto a snapshot older than the
    /// checkpoint reads; a full load never reads them.
    pub earlier_commits: Vec<(u64, String, i64)>,
    /// Identity ("size:e-tag") of each listed commit file whose store gives an e-tag, by version:
    /// equal identities mean the same object, not rewritten since.
    pub commit_ids: std::collections::HashMap<u64, String>,
}

/// A listed object's identity, when its store gives an e-tag.
pub fn object_id(o: &ObjectInfo) -> Option<String> {
    o.e_tag.as_ref().map(|t| format!("{}:{t}", o.size))
}

/// Lists `_delta_log` once.
pub async fn list_log(store: &TableStore) -> Result<Vec<ObjectInfo>> {
    store.list_dir(LOG_DIR).await.map_err(EngineError::from)
}

/// The version `_last_checkpoint` names; None when it is absent or unparsable. Only ever a place to
/// start listing from ([`segment_after`] decides whether what follows it suffices). A store that
/// fails to answer is an error, as it would be for the listing.
pub async fn last_checkpoint_hint(store: &TableStore) -> Result<Option<u64>> {
    let bytes = match store.get(&format!("{LOG_DIR}/_last_checkpoint")).await {
        Ok(b) => b,
        Err(e) if e.kind == delta_rlc_storage::StorageErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("version")?.as_u64()))
}

/// The segment of `version` (None = latest) from a listing of only the log names after
/// `{start:020}` — every checkpoint at or above version `start` and every commit after it. When
/// that listing holds a complete checkpoint at or below the target, the newest such checkpoint (the
/// one a whole listing picks: it is at least that one, so at or above `start`) and every commit
/// after it are in it, and the segment is exactly the whole listing's. Otherwise (`start` stale,
/// wrong, above the target, or its checkpoint cleaned up) or on any error: None, and the caller
/// lists the whole log.
pub async fn segment_after(
    store: &TableStore,
    start: u64,
    version: Option<u64>,
) -> Result<Option<LogSegment>> {
    let listing = store
        .list_dir_after(LOG_DIR, &format!("{start:020}"))
        .await
        .map_err(EngineError::from)?;
    Ok(build_segment(&listing, version)
        .ok()
        .filter(|s| s.checkpoint.as_ref().is_some_and(|(v, _)| *v >= start)))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Builds the segment for `version` (None = latest) from a listing.
pub fn build_segment(listing: &[ObjectInfo], version: Option<u64>) -> Result<LogSegment> {
    let mut commits: Vec<(u64, String, i64)> = Vec::new();
    // (version) -> candidate checkpoints
    let mut classic: Vec<(u64, String)> = Vec::new();
    let mut multipart: std::collections::BTreeMap<(u64, u32), Vec<(u32, String)>> =
        Default::default();
    let mut uuid_cps: Vec<(u64, String, bool)> = Vec::new();
    for obj in listing {
        let Some(parsed) = parse_log_file_name(file_name(&obj.path)) else {
            continue;
        };
        match parsed.kind {
            LogFileKind::Commit => {
                commits.push((parsed.version, obj.path.clone(), obj.last_modified_ms))
            }
            LogFileKind::Checkpoint => classic.push((parsed.version, obj.path.clone())),
            LogFileKind::MultiPartCheckpoint { part, parts } => multipart
                .entry((parsed.version, parts))
                .or_default()
                .push((part, obj.path.clone())),
            LogFileKind::UuidCheckpoint { json, .. } => {
                uuid_cps.push((parsed.version, obj.path.clone(), json))
            }
            _ => {}
        }
    }
    commits.sort_by_key(|c| c.0);
    let latest_commit = commits.last().map(|c| c.0);
    let mut checkpoint_versions: Vec<u64> = classic.iter().map(|c| c.0).collect();
    for ((v, parts), found) in &multipart {
        if found.len() == *parts as usize {
            checkpoint_versions.push(*v);
        }
    }
    checkpoint_versions.extend(uuid_cps.iter().map(|c| c.0));
    let latest_cp = checkpoint_versions.iter().copied().max();
    let target = match version {
        Some(v) => v,
        None => match (latest_commit, latest_cp) {
            (Some(c), Some(p)) => c.max(p),
            (Some(c), None) => c,
            (None, Some(p)) => p,
            (None, None) => {
                return Err(EngineError::NotFound(
                    "no Delta table here: _delta_log is empty or missing".into(),
                ))
            }
        },
    };
    let cp_version = checkpoint_versions
        .into_iter()
        .filter(|v| *v <= target)
        .max();
    let checkpoint = match cp_version {
        None => None,
        Some(v) => {
            let files = if let Some((_, p)) = classic.iter().find(|c| c.0 == v) {
                CheckpointFiles::Parquet(vec![p.clone()])
            } else if let Some((_, p, json)) = uuid_cps.iter().find(|c| c.0 == v) {
                if *json {
                    CheckpointFiles::Json(p.clone())
                } else {
                    CheckpointFiles::Parquet(vec![p.clone()])
                }
            } else {
                let parts = multipart
                    .iter()
                    .find(|((mv, parts), found)| *mv == v && found.len() == *parts as usize)
                    .map(|(_, found)| {
                        let mut f = found.clone();
                        f.sort();
                        f.into_iter().map(|(_, p)| p).collect()
                    })
                    .unwrap_or_default();
                CheckpointFiles::Parquet(parts)
            };
            Some((v, files))
        }
    };
    let start = checkpoint.as_ref().map(|(v, _)| v + 1).unwrap_or(0);
    let (needed, earlier_commits): (Vec<_>, Vec<_>) = commits
        .into_iter()
        .filter(|c| c.0 <= target)
        .partition(|c| c.0 >= start);
    let mut expect = start;
    for (v, _, _) in &needed {
        if *v != expect {
            return Err(EngineError::corrupt(format!(
                "log is missing version {expect} (found {v} next)"
            )));
        }
        expect += 1;
    }
    if expect != target + 1 {
        return Err(match version {
            Some(v) if latest_commit.is_none_or(|l| v > l) => {
                EngineError::NotFound(format!("version {v} does not exist (latest is {})", latest_commit.unwrap_or(0)))
            }
            _ => EngineError::NotFound(format!(
                "version {target} cannot be reconstructed: commit {expect} is missing (cleaned up or never written)"
            )),
        });
    }
    let commit_ids = listing
        .iter()
        .filter_map(|o| {
            let p = parse_log_file_name(file_name(&o.path))?;
            (p.kind == LogFileKind::Commit)
                .then(|| object_id(o).map(|id| (p.version, id)))
                .flatten()
        })
        .collect();
    Ok(LogSegment {
        version: target,
        checkpoint,
        commit_ids,
        commits: needed,
        earlier_commits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> ObjectInfo {
        ObjectInfo {
            path: format!("_delta_log/{name}"),
            size: 1,
            last_modified_ms: 0,
            e_tag: None,
        }
    }

    #[test]
    fn picks_newest_complete_checkpoint() {
        let listing = vec![
            info("00000000000000000009.json"),
            info("00000000000000000010.json"),
            info("00000000000000000010.checkpoint.parquet"),
            info("00000000000000000011.json"),
            info("00000000000000000012.checkpoint.0000000001.0000000002.parquet"),
            info("00000000000000000012.json"),
        ];
        let seg = build_segment(&listing, None).unwrap();
        assert_eq!(seg.version, 12);
        assert_eq!(
            seg.checkpoint.as_ref().unwrap().0,
            10,
            "incomplete multi-part set ignored"
        );
        assert_eq!(
            seg.commits.iter().map(|c| c.0).collect::<Vec<_>>(),
            vec![11, 12]
        );
        assert!(
            build_segment(&listing, Some(9)).is_err(),
            "version 0..8 are gone"
        );
    }

    #[test]
    fn gap_is_an_error() {
        let listing = vec![
            info("00000000000000000000.json"),
            info("00000000000000000002.json"),
        ];
        let e = build_segment(&listing, None).unwrap_err();
        assert!(e.to_string().contains("missing version 1"), "{e}");
    }
}
