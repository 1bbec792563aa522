//! Which reason from the fixed list ([`AbortReason`]) a file-level abort names.
//!
//! What it decides: only the explanation of an abort the checks have already reached. Nothing here
//! clears a file or changes whether the loser commits, so nothing here can make a conflict pass.
//!
//! Tiers and reconcilers that read rows note what they found in [`Findings`]: a row both
//! transactions touched (a true overlap), a predicate they could not evaluate, or a proof that
//! failed. The checker then picks, for the files still in conflict, the first that applies of:
//! true overlap (a finding on one of them), reconcile off (legacy mode), whole-table read (or a
//! read with no condition), predicate not usable, proof failed, missing statistics (an appended
//! file without them), reconcile off (the proof that reads rows switched off), and otherwise
//! possible overlap. The attempt's budget (`budget.rs`) then
//! replaces any of these but a true overlap with budget exceeded, once it is spent.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use delta_rlc_protocol::actions::Add;

use super::summary::WinningCommit;
use crate::conflict_config::{ConflictConfig, Switch};
use crate::conflict_error::{AbortReason, ConflictKind};
use crate::error::EngineError;
use crate::read_set::ReadSet;

/// What proofs learned about winners' files while checking one winning commit.
#[derive(Debug, Default)]
pub struct Findings {
    inner: Mutex<Noted>,
}

#[derive(Debug, Default)]
struct Noted {
    /// Files in which a row both transactions touched was found.
    overlaps: BTreeSet<String>,
    /// Files against which a read predicate could not be evaluated.
    unusable: BTreeSet<String>,
    /// Files whose proof failed (a read or decode error).
    failed: BTreeSet<String>,
}

impl Findings {
    /// A row of `path` that the winner changed is one the loser read or changed.
    pub fn overlap(&self, path: &str) {
        self.note(|n| &mut n.overlaps, path);
    }

    /// A read predicate could not be evaluated on the rows of `path`.
    pub fn predicate_unusable(&self, path: &str) {
        self.note(|n| &mut n.unusable, path);
    }

    /// The proof for `path` failed (its rows or DV could not be read).
    pub fn failed(&self, path: &str) {
        self.note(|n| &mut n.failed, path);
    }

    fn note(&self, set: impl FnOnce(&mut Noted) -> &mut BTreeSet<String>, path: &str) {
        if let Ok(mut n) = self.inner.lock() {
            set(&mut n).insert(path.to_string());
        }
    }

    fn any(&self, set: impl Fn(&Noted) -> &BTreeSet<String>, files: &[String]) -> bool {
        self.inner
            .lock()
            .is_ok_and(|n| files.iter().any(|f| set(&n).contains(f)))
    }
}

/// Whether every row of the winner's added file `path` is one the winner wrote or changed, not
/// one it copied: a new path, in a commit whose every removed file is re-added under its own path
/// (deletion vectors). A copy-on-write rewrite or a compaction carries unchanged rows into new
/// files, so a row found there is not, by itself, a true overlap.
pub fn holds_only_written_rows(w: &WinningCommit, path: &str) -> bool {
    let readded: BTreeSet<&str> = w.adds.iter().map(|a| a.path.as_str()).collect();
    w.removes
        .iter()
        .all(|r| r.path != path && readded.contains(r.path.as_str()))
}

/// What the checker knows when a file-level check aborts.
pub struct AbortFacts<'a> {
    pub findings: &'a Findings,
    /// The loser read every row: the whole table, or through a predicate with no condition.
    pub reads_every_row: bool,
    /// The winner's added files, by path (statistics of a conflicting append).
    pub winner_adds: BTreeMap<&'a str, &'a Add>,
    pub config: &'a ConflictConfig,
    /// Whether a reconciler failed on this winner.
    pub reconcile_failed: bool,
}

/// The reason a file-level conflict of `kind` on `files` names (see the module header).
pub fn file_level_reason(kind: ConflictKind, files: &[String], f: &AbortFacts<'_>) -> AbortReason {
    if f.findings.any(|n| &n.overlaps, files) {
        AbortReason::TrueOverlap
    } else if f.config.legacy {
        AbortReason::ReconcileOff
    } else if kind != ConflictKind::ConcurrentDeleteDelete && f.reads_every_row {
        AbortReason::WholeTableRead
    } else if f.findings.any(|n| &n.unusable, files) {
        AbortReason::PredicateNotUsable
    } else if f.reconcile_failed || f.findings.any(|n| &n.failed, files) {
        AbortReason::ProofFailed
    } else if kind == ConflictKind::ConcurrentAppend
        && files
            .iter()
            .any(|p| f.winner_adds.get(p.as_str()).is_some_and(|a| !has_stats(a)))
    {
        AbortReason::MissingStatistics
    } else if !f.config.enabled(row_proof(kind)) {
        AbortReason::ReconcileOff
    } else {
        AbortReason::PossibleOverlap
    }
}

/// The proof that reads rows for a file-level conflict of `kind`: with it off, files the
/// statistics cannot clear are never looked at.
fn row_proof(kind: ConflictKind) -> Switch {
    match kind {
        ConflictKind::ConcurrentDeleteRead => Switch::DeleteReadRefinement,
        ConflictKind::ConcurrentDeleteDelete => Switch::DvMerge,
        _ => Switch::ValueExact,
    }
}

/// Whether `read_set` reads every row: the whole table, or a predicate with no condition.
pub fn reads_every_row(read_set: &ReadSet) -> bool {
    read_set.whole_table
        || read_set
            .predicates
            .iter()
            .any(|p| p.full().is_none() && p.exact_keys.is_none())
}

/// Whether an added file carries the value ranges data skipping needs.
fn has_stats(add: &Add) -> bool {
    add.stats
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .is_some_and(|v| v.get("minValues").is_some() && v.get("maxValues").is_some())
}

/// `e` with the reason of a file-level conflict set from `facts`; any other error unchanged.
pub fn explain(e: EngineError, facts: &AbortFacts<'_>) -> EngineError {
    match e {
        EngineError::Conflict(mut c)
            if matches!(
                c.kind,
                ConflictKind::ConcurrentAppend
                    | ConflictKind::ConcurrentDeleteRead
                    | ConflictKind::ConcurrentDeleteDelete
            ) =>
        {
            c.reason = file_level_reason(c.kind, &c.files, facts);
            EngineError::Conflict(c)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(path: &str, stats: Option<&str>) -> Add {
        Add {
            path: path.into(),
            partition_values: Default::default(),
            size: 1,
            modification_time: 0,
            data_change: true,
            stats: stats.map(str::to_string),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
            extra: Default::default(),
        }
    }

    fn predicate_read() -> ReadSet {
        let mut r = ReadSet::default();
        r.add_predicate(crate::read_set::ReadPredicate {
            partition: None,
            data: Some(datafusion::prelude::col("id").eq(datafusion::prelude::lit(1))),
            text: "id = 1".into(),
            exact_keys: None,
        });
        r
    }

    #[test]
    fn each_fact_names_its_reason_in_order() {
        let with_stats = add(
            "a",
            Some(r#"{"numRecords":1,"minValues":{"id":1},"maxValues":{"id":9}}"#),
        );
        let bare = add("b", None);
        let read = predicate_read();
        let findings = Findings::default();
        let on = ConflictConfig::default();
        let legacy = ConflictConfig {
            legacy: true,
            ..ConflictConfig::default()
        };
        let mut value_exact_off = ConflictConfig::default();
        value_exact_off.switches.insert(Switch::ValueExact, false);
        let facts = |config| AbortFacts {
            findings: &findings,
            reads_every_row: reads_every_row(&read),
            winner_adds: [("a", &with_stats), ("b", &bare)].into_iter().collect(),
            config,
            reconcile_failed: false,
        };
        let files = |p: &str| vec![p.to_string()];
        let append = ConflictKind::ConcurrentAppend;
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&on)),
            AbortReason::PossibleOverlap
        );
        assert_eq!(
            file_level_reason(append, &files("b"), &facts(&on)),
            AbortReason::MissingStatistics
        );
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&value_exact_off)),
            AbortReason::ReconcileOff
        );
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&legacy)),
            AbortReason::ReconcileOff
        );
        findings.failed("a");
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&on)),
            AbortReason::ProofFailed
        );
        findings.predicate_unusable("a");
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&on)),
            AbortReason::PredicateNotUsable
        );
        // A finding on another file says nothing about this one.
        findings.overlap("b");
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&on)),
            AbortReason::PredicateNotUsable
        );
        findings.overlap("a");
        assert_eq!(
            file_level_reason(append, &files("a"), &facts(&legacy)),
            AbortReason::TrueOverlap
        );
        let mut whole = ReadSet::default();
        whole.read_whole_table();
        let none = Findings::default();
        let f = AbortFacts {
            findings: &none,
            reads_every_row: reads_every_row(&whole),
            winner_adds: BTreeMap::new(),
            config: &on,
            reconcile_failed: false,
        };
        assert_eq!(
            file_level_reason(ConflictKind::ConcurrentDeleteRead, &files("a"), &f),
            AbortReason::WholeTableRead
        );
    }

    /// Rows found in a merge-on-read winner's new file are rows it wrote; in a copy-on-write
    /// rewrite (a removed file not re-added) they may be copies, so no true overlap is claimed.
    #[test]
    fn only_files_of_written_rows_prove_an_overlap() {
        let winner = |removed: &[&str], added: &[&str]| WinningCommit {
            version: 1,
            commit_info: None,
            protocol: None,
            metadata: None,
            txns: vec![],
            domains: vec![],
            adds: added.iter().map(|p| add(p, None)).collect(),
            removes: removed
                .iter()
                .map(|p| add(p, None).to_remove(0, true))
                .collect(),
        };
        let append = winner(&[], &["new"]);
        assert!(holds_only_written_rows(&append, "new"));
        let merge_on_read = winner(&["f"], &["f", "new"]);
        assert!(holds_only_written_rows(&merge_on_read, "new"));
        assert!(
            !holds_only_written_rows(&merge_on_read, "f"),
            "a re-added file holds old rows"
        );
        let copy_on_write = winner(&["f"], &["new"]);
        assert!(!holds_only_written_rows(&copy_on_write, "new"));
    }

    #[test]
    fn every_reason_has_a_distinct_name_that_parses_back() {
        let names: BTreeSet<&str> = AbortReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), AbortReason::ALL.len());
        for r in AbortReason::ALL {
            assert_eq!(AbortReason::parse(r.name()), Some(r));
        }
    }
}
