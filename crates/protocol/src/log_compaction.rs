//! Log compaction files, `_delta_log/<x>.<y>.compacted.json` [P §Log Compaction Files]: the action
//! reconciliation of commits x..=y, without `commitInfo`. Pure: the caller reads the commits.
//!
//! Invariant: a reader that replays the compaction in place of commits x..=y, after the state at
//! version x-1, reaches the state those commits reach. Hence, over the range:
//! - the last `protocol` and the last `metaData`;
//! - the last `txn` per application id;
//! - the last `domainMetadata` per domain, a tombstone (`removed`) kept: a commit before x may
//!   have defined the domain;
//! - per logical file (its path as resolved by `key`, its DV's unique id) the last `add` or
//!   `remove`; a remove is kept as a tombstone, since a commit before x may have added the file.
//!
//! `cdc` and `commitInfo` describe one commit and are dropped (the spec's rule; a reader of the
//! change feed or of commit times reads the commit files). Anything else — an action this engine
//! does not know, a checkpoint-only action in a commit — refuses the compaction: a file that
//! readers substitute for the commits must not silently drop what it does not understand.

use std::collections::BTreeMap;

use crate::actions::Action;
use crate::error::{ProtocolError, Result};
use crate::log_path::LOG_DIR;

/// `_delta_log/<start>.<end>.compacted.json`.
pub fn compaction_path(start: u64, end: u64) -> String {
    format!("{LOG_DIR}/{start:020}.{end:020}.compacted.json")
}

/// The reconciled actions of `commits` (each one commit's actions, in version order), in a fixed
/// order: protocol, metaData, txns and domains by name, then file actions in the order of their
/// last appearance. `key` resolves a logged path to the form that identifies the file (the same
/// file may be logged relative in one commit and absolute in another).
pub fn reconcile(
    commits: impl IntoIterator<Item = (u64, Vec<Action>)>,
    key: impl Fn(&str) -> Result<String>,
) -> Result<Vec<Action>> {
    let mut protocol = None;
    let mut metadata = None;
    let mut txns = BTreeMap::new();
    let mut domains = BTreeMap::new();
    // Logical file → (position of its last action, that action).
    let mut files: BTreeMap<(String, Option<String>), (usize, Action)> = BTreeMap::new();
    let mut seq = 0usize;
    for (version, actions) in commits {
        for a in actions {
            seq += 1;
            match a {
                Action::Protocol(_) => protocol = Some(a),
                Action::Metadata(_) => metadata = Some(a),
                Action::Txn(ref t) => {
                    txns.insert(t.app_id.clone(), a);
                }
                Action::DomainMetadata(ref d) => {
                    domains.insert(d.domain.clone(), a);
                }
                Action::Add(ref add) => {
                    let k = (
                        key(&add.path)?,
                        add.deletion_vector.as_ref().map(|d| d.unique_id()),
                    );
                    files.insert(k, (seq, a));
                }
                Action::Remove(ref rm) => {
                    let k = (
                        key(&rm.path)?,
                        rm.deletion_vector.as_ref().map(|d| d.unique_id()),
                    );
                    files.insert(k, (seq, a));
                }
                Action::CommitInfo(_) | Action::Cdc(_) => {}
                Action::CheckpointMetadata(_) | Action::Sidecar(_) | Action::Unknown(..) => {
                    return Err(ProtocolError::UnsupportedAction(format!(
                        "commit {version} holds a {} action, which a log compaction cannot carry",
                        action_name(&a)
                    )));
                }
            }
        }
    }
    let mut out: Vec<Action> = protocol.into_iter().chain(metadata).collect();
    out.extend(txns.into_values());
    out.extend(domains.into_values());
    let mut file_actions: Vec<(usize, Action)> = files.into_values().collect();
    file_actions.sort_by_key(|(s, _)| *s);
    out.extend(file_actions.into_iter().map(|(_, a)| a));
    Ok(out)
}

fn action_name(a: &Action) -> String {
    match a {
        Action::CheckpointMetadata(_) => "checkpointMetadata".into(),
        Action::Sidecar(_) => "sidecar".into(),
        Action::Unknown(name, _) => format!("{name:?}"),
        _ => "known".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::parse_commit;

    fn commit(v: u64, lines: &[&str]) -> (u64, Vec<Action>) {
        (v, parse_commit(v, lines.join("\n").as_bytes()).unwrap())
    }

    fn names(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| {
                let j = a.to_json().unwrap();
                let (k, v) = j.as_object().unwrap().iter().next().unwrap();
                match v.get("path").and_then(|p| p.as_str()) {
                    Some(p) => format!("{k}:{p}"),
                    None => k.clone(),
                }
            })
            .collect()
    }

    const ADD_A: &str = r#"{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}"#;
    const ADD_B: &str = r#"{"add":{"path":"b.parquet","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}"#;
    const RM_A: &str = r#"{"remove":{"path":"a.parquet","deletionTimestamp":5,"dataChange":true}}"#;
    const META: &str = r#"{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{}}}"#;
    const PROTO: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
    const INFO: &str = r#"{"commitInfo":{"operation":"WRITE"}}"#;

    #[test]
    fn the_last_action_per_file_wins_and_removes_stay_as_tombstones() {
        let out = reconcile(
            [
                commit(3, &[INFO, ADD_A]),
                commit(4, &[INFO, ADD_B]),
                commit(5, &[INFO, RM_A]),
            ],
            |p| Ok(p.to_string()),
        )
        .unwrap();
        assert_eq!(names(&out), vec!["add:b.parquet", "remove:a.parquet"]);
    }

    #[test]
    fn protocol_metadata_txn_and_domain_tombstones_are_the_last_of_the_range() {
        let txn1 = r#"{"txn":{"appId":"app","version":1}}"#;
        let txn2 = r#"{"txn":{"appId":"app","version":2}}"#;
        let dom = r#"{"domainMetadata":{"domain":"d","configuration":"{}","removed":true}}"#;
        let out = reconcile(
            [
                commit(0, &[PROTO, META, txn1, ADD_A]),
                commit(1, &[INFO, txn2, dom, PROTO]),
            ],
            |p| Ok(p.to_string()),
        )
        .unwrap();
        assert_eq!(
            names(&out),
            vec![
                "protocol",
                "metaData",
                "txn",
                "domainMetadata",
                "add:a.parquet"
            ]
        );
        assert!(out
            .iter()
            .any(|a| matches!(a, Action::Txn(t) if t.version == 2)));
        assert!(out
            .iter()
            .any(|a| matches!(a, Action::DomainMetadata(d) if d.removed)));
    }

    #[test]
    fn the_same_file_logged_two_ways_is_one_file() {
        let rm =
            r#"{"remove":{"path":"file:///t/a.parquet","deletionTimestamp":5,"dataChange":true}}"#;
        let out = reconcile([commit(1, &[ADD_A]), commit(2, &[rm])], |p| {
            Ok(p.trim_start_matches("file:///t/").to_string())
        })
        .unwrap();
        assert_eq!(names(&out), vec!["remove:file:///t/a.parquet"]);
    }

    #[test]
    fn an_action_it_does_not_know_refuses_the_compaction() {
        let odd = r#"{"futureAction":{"x":1}}"#;
        let err = reconcile([commit(7, &[ADD_A, odd])], |p| Ok(p.to_string())).unwrap_err();
        assert!(err.to_string().contains("commit 7"), "{err}");
    }

    #[test]
    fn compaction_paths_are_the_spec_names() {
        assert_eq!(
            compaction_path(0, 3),
            "_delta_log/00000000000000000000.00000000000000000003.compacted.json"
        );
    }
}
