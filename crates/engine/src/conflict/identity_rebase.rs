//! Identity values re-based past a winner's (switch `identityRebase`). Two transactions that both
//! generate identity values start from the same high-water mark, so their values collide; Delta
//! Spark and Databricks abort the second. Here the loser's values are moved past the winner's —
//! exactly the values it would have generated had it run after the winner — and its commit raises
//! the mark past both.
//!
//! **Proves** (every condition, else the usual `MetadataChanged` abort):
//! - the loser's identity values are all generated ones and nothing in its statement depends on
//!   them: it gave no explicit value and checked no REPLACE WHERE predicate on them
//!   (`Transaction::identity_pinned`), it removes nothing and writes no DV or change file, so
//!   every row it stages is a new row whose identity value the generator assigned, in order, from
//!   the mark it read: the column's values are exactly `base + step, …, ours` (the rewrite checks
//!   each value against that range before moving it: `txn/identity_rebase.rs`);
//! - its own metadata change is the marks of the columns it generated, nothing else (compared
//!   with the table's metadata as the last winner left it, marks stripped);
//! - each such column is still the same identity column in the winner's metadata (start, step,
//!   mode unchanged: `metadata_change` refuses any other change to it), and the winner's mark is
//!   at or past the one the loser started from, in the step's direction (a mark that went back,
//!   or vanished, is a doubt: abort);
//! - the winner's metadata is otherwise one a loser that stages no metadata could commit under
//!   (`metadata_change::classify`, run by the caller as for any data transaction).
//!
//! Then, per column, the loser's values move by `shift = winner mark − base mark` (a multiple of
//! nothing in particular: the generator continues from the mark, whatever it is, as here and in
//! Spark), its mark becomes `ours + shift`, and its metadata becomes the winner's with those
//! marks. The shift is applied to the files before the next attempt (`txn/identity_rebase.rs`),
//! which re-checks every table rule on the moved rows: a CHECK on the identity column, or a
//! generated column computed from it, that the moved rows break aborts. Several winners add their
//! shifts; the files are rewritten once per attempt.
//!
//! Why skipping the abort is safe: nothing outside the transaction saw its values (its files are
//! unreferenced until it commits), the moved values lie past every value any winner generated
//! (winners' values are at most the winner's mark, in the step's direction), and the loser's
//! other actions were checked against the winner as those of any data transaction.

use std::collections::{BTreeMap, BTreeSet};

use delta_rlc_protocol::actions::{Action, Metadata};
use delta_rlc_protocol::schema::StructType;
use serde_json::json;

use super::checks::{conflict, CheckInput, CheckOutcome, LoserState};
use super::summary::WinningCommit;
use super::Event;
use crate::conflict_config::Switch;
use crate::conflict_error::ConflictKind;
use crate::identity_schema::{identity_columns, HWM_KEY};

/// The values one column's files hold now, and how far they must move before the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    /// The mark the values were generated after (`start − step` when there was none).
    pub after: i64,
    /// The last value generated (the loser's own mark before this shift).
    pub last: i64,
    pub step: i64,
    /// Added to every value.
    pub by: i64,
}

/// The loser re-based on one winner: its new metadata and each column's shift.
#[derive(Debug)]
pub struct Rebased {
    pub metadata: Metadata,
    pub shifts: BTreeMap<String, Shift>,
}

/// Why the loser's actions rule the re-basing out, if they do.
pub fn refuse_actions(staged: &[Action]) -> Option<String> {
    staged.iter().find_map(|a| match a {
        Action::Add(add) if add.data_change && add.deletion_vector.is_none() => None,
        Action::Add(add) => Some(format!("{} is not a plain new file", add.path)),
        Action::Metadata(_) | Action::CommitInfo(_) | Action::Txn(_) => None,
        Action::DomainMetadata(d) if d.domain == "delta.rowTracking" => None,
        Action::Remove(r) => Some(format!("it removes {}", r.path)),
        Action::Cdc(_) => Some("it writes change data".into()),
        Action::Protocol(_) => Some("it changes the protocol".into()),
        Action::DomainMetadata(d) => Some(format!("it sets domain {}", d.domain)),
        _ => Some("it stages an action re-basing does not know".into()),
    })
}

/// The identity columns the loser generated values for, when it may be re-based; else `None`
/// when it generated none, or the reason it may not be.
pub(super) fn applies<'a>(
    input: &CheckInput<'_>,
    state: &'a LoserState,
) -> std::result::Result<&'a BTreeSet<String>, Option<String>> {
    let generated = state.identity_generated.as_ref().ok_or(None)?;
    let refuse = |r: String| Some(format!(": identity values cannot be re-based: {r}"));
    if !input.config.enabled(Switch::IdentityRebase) {
        return Err(refuse("identityRebase is off".into()));
    }
    if let Some(r) = refuse_actions(&state.staged) {
        return Err(refuse(r));
    }
    Ok(generated)
}

/// Re-bases the loser's metadata and identity values on the winner's metadata `m` (the caller
/// has checked the loser's other actions against it as a data transaction's).
pub(super) fn check(
    input: &CheckInput<'_>,
    state: &LoserState,
    w: &WinningCommit,
    m: &Metadata,
    out: &mut CheckOutcome,
) -> crate::error::Result<()> {
    let abort = |reason: String| {
        conflict(
            ConflictKind::MetadataChanged,
            w,
            vec![],
            Some(format!(
                "both transactions change the table's metadata: identity values cannot be re-based: {reason}"
            )),
            Some("identityRebase"),
        )
    };
    let generated = applies(input, state).map_err(|r| abort(r.unwrap_or_default()))?;
    let base = state
        .table_metadata
        .as_ref()
        .unwrap_or(&input.read_snapshot.metadata);
    let ours = state
        .staged
        .iter()
        .find_map(Action::as_metadata)
        .ok_or_else(|| abort("no metadata action".into()))?;
    let r = rebase(base, m, ours, generated).map_err(abort)?;
    let moved: serde_json::Map<String, serde_json::Value> = r
        .shifts
        .iter()
        .map(|(c, s)| (c.clone(), json!(s.by)))
        .collect();
    out.events.push(Event::new(
        crate::events::EventName::IdentityRebased,
        json!({
            "winningVersion": w.version,
            "winningOperation": w.operation(),
            "shifts": moved,
        }),
    ));
    out.rebased_metadata = Some(r.metadata);
    out.identity_shifts = r.shifts;
    Ok(())
}

/// `m`'s schema with the marks of `columns` removed, and `m` without its schema text.
fn without_marks(
    m: &Metadata,
    columns: &BTreeSet<String>,
) -> Result<(StructType, Metadata), String> {
    let mut schema = StructType::parse(&m.schema_string).map_err(|e| e.to_string())?;
    for f in schema.fields.iter_mut() {
        if columns.contains(&f.name) {
            f.metadata.remove(HWM_KEY);
        }
    }
    let mut rest = m.clone();
    rest.schema_string = String::new();
    Ok((schema, rest))
}

fn marks(m: &Metadata) -> Result<BTreeMap<String, (Option<i64>, i64, i64)>, String> {
    let schema = StructType::parse(&m.schema_string).map_err(|e| e.to_string())?;
    Ok(identity_columns(&schema)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|c| (c.name, (c.high_water_mark, c.start, c.step)))
        .collect())
}

/// Re-bases the loser's metadata `ours` (its change from `base`, the table's metadata as the last
/// winner left it, is the marks of `generated`) on the winner's `winner`.
pub fn rebase(
    base: &Metadata,
    winner: &Metadata,
    ours: &Metadata,
    generated: &BTreeSet<String>,
) -> Result<Rebased, String> {
    if without_marks(ours, generated)? != without_marks(base, generated)? {
        return Err("this transaction changes more of the metadata than identity marks".into());
    }
    let (base_marks, our_marks, winner_marks) = (marks(base)?, marks(ours)?, marks(winner)?);
    let mut schema = StructType::parse(&winner.schema_string).map_err(|e| e.to_string())?;
    let mut shifts = BTreeMap::new();
    for name in generated {
        let missing = || format!("{name} is no longer an identity column");
        let &(b, start, step) = base_marks.get(name).ok_or_else(missing)?;
        let &(o, _, _) = our_marks.get(name).ok_or_else(missing)?;
        let &(w, w_start, w_step) = winner_marks.get(name).ok_or_else(missing)?;
        if (w_start, w_step) != (start, step) {
            return Err(format!("{name}: the winner changed its start or step"));
        }
        let overflow = || format!("{name}: moving its values past the winner's overflows BIGINT");
        let first =
            |m: Option<i64>| m.map_or_else(|| start.checked_sub(step).ok_or_else(overflow), Ok);
        let (after, last) = (
            first(b)?,
            o.ok_or_else(|| format!("{name}: no value generated"))?,
        );
        let won = match (b, w) {
            (Some(_), None) => return Err(format!("{name}: the winner cleared its mark")),
            (_, w) => first(w)?,
        };
        let by = won.checked_sub(after).ok_or_else(overflow)?;
        if by != 0 && (by > 0) != (step > 0) {
            return Err(format!(
                "{name}: the winner's mark {won} is behind the mark {after} these values follow"
            ));
        }
        let new_mark = last.checked_add(by).ok_or_else(overflow)?;
        if let Some(f) = schema.fields.iter_mut().find(|f| &f.name == name) {
            f.metadata.insert(HWM_KEY.into(), json!(new_mark));
        }
        shifts.insert(
            name.clone(),
            Shift {
                after,
                last,
                step,
                by,
            },
        );
    }
    let mut metadata = winner.clone();
    metadata.schema_string = schema.to_schema_string();
    Ok(Rebased { metadata, shifts })
}

/// Adds one winner's shifts to those still pending (the files are not rewritten yet: their
/// values, and so `after` and `last`, stay those of the first shift).
pub fn accumulate(
    pending: &mut BTreeMap<String, Shift>,
    new: BTreeMap<String, Shift>,
) -> Result<(), String> {
    for (name, s) in new {
        match pending.get_mut(&name) {
            Some(p) => {
                p.by =
                    p.by.checked_add(s.by)
                        .ok_or_else(|| format!("{name}: the shift overflows BIGINT"))?
            }
            None => {
                pending.insert(name, s);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(mark: Option<i64>, step: i64, extra: &str) -> Metadata {
        let mut md = serde_json::Map::new();
        md.insert("delta.identity.start".into(), json!(1));
        md.insert("delta.identity.step".into(), json!(step));
        md.insert("delta.identity.allowExplicitInsert".into(), json!(false));
        if let Some(m) = mark {
            md.insert(HWM_KEY.into(), json!(m));
        }
        let schema = json!({"type": "struct", "fields": [
            {"name": "id", "type": "long", "nullable": true, "metadata": md},
            {"name": "v", "type": "string", "nullable": true, "metadata": {}},
        ]});
        let mut m = Metadata {
            id: "t".into(),
            name: None,
            description: None,
            format: Default::default(),
            schema_string: schema.to_string(),
            partition_columns: vec![],
            created_time: None,
            configuration: Default::default(),
            extra: Default::default(),
        };
        if !extra.is_empty() {
            m.configuration.insert(extra.into(), "1".into());
        }
        m
    }

    fn ids() -> BTreeSet<String> {
        ["id".to_string()].into()
    }

    fn mark_of(m: &Metadata) -> Option<i64> {
        marks(m).ok()?.get("id")?.0
    }

    #[test]
    fn the_loser_moves_past_the_winner() {
        // Both read mark 100; the winner generated 3 (mark 103), the loser 2 (mark 102).
        let r = rebase(
            &meta(Some(100), 1, ""),
            &meta(Some(103), 1, ""),
            &meta(Some(102), 1, ""),
            &ids(),
        )
        .expect("rebased");
        assert_eq!(mark_of(&r.metadata), Some(105));
        assert_eq!(
            r.shifts["id"],
            Shift {
                after: 100,
                last: 102,
                step: 1,
                by: 3
            }
        );
        // No mark before: the values followed start - step.
        let r = rebase(
            &meta(None, 10, ""),
            &meta(Some(21), 10, ""),
            &meta(Some(11), 10, ""),
            &ids(),
        )
        .expect("rebased");
        assert_eq!(r.shifts["id"].by, 30);
        assert_eq!(mark_of(&r.metadata), Some(41));
        // A negative step moves down.
        let r = rebase(
            &meta(Some(-5), -1, ""),
            &meta(Some(-7), -1, ""),
            &meta(Some(-6), -1, ""),
            &ids(),
        )
        .expect("rebased");
        assert_eq!((r.shifts["id"].by, mark_of(&r.metadata)), (-2, Some(-8)));
        // The winner's other (compatible) changes are kept.
        let r = rebase(
            &meta(Some(1), 1, ""),
            &meta(Some(1), 1, "k"),
            &meta(Some(2), 1, ""),
            &ids(),
        )
        .expect("rebased");
        assert_eq!(
            r.metadata.configuration.get("k").map(String::as_str),
            Some("1")
        );
        assert_eq!(r.shifts["id"].by, 0);
    }

    #[test]
    fn any_doubt_refuses() {
        // The loser changed more than its marks.
        assert!(rebase(
            &meta(Some(1), 1, ""),
            &meta(Some(3), 1, ""),
            &meta(Some(2), 1, "k"),
            &ids()
        )
        .is_err());
        // The winner's mark went back, or vanished.
        assert!(rebase(
            &meta(Some(10), 1, ""),
            &meta(Some(9), 1, ""),
            &meta(Some(11), 1, ""),
            &ids()
        )
        .is_err());
        assert!(rebase(
            &meta(Some(10), 1, ""),
            &meta(None, 1, ""),
            &meta(Some(11), 1, ""),
            &ids()
        )
        .is_err());
        // Its step changed.
        assert!(rebase(
            &meta(Some(10), 1, ""),
            &meta(Some(12), 2, ""),
            &meta(Some(11), 1, ""),
            &ids()
        )
        .is_err());
        // Overflow.
        assert!(rebase(
            &meta(Some(10), 1, ""),
            &meta(Some(i64::MAX), 1, ""),
            &meta(Some(11), 1, ""),
            &ids()
        )
        .is_err());
    }

    #[test]
    fn actions_other_than_new_files_refuse() {
        let add = delta_rlc_protocol::actions::Add {
            path: "a".into(),
            data_change: true,
            ..Default::default()
        };
        assert!(refuse_actions(&[Action::Add(add.clone())]).is_none());
        let rm = delta_rlc_protocol::actions::Remove {
            path: "b".into(),
            data_change: true,
            ..Default::default()
        };
        assert!(refuse_actions(&[Action::Add(add.clone()), Action::Remove(rm)]).is_some());
        let compaction = delta_rlc_protocol::actions::Add {
            data_change: false,
            ..add
        };
        assert!(refuse_actions(&[Action::Add(compaction)]).is_some());
    }
}
