//! What a lost commit race costs in round trips: the winners' commits are fetched together, and
//! the winners' deletion vectors the DV merge needs are read in one stage, not one per winner.

use std::collections::BTreeMap;

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::conflict_error::AbortReason;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::{Prepared, SqlSession};
use delta_rlc_engine::EngineError;

use crate::common::rt;
use crate::statements::rows;

/// Races a DELETE of id 0 against one DELETE per id of `winners` on the same (only) file, each
/// committed first. With row-level concurrency and no winner deleting id 0: checks the rows and
/// that every winner was reconciled by a DV merge. In legacy mode, or when a winner deleted id 0
/// too (a true overlap, with the DVs already read ahead): checks that the loser aborts — naming
/// the overlap in the second case — and that the table holds the winners' deletions only.
/// Returns the loser's added critical-path depth and GET count.
async fn race(name: &str, winners: &[i64], legacy: bool) -> (u32, u64) {
    let loc = format!("memory://race-io-{name}/t");
    // Every request waits 10 ms, so requests issued together overlap and the depth is the chain.
    let options = BTreeMap::from([(
        "delta_rlc_latency_profile".to_string(),
        "fixed:10".to_string(),
    )]);
    // The loser and the winners are separate writers: nothing one read or wrote is in the
    // other's memory.
    // (Seeds differ: the ids of their new files must too.)
    let session = |seed| {
        let mut config = ConflictConfig::default();
        config.legacy = legacy;
        let mut s = SqlSession::new(Env::deterministic(seed), config);
        s.storage_options = options.clone();
        s.register("t", &loc);
        s
    };
    let (s, w) = (session(7), session(8));
    s.execute(
        "CREATE TABLE t (id BIGINT, v STRING) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
    )
    .await
    .unwrap();
    s.execute("INSERT INTO t SELECT value, 'x' FROM range(0, 100)")
        .await
        .unwrap();
    let Prepared::Write(loser) = s.prepare("DELETE FROM t WHERE id = 0").await.unwrap() else {
        panic!("not a write")
    };
    for id in winners {
        w.execute(&format!("DELETE FROM t WHERE id = {id}"))
            .await
            .unwrap();
    }
    let meter = loser.table.store.meter().cloned().unwrap();
    let before = meter.counts();
    let outcome = loser.commit().await;
    let after = meter.counts();
    let n = winners.len() as i64;
    let overlap = winners.contains(&0);
    if legacy || overlap {
        let Err(EngineError::Conflict(c)) = outcome else {
            panic!("the loser must abort: {:?}", outcome.map(|r| r.version))
        };
        if overlap && !legacy {
            assert_eq!(c.reason, AbortReason::TrueOverlap, "{c}");
        }
        let first_left = (0..).find(|i| !winners.contains(i)).unwrap_or_default();
        assert_eq!(
            rows(&s, "SELECT count(*), min(id) FROM t").await,
            vec![format!("{}|{first_left}", 100 - n)]
        );
    } else {
        let r = outcome.unwrap();
        let merged = r
            .events
            .iter()
            .filter(|e| e.name == "delta.rowLevelConcurrency.deletionVectorsMerged")
            .count();
        assert_eq!(merged as i64, n, "{:?}", r.events);
        assert_eq!(
            rows(&s, "SELECT count(*), min(id) FROM t").await,
            vec![format!("{}|{}", 99 - n, n + 1)]
        );
    }
    (
        after.critical_path_depth - before.critical_path_depth,
        after.get - before.get,
    )
}

#[test]
fn a_lost_race_reads_the_winners_dvs_in_one_stage() {
    rt().block_on(async {
        let (depth_one, _) = race("one", &[1], false).await;
        let (depth_four, gets_four) = race("four", &[1, 2, 3, 4], false).await;
        // Three more winners add at most one more stage of commit fetches: their DVs are read
        // beside the first's, not after it, and each merged DV uploads while the next winner is
        // checked (the commit waits for the uploads together, not one after another).
        eprintln!("depth: 1 winner {depth_one}, 4 winners {depth_four}");
        assert!(
            depth_four <= depth_one + 1,
            "1 winner: depth {depth_one}; 4 winners: depth {depth_four}"
        );
        // One GET per object: the 4 winners' commits and the next window of 8 versions probed
        // (not there yet), and the 4 winners' DVs.
        assert!(gets_four <= 4 + 8 + 4, "GETs {gets_four}");
        // The twin: in legacy mode the same race aborts, and no DV is read for a merge that
        // never runs (only the winners' commits and the probed window: 12 GETs).
        let (_, gets_legacy) = race("legacy", &[1, 2, 3, 4], true).await;
        assert!(gets_legacy <= 4 + 8, "GETs {gets_legacy}");
        // The true conflict still aborts with every DV read ahead: the third winner deleted the
        // loser's row too (the first two are merged, then the overlap is found).
        race("overlap", &[1, 2, 0, 3], false).await;
    });
}
