//! Case 2 across one retry round: the DV chain of a path through the winners the round read.
//!
//! When a loser retries it reads every winner since its last attempt (a round), and in a busy
//! table several of them DV-update the same file P one after another: each removes P with
//! exactly the DV the previous one added and adds P back with a new DV. The loser's own rows on
//! P need checking only against the DV at the end of that chain, `d_end`:
//!
//! - Claim: if `d_base ⊆ d_end` and `own ∩ d_end = ∅` (where `d_base` is the DV the loser read P
//!   with and `own` the rows it newly deletes), then "every winner of the chain, then the loser"
//!   is a valid serial order on P. Re-run after the chain, the loser's statement sees on P the
//!   rows outside `d_end`; those are a subset of the rows it read (outside `d_base`), so it
//!   matches at most `own` (file contents never change); and every row of `own` is still live.
//!   So it deletes exactly `own` again, computing the same post-images. What the intermediate
//!   DVs held does not matter to this argument: only the state the loser commits onto does.
//! - Each winner of the chain still goes through every other check at its own turn (its whole
//!   commit, its new files through the append tiers): only P is settled for it, and only because
//!   the loser's remove of P already points at `d_end` (checked here at that turn).
//! - A link is exact: the next winner's remove of P carries the previous add's DV unique id, the
//!   same row count, and that winner has exactly one add and one remove of P. Anything else on P
//!   (a remove without an add, a rewrite, another DV id) ends the chain before that winner, which
//!   is then checked on its own.
//!
//! Why: with four writers each round meets about three winners, all DV-updating the same files;
//! checking against each in turn loaded, merged and wrote every file's DV once per winner.

use std::collections::HashMap;
use std::sync::Mutex;

use delta_rlc_protocol::actions::Add;

use crate::conflict::summary::WinningCommit;

/// One winner's DV update of a path, passed by a chain already checked against its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The DV unique id of the winner's remove of the path.
    pub removed_dv: String,
    /// The DV unique id of the winner's add of the path.
    pub added_dv: String,
    /// The DV unique id at the chain's end, which the loser's remove of the path points at.
    pub end_dv: String,
}

/// The links a loser's transaction has checked ahead, by (winner version, path).
#[derive(Debug, Default)]
pub struct DvChainMemo {
    links: Mutex<HashMap<(u64, String), Link>>,
}

impl DvChainMemo {
    pub fn record(&self, version: u64, path: &str, link: Link) {
        if let Ok(mut links) = self.links.lock() {
            links.insert((version, path.to_string()), link);
        }
    }

    /// Whether winner `version`'s update of `path` (remove `win_removed`, add `win_added`) was
    /// checked as part of a chain whose end the loser's remove (`loser_removed`) points at.
    pub fn passed(
        &self,
        version: u64,
        path: &str,
        win_removed: Option<String>,
        win_added: Option<String>,
        loser_removed: Option<String>,
    ) -> bool {
        let (Some(removed), Some(added), Some(loser)) = (win_removed, win_added, loser_removed)
        else {
            return false;
        };
        let Ok(links) = self.links.lock() else {
            return false;
        };
        links
            .get(&(version, path.to_string()))
            .is_some_and(|l| l.removed_dv == removed && l.added_dv == added && l.end_dv == loser)
    }
}

/// The last add of `path` along its DV chain from `start` (an add with a DV) through `later`
/// winners in version order, and the (version, removed DV, added DV) of each winner passed.
/// Returns `start` and no links when the next winner touching `path` does not link.
pub fn chain_end<'a>(
    path: &str,
    start: &'a Add,
    later: &'a [WinningCommit],
) -> (&'a Add, Vec<(u64, String, String)>) {
    let mut end = start;
    let mut end_records = start.num_records();
    let mut passed = Vec::new();
    for w in later {
        let mut adds = w.adds.iter().filter(|a| a.path == path);
        let mut removes = w.removes.iter().filter(|r| r.path == path);
        let (first_add, first_remove) = (adds.next(), removes.next());
        if first_add.is_none() && first_remove.is_none() {
            continue;
        }
        let (Some(add), Some(remove), None, None) =
            (first_add, first_remove, adds.next(), removes.next())
        else {
            break;
        };
        let (Some(end_dv), Some(removed_dv), Some(added_dv)) = (
            end.deletion_vector.as_deref(),
            remove.deletion_vector.as_deref(),
            add.deletion_vector.as_deref(),
        ) else {
            break;
        };
        let end_id = end_dv.unique_id();
        let records = add.num_records();
        if !removed_dv.has_unique_id(&end_id) || records.is_none() || records != end_records {
            break;
        }
        passed.push((w.version, end_id, added_dv.unique_id()));
        end = add;
        end_records = records;
    }
    (end, passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use delta_rlc_protocol::actions::Remove;
    use delta_rlc_protocol::dv::DvDescriptor;

    fn dv(id: &str) -> Option<Box<DvDescriptor>> {
        Some(Box::new(DvDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: id.into(),
            offset: Some(1),
            size_in_bytes: 10,
            cardinality: 1,
            max_row_index: None,
        }))
    }

    fn add(path: &str, id: Option<&str>, records: i64) -> Add {
        Add {
            path: path.into(),
            deletion_vector: id.and_then(dv),
            stats: Some(format!("{{\"numRecords\":{records}}}")),
            ..Default::default()
        }
    }

    fn remove(path: &str, id: Option<&str>) -> Remove {
        Remove {
            path: path.into(),
            deletion_vector: id.and_then(dv),
            ..Default::default()
        }
    }

    fn winner(version: u64, adds: Vec<Add>, removes: Vec<Remove>) -> WinningCommit {
        WinningCommit {
            version,
            commit_info: None,
            protocol: None,
            metadata: None,
            txns: vec![],
            domains: vec![],
            adds,
            removes,
        }
    }

    #[test]
    fn a_chain_follows_exact_links_and_stops_at_the_first_other_action_on_the_path() {
        let start = add("p", Some("a"), 10);
        let later = vec![
            winner(
                5,
                vec![add("p", Some("b"), 10)],
                vec![remove("p", Some("a"))],
            ),
            winner(6, vec![add("q", Some("x"), 10)], vec![remove("q", None)]),
            winner(
                7,
                vec![add("p", Some("c"), 10)],
                vec![remove("p", Some("b"))],
            ),
            // Not linked: removes p with a DV other than the chain's end.
            winner(
                8,
                vec![add("p", Some("d"), 10)],
                vec![remove("p", Some("b"))],
            ),
            winner(
                9,
                vec![add("p", Some("e"), 10)],
                vec![remove("p", Some("d"))],
            ),
        ];
        let (end, passed) = chain_end("p", &start, &later);
        assert_eq!(
            end.deletion_vector.as_deref().map(|d| d.unique_id()),
            Some("uc@1".into())
        );
        assert_eq!(
            passed,
            vec![
                (5, "ua@1".to_string(), "ub@1".to_string()),
                (7, "ub@1".to_string(), "uc@1".to_string())
            ]
        );
    }

    #[test]
    fn a_chain_does_not_pass_a_remove_without_add_a_double_add_or_another_row_count() {
        let start = add("p", Some("a"), 10);
        let breakers = [
            winner(5, vec![], vec![remove("p", Some("a"))]),
            winner(5, vec![add("p", None, 10)], vec![remove("p", Some("a"))]),
            winner(
                5,
                vec![add("p", Some("b"), 10), add("p", Some("c"), 10)],
                vec![remove("p", Some("a"))],
            ),
            winner(
                5,
                vec![add("p", Some("b"), 11)],
                vec![remove("p", Some("a"))],
            ),
            winner(5, vec![add("p", Some("b"), 10)], vec![remove("p", None)]),
            winner(5, vec![add("p", Some("b"), 10)], vec![]),
        ];
        for w in breakers {
            let later = vec![w];
            let (end, passed) = chain_end("p", &start, &later);
            assert!(std::ptr::eq(end, &start), "{:?}", later[0]);
            assert!(passed.is_empty());
        }
    }

    #[test]
    fn the_memo_passes_only_the_recorded_link_while_the_loser_stands_on_its_end() {
        let memo = DvChainMemo::default();
        let link = Link {
            removed_dv: "ua".into(),
            added_dv: "ub".into(),
            end_dv: "uc".into(),
        };
        memo.record(5, "p", link);
        let s = |x: &str| Some(x.to_string());
        assert!(memo.passed(5, "p", s("ua"), s("ub"), s("uc")));
        assert!(!memo.passed(6, "p", s("ua"), s("ub"), s("uc")));
        assert!(!memo.passed(5, "q", s("ua"), s("ub"), s("uc")));
        assert!(!memo.passed(5, "p", s("ux"), s("ub"), s("uc")));
        assert!(!memo.passed(5, "p", s("ua"), s("ux"), s("uc")));
        assert!(!memo.passed(5, "p", s("ua"), s("ub"), s("ux")));
        assert!(!memo.passed(5, "p", None, s("ub"), s("uc")));
    }
}
