//! The one commit function: put-if-absent at the attempt version; on a lost race read each winning
//! commit in version order from its own JSON file, run the checks, rebase (row ids, row commit
//! versions, in-commit timestamps — the payload is rebuilt per attempt) and try the next version.
//!
//! Invariants:
//! - A commit is written at most once: an `Unknown` put result is resolved by reading that version
//!   and recognising our own commit by `commitInfo.txnId`; a winner carrying our txnId is our own
//!   earlier attempt whose response was lost.
//! - Winners are read from `<v>.json` only, never from log compaction files (they drop commitInfo).
//! - Attempts are bounded by the configured maximum.

use bytes::Bytes;
use delta_rlc_protocol::actions::{
    parse_commit, serialize_commit, Action, CommitInfo, DomainMetadata, Metadata,
};
use delta_rlc_protocol::log_path::{commit_file_name, parse_log_file_name, LogFileKind, LOG_DIR};
use delta_rlc_protocol::table_path::TableRoot;
use delta_rlc_storage::{PutOutcome, StorageErrorKind};
use serde_json::{json, Value};

use super::winners::{fetch_winners, MAX_WINNER_WINDOW};
use super::Transaction;
use crate::conflict::budget::AttemptBudget;
use crate::conflict::reconcile::prefetch_winner_dvs;
use crate::conflict::{
    check_winner, AbortReason, CheckInput, ConflictError, ConflictKind, Event, IsolationLevel,
    LoserState, WinningCommit,
};
use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;
use crate::write::encode_log_path;

/// Winning commits' bytes kept for the post-commit snapshot at most; past it the next statement
/// loads the table instead (`Snapshot::after_own_commit` declines a gap).
const MAX_KEPT_WINNER_BYTES: usize = 16 * 1024 * 1024;

/// The commit a successful put created: what the post-commit snapshot is built from.
struct OwnCommit<'a> {
    winners: &'a [(u64, Bytes)],
    bytes: &'a [u8],
    e_tag: Option<&'a str>,
    /// The clock before the put: no later version existed then (its writer had to see this one).
    put_at_ms: i64,
}

pub const ENGINE_INFO: &str = concat!("delta-rlc/", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone)]
pub struct CommitResult {
    /// The committed version (the read version when nothing needed committing).
    pub version: Option<u64>,
    pub attempts: u32,
    pub events: Vec<Event>,
    pub affected_rows: Option<u64>,
    /// Why each earlier run of the statement aborted, when re-execution on conflict ran it again
    /// (`reexecute`); empty when it ran once.
    pub earlier_runs: Vec<String>,
    /// Wall time the conflict checks of every lost race took — the winners' DVs read ahead, the
    /// checks and reconcilers, and the wait for the files reconcilers wrote: what row-level
    /// concurrency added to the statement (zero when the first attempt won). Measured on the
    /// tokio clock, which is the wall clock except in a runtime whose clock is paused (the writer
    /// model of `delta-rlc-dev bench writers --virtual-time`), where it is the virtual time the checks
    /// waited on reads.
    pub check_time: std::time::Duration,
}

struct AttemptState {
    row_id_hwm: i64,
    last_ict: Option<i64>,
}

impl Transaction {
    /// Commits with conflict checking and bounded retries.
    pub async fn commit(mut self) -> Result<CommitResult> {
        // Every object the commit will name is in place before its log entry is written.
        self.uploads.finish().await?;
        // Change rows still buffered become change files before anything is committed.
        crate::txn::change_data::flush(&mut self).await?;
        // Identity values generated: the metadata action raising the high-water marks.
        crate::txn::identity::stage(&mut self)?;
        self.validate()?;
        let read_version = self.read_snapshot.as_ref().map(|s| s.version);
        if self.actions.is_empty() && !self.record_when_empty {
            return Ok(CommitResult {
                version: read_version,
                attempts: 0,
                events: Vec::new(),
                affected_rows: self.affected_rows,
                earlier_runs: Vec::new(),
                check_time: std::time::Duration::ZERO,
            });
        }
        let protocol = self
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Protocol(p) => Some(p.clone()),
                _ => None,
            })
            .or_else(|| self.read_snapshot.as_ref().map(|s| s.protocol.clone()))
            .ok_or_else(|| EngineError::Internal("new table without a protocol action".into()))?;
        protocol.check_writable()?;
        self.check_iceberg_compat()?;
        self.check_change_data_feed(&self.actions)?;
        self.check_append_only()?;
        let store = &self.table.store;
        let root = TableRoot::parse(store.root_uri())?;
        let isolation = self.isolation_level();
        let blind = self.is_blind_append();
        let mut state = AttemptState {
            row_id_hwm: self
                .read_snapshot
                .as_ref()
                .and_then(|s| s.row_id_high_water_mark())
                .unwrap_or(-1),
            last_ict: self.read_snapshot.as_ref().map(|s| s.timestamp_ms),
        };
        let mut events = self.events.clone();
        let mut state_loser = LoserState {
            read_set: self.read_set.clone(),
            staged: self.actions.clone(),
            own_files: Default::default(),
            dvs: Default::default(),
            table_view: None,
            table_metadata: None,
            table_protocol: None,
            metadata_intent: self.metadata_intent.clone(),
            identity_generated: (!self.identity_marks.is_empty() && !self.identity_pinned)
                .then(|| self.identity_marks.keys().cloned().collect()),
            identity_shifts: Default::default(),
            uploads: Default::default(),
        };
        let mut version = read_version.map(|v| v + 1).unwrap_or(0);
        let max_attempts = self.table.conflict.max_attempts;
        let mut attempt = 0u32;
        let mut unknown_retries = 0u32;
        // Winners found after the last lost race: the next probe window's width.
        let mut last_winners = 0u64;
        // Every winning commit read, in version order (the post-commit snapshot replays them).
        let mut winners: Vec<(u64, Bytes)> = Vec::new();
        let mut winner_bytes = 0usize;
        // The last winning commit checked: named by a failure to re-base identity values.
        let mut last_winner: Option<(u64, String)> = None;
        // The newest commit a listing before the first put found (a stale read's check).
        let mut known_latest: Option<u64> = None;
        while attempt < max_attempts {
            attempt += 1;
            // Files the last attempt's reconcilers write are in place before the log names them;
            // the wait is reconciliation's latency (before the expiry check: a slow upload must not
            // carry the put past it).
            if !state_loser.uploads.is_empty() {
                let waited_at = tokio::time::Instant::now();
                let uploaded = state_loser.uploads.finish().await;
                self.check_time += waited_at.elapsed();
                uploaded?;
            }
            let open_ms = self
                .table
                .env
                .clock
                .now_ms()
                .saturating_sub(self.started_ms);
            if open_ms > crate::retention::MAX_TRANSACTION_MS {
                return Err(EngineError::TransactionExpired(format!(
                    "open for {} s, longer than the {} s a transaction may stay open (VACUUM may have removed files written that long ago); run it again",
                    open_ms / 1000,
                    crate::retention::MAX_TRANSACTION_MS / 1000
                )));
            }
            let payload =
                Bytes::from(self.build_attempt(&state_loser, version, &state, isolation, blind)?);
            let path = format!("{LOG_DIR}/{}", commit_file_name(version));
            let put_at_ms = self.table.env.clock.now_ms();
            // A read version committed long ago (a handle pinned to an old version) may be
            // followed by versions log cleanup has since removed: a put at the next version
            // would then succeed and rewrite history. Such a first attempt looks first; any
            // later commit makes it a lost race (whose winners must all still be readable).
            let stale_race =
                if attempt == 1 && self.read_snapshot.is_some() && !self.may_probe_commits() {
                    known_latest = self.latest_commit_from(version).await?;
                    known_latest.is_some()
                } else {
                    false
                };
            if !stale_race {
                match store.put_if_absent_tagged(&path, payload.clone()).await {
                    (PutOutcome::Created, e_tag) => {
                        let own = OwnCommit {
                            winners: &winners,
                            bytes: &payload,
                            e_tag: e_tag.as_deref(),
                            put_at_ms,
                        };
                        return self.finish(version, attempt, events, Some(own)).await;
                    }
                    (PutOutcome::AlreadyExists, _) => {}
                    (PutOutcome::Refused(e), _) => return Err(EngineError::Storage(e)),
                    (PutOutcome::Unknown(err), _) => match store.get(&path).await {
                        Ok(bytes) => {
                            if self.is_ours(version, &bytes) {
                                return self.finish(version, attempt, events, None).await;
                            }
                        }
                        // Not there yet: try again, unless this was the last attempt (a delayed
                        // request may still land, so the outcome is unknown, not a conflict).
                        Err(e)
                            if e.kind == StorageErrorKind::NotFound
                                && unknown_retries < 3
                                && attempt < max_attempts =>
                        {
                            unknown_retries += 1;
                            continue;
                        }
                        Err(e) => {
                            return Err(EngineError::CommitUnknown(format!(
                            "version {version}: put failed ({err}) and reading it back failed ({e})"
                        )))
                        }
                    },
                }
            }
            let Some(read_snapshot) = self.read_snapshot.clone() else {
                return Err(EngineError::Conflict(Box::new(ConflictError {
                    kind: ConflictKind::ProtocolChanged,
                    reason: AbortReason::ConcurrentCreate,
                    winning_version: version,
                    winning_operation: "CREATE TABLE".into(),
                    files: vec![],
                    predicate: Some("multiple writers are creating this table".into()),
                    tier: None,
                    reconcile_failures: Vec::new(),
                    statement_runs: 1,
                })));
            };
            // The winners, up to the first version not yet written (see `may_probe_commits`).
            // On an object store: a window of versions from the lost one fetched together — one
            // round trip however many won (a full window fetches the next, twice as wide). On a
            // local disk, where a listing reads every name in `_delta_log`: read in turn. Where
            // probing is not safe: one listing of the log from the lost version on, then every
            // winner's commit fetched together. A winner the probe or listing missed makes the
            // next put fail again: put-if-absent still arbitrates.
            let mut fetched = std::collections::BTreeMap::new();
            let mut missing_from = None;
            let mut latest = None;
            if !self.may_probe_commits() {
                let l = match known_latest.take() {
                    Some(l) => l,
                    None => self.latest_version(version).await?,
                };
                let winners = (version..=l)
                    .map(|w| (format!("{LOG_DIR}/{}", commit_file_name(w)), None))
                    .collect();
                store.prefetch(winners).await;
                latest = Some(l);
            } else if !store.listing_reads_whole_dir() {
                // The first race: the winners since the statement read (often a few); a retry:
                // the last race's winners and two more (each request for a version not yet
                // written costs a request, not a round trip).
                let window = match last_winners {
                    0 => 4,
                    n => (n + 2).min(MAX_WINNER_WINDOW),
                };
                let (found, missing) = fetch_winners(store, version, window).await?;
                fetched = found;
                missing_from = Some(missing);
            }
            // What this attempt's checks may spend; they read through a handle charged to it.
            let budget = AttemptBudget::start(&self.table.conflict);
            let budgeted = budget.store(store);
            let input = CheckInput {
                read_snapshot: &read_snapshot,
                store: &budgeted,
                is_blind_append: blind,
                isolation,
                config: &self.table.conflict,
                env: &self.table.env,
            };
            // The winners' DVs the DV merge will read, in one stage (`reconcile::dv_prefetch`),
            // within half the checks' time: what it has not read by then, the merge reads.
            let config = &self.table.conflict;
            let prefetched_at = tokio::time::Instant::now();
            let prefetch =
                prefetch_winner_dvs(&budgeted, config, &read_snapshot, &state_loser, &fetched);
            let _ = tokio::time::timeout(budget.time_left() / 2, prefetch).await;
            self.check_time += prefetched_at.elapsed();
            let mut v = version;
            while latest.is_none_or(|l| v <= l) {
                if latest.is_none() && v > version && missing_from == Some(v) {
                    break;
                }
                let read = match fetched.remove(&v) {
                    Some(b) => Ok(b),
                    None => {
                        store
                            .get(&format!("{LOG_DIR}/{}", commit_file_name(v)))
                            .await
                    }
                };
                let bytes = match read {
                    Ok(b) => b,
                    Err(e)
                        if latest.is_none()
                            && v > version
                            && e.kind == StorageErrorKind::NotFound =>
                    {
                        break
                    }
                    // A failed read is I/O (retryable); only an unparsable commit is corrupt.
                    Err(e) => return Err(EngineError::Storage(e)),
                };
                if self.is_ours(v, &bytes) {
                    // Our own earlier attempt landed (its response was lost): never commit twice.
                    return self.finish(v, attempt, events, None).await;
                }
                // Kept for the post-commit snapshot while they are few (else none is built).
                winner_bytes = winner_bytes.saturating_add(bytes.len());
                if winner_bytes <= MAX_KEPT_WINNER_BYTES {
                    winners.push((v, bytes.clone()));
                }
                let actions = parse_commit(v, &bytes)?;
                let winner = WinningCommit::from_actions(v, actions, &root)?;
                if latest.is_none() && winner.metadata.is_some() {
                    // A metadata winner may have shortened the retention the probe relies on.
                    latest = Some(self.latest_version(v).await?);
                }
                let checked_at = tokio::time::Instant::now();
                let outcome = budget
                    .run(&winner, check_winner(&input, &mut state_loser, &winner))
                    .await;
                self.check_time += checked_at.elapsed();
                let outcome = outcome?;
                last_winner = Some((winner.version, winner.operation()));
                events.extend(outcome.events);
                if let Some(h) = winner.row_id_high_water_mark() {
                    state.row_id_hwm = state.row_id_hwm.max(h);
                }
                if let Some(t) = winner
                    .in_commit_timestamp()
                    .or(winner.commit_info.as_ref().and_then(|c| c.timestamp))
                {
                    state.last_ict = Some(state.last_ict.map_or(t, |l| l.max(t)));
                }
                v += 1;
            }
            last_winners = v - version;
            version = v;
            // Identity values the checker moved past the winners': the files, once per attempt.
            // (Not after the last attempt: the loop gives up next.)
            if !state_loser.identity_shifts.is_empty() && attempt < max_attempts {
                super::identity_rebase::apply(
                    store,
                    &self.table.env,
                    self.table.parquet.clone(),
                    &read_snapshot,
                    &mut state_loser,
                )
                .await
                .map_err(|reason| {
                    let (version, operation) = last_winner.clone().unwrap_or_default();
                    EngineError::Conflict(Box::new(ConflictError {
                        kind: ConflictKind::MetadataChanged,
                        reason: AbortReason::MetadataChange,
                        winning_version: version,
                        winning_operation: operation,
                        files: vec![],
                        predicate: Some(format!("identity values cannot be re-based: {reason}")),
                        tier: Some("identityRebase".into()),
                        reconcile_failures: Vec::new(),
                        statement_runs: 1,
                    }))
                })?;
            }
        }
        Err(EngineError::Conflict(Box::new(ConflictError {
            kind: ConflictKind::MaxCommitAttemptsExceeded,
            reason: AbortReason::AttemptsExhausted,
            winning_version: version.saturating_sub(1),
            winning_operation: "TRANSACTION".into(),
            files: vec![],
            predicate: Some(format!("gave up after {attempt} attempts")),
            tier: None,
            reconcile_failures: Vec::new(),
            statement_runs: 1,
        })))
    }

    /// The change data feed's reading rule holds for `actions` (see
    /// [`crate::write::change_data::check_commit`]): checked before the first attempt and again on
    /// every attempt, after conflict rewrites.
    fn check_change_data_feed(&self, actions: &[Action]) -> Result<()> {
        crate::write::change_data::check_commit(
            actions,
            self.read_snapshot.as_ref().map(|s| &s.metadata),
            self.change_data.file_actions_are_changes,
        )
    }

    fn is_ours(&self, version: u64, bytes: &[u8]) -> bool {
        let Ok(actions) = parse_commit(version, bytes) else {
            return false;
        };
        let ours = self.txn_id.to_string();
        actions.iter().any(
            |a| matches!(a, Action::CommitInfo(ci) if ci.txn_id.as_deref() == Some(ours.as_str())),
        )
    }

    /// Whether the versions after a lost race may be found by reading them in turn until one is
    /// missing, instead of listing the log (a LIST and, on a local disk, a read of every name of
    /// `_delta_log` per retry). A missing version is then one not written yet, never one cleaned
    /// up: log cleanup removes only files older than `delta.logRetentionDuration`, every version
    /// after the read version was written during this transaction, and a transaction commits only
    /// within `MAX_TRANSACTION_MS` of its start — so the retention must be at least
    /// `MIN_RETENTION_FLOOR_MS` (the default, 30 days, is). A put at the first missing version
    /// is still arbitrated by put-if-absent. A retention below the floor, or unparsable, lists.
    /// So does a read version committed more than an hour (`MIN_RETENTION_FLOOR_MS -
    /// MAX_TRANSACTION_MS`) ago: a handle pinned to an old version (`Table::at_version`) reads a
    /// version older than the transaction, and versions after it may be old enough for cleanup.
    fn may_probe_commits(&self) -> bool {
        let now = self.table.env.clock.now_ms();
        let recent_ms =
            crate::retention::MIN_RETENTION_FLOOR_MS - crate::retention::MAX_TRANSACTION_MS;
        self.read_snapshot.as_ref().is_none_or(|s| {
            crate::snapshot::probe::retention_allows_probe(s)
                && now.saturating_sub(s.timestamp_ms) <= recent_ms
        })
    }

    /// The newest commit version at or after `from` in the log, if any (one listing of the
    /// names from `from` on).
    async fn latest_commit_from(&self, from: u64) -> Result<Option<u64>> {
        let listing = self
            .table
            .store
            .list_dir_after(LOG_DIR, &format!("{from:020}"))
            .await?;
        Ok(listing
            .iter()
            .filter_map(|o| parse_log_file_name(o.path.rsplit('/').next().unwrap_or(&o.path)))
            .filter(|p| p.kind == LogFileKind::Commit && p.version >= from)
            .map(|p| p.version)
            .max())
    }

    /// Newest committed version ≥ `from` (at least `from`, which we know exists), from a listing
    /// of only the log names from `from` on: the retry's cost does not grow with the log.
    async fn latest_version(&self, from: u64) -> Result<u64> {
        Ok(self
            .latest_commit_from(from)
            .await?
            .map_or(from, |l| l.max(from)))
    }

    /// In-commit timestamps are on for this commit: as its own metadata says, else as the last
    /// winner that changed the metadata left it (a winner may have turned them on: every commit
    /// after that must carry one), else as the read snapshot says.
    fn in_commit_timestamps_enabled(&self, loser: &LoserState) -> bool {
        let on = |m: &Metadata| {
            delta_rlc_protocol::table_properties::TableProperty::EnableInCommitTimestamps
                .is_true(&m.configuration)
        };
        let from_actions = loser.staged.iter().find_map(Action::as_metadata).map(on);
        from_actions
            .or_else(|| loser.table_metadata.as_ref().map(on))
            .unwrap_or_else(|| {
                self.read_snapshot
                    .as_ref()
                    .is_some_and(|s| s.property_true(delta_rlc_protocol::table_properties::TableProperty::EnableInCommitTimestamps))
            })
    }

    /// Row tracking is supported for this commit (its adds need row ids): by its own protocol
    /// action, else the last winner's protocol (a winner may have added the feature), else the
    /// read snapshot's.
    fn row_tracking_on(&self, loser: &LoserState) -> bool {
        let from_actions = loser.staged.iter().find_map(|a| match a {
            Action::Protocol(p) => Some(p.has_writer_feature("rowTracking")),
            _ => None,
        });
        from_actions
            .or_else(|| {
                loser
                    .table_protocol
                    .as_ref()
                    .map(|p| p.has_writer_feature("rowTracking"))
            })
            .unwrap_or_else(|| {
                self.read_snapshot
                    .as_ref()
                    .is_some_and(|s| s.row_tracking_supported())
            })
    }

    fn build_attempt(
        &self,
        loser: &LoserState,
        version: u64,
        state: &AttemptState,
        isolation: IsolationLevel,
        blind: bool,
    ) -> Result<Vec<u8>> {
        let staged = loser.staged.as_slice();
        // A conflict rewrite keeps the loser's change files (the rows it changes are the same).
        let cdc = |a: &[Action]| a.iter().filter(|a| matches!(a, Action::Cdc(_))).count();
        if cdc(staged) != cdc(&self.actions) {
            return Err(EngineError::Internal(
                "a conflict rewrite changed the transaction's change data files".into(),
            ));
        }
        self.check_change_data_feed(staged)?;
        let now = self.table.env.clock.now_ms();
        let mut info = CommitInfo {
            timestamp: Some(now),
            operation: Some(self.operation.as_str().to_string()),
            operation_parameters: Some(self.operation_parameters.clone()),
            read_version: self.read_snapshot.as_ref().map(|s| s.version as i64),
            isolation_level: Some(isolation.name().to_string()),
            is_blind_append: Some(blind),
            operation_metrics: Some(self.metrics.to_map()),
            engine_info: Some(ENGINE_INFO.to_string()),
            txn_id: Some(self.txn_id.to_string()),
            extra: self.app_metadata.clone(),
            ..Default::default()
        };
        if self.in_commit_timestamps_enabled(loser) {
            info.in_commit_timestamp = Some(state.last_ict.map_or(now, |l| now.max(l + 1)));
        }
        // Preserved only when the statement read with row tracking enabled (its rewrites carried
        // their rows' ids in the materialized columns); merely supported, rewritten rows get fresh
        // ids, untagged.
        if let Some(s) = &self.read_snapshot {
            if crate::row_tracking::row_tracking_columns(s).is_some() {
                let mut tags = serde_json::Map::new();
                tags.insert(
                    "delta.rowTracking.preserved".into(),
                    Value::String("true".into()),
                );
                info.tags = Some(tags);
            }
        }
        let row_tracking = self.row_tracking_on(loser);
        let mut hwm = state.row_id_hwm;
        let mut assigned = false;
        let mut out = vec![Action::CommitInfo(info)];
        for a in staged {
            match a {
                Action::Add(add) => {
                    let mut add = add.clone();
                    add.path = encode_log_path(&add.path);
                    if row_tracking {
                        if add.base_row_id.is_none() {
                            let n = add.num_records().ok_or_else(|| {
                                EngineError::Internal(format!(
                                    "row id assignment needs numRecords for {}",
                                    add.path
                                ))
                            })?;
                            // The high-water mark comes from the log: checked, never wrapped.
                            let overflow = || {
                                EngineError::corrupt(format!(
                                    "row id high-water mark {hwm} cannot take {n} more rows"
                                ))
                            };
                            add.base_row_id = Some(hwm.checked_add(1).ok_or_else(overflow)?);
                            hwm = hwm.checked_add(n).ok_or_else(overflow)?;
                            assigned = true;
                        }
                        if add.default_row_commit_version.is_none() {
                            add.default_row_commit_version = Some(version as i64);
                        }
                    }
                    out.push(Action::Add(add));
                }
                Action::Remove(rm) => {
                    let mut rm = rm.clone();
                    rm.path = encode_log_path(&rm.path);
                    out.push(Action::Remove(rm));
                }
                Action::Cdc(c) => {
                    let mut c = c.clone();
                    c.path = encode_log_path(&c.path);
                    out.push(Action::Cdc(c));
                }
                Action::DomainMetadata(d) if d.domain == "delta.rowTracking" => {}
                other => out.push(other.clone()),
            }
        }
        if assigned
            || self
                .actions
                .iter()
                .any(|a| matches!(a, Action::DomainMetadata(d) if d.domain == "delta.rowTracking"))
        {
            out.push(Action::DomainMetadata(DomainMetadata {
                domain: "delta.rowTracking".into(),
                configuration: json!({ "rowIdHighWaterMark": hwm }).to_string(),
                removed: false,
            }));
        }
        Ok(serialize_commit(&out)?)
    }

    /// The commit landed at `version`. With `own` (the commit this call created, not one found
    /// after a lost response), the handle holds the table as of `version` without reading it back
    /// (`Snapshot::after_own_commit`).
    async fn finish(
        &self,
        version: u64,
        attempts: u32,
        events: Vec<Event>,
        own: Option<OwnCommit<'_>>,
    ) -> Result<CommitResult> {
        if let (Some(own), Some(read)) = (own, &self.read_snapshot) {
            let post = Snapshot::after_own_commit(
                read,
                own.winners,
                version,
                own.bytes,
                own.e_tag,
                own.put_at_ms,
            );
            // Only a saving: a snapshot that cannot be built is loaded by the next statement.
            if let Ok(Some(snap)) = post {
                self.table.hold_if_newer(&snap, own.put_at_ms);
            }
        }
        self.maybe_checkpoint(version).await;
        Ok(CommitResult {
            version: Some(version),
            attempts,
            events,
            affected_rows: self.affected_rows,
            earlier_runs: Vec::new(),
            check_time: self.check_time,
        })
    }

    /// Writes a checkpoint every `delta.checkpointInterval` versions. Best effort: a failure never
    /// fails the commit that already landed.
    async fn maybe_checkpoint(&self, version: u64) {
        let interval = self
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Metadata(m) => {
                    delta_rlc_protocol::table_properties::TableProperty::CheckpointInterval
                        .get(&m.configuration)
                        .map(str::to_string)
                }
                _ => None,
            })
            .or_else(|| {
                self.read_snapshot.as_ref().and_then(|s| {
                    s.property(
                        delta_rlc_protocol::table_properties::TableProperty::CheckpointInterval,
                    )
                    .map(str::to_string)
                })
            })
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|v| *v > 0)
            .unwrap_or(10);
        if !self.checkpoint_after || version == 0 || !version.is_multiple_of(interval) {
            return;
        }
        let store = &self.table.store;
        let result = async {
            // From the read snapshot, replaying only the commits since, after checking that the
            // read version's commit is still the one read (a full load on any doubt). Not from
            // the post-commit snapshot, which trusts that the table was not deleted and created
            // again at this root during the transaction: a checkpoint is read by every reader.
            let snap = match &self.read_snapshot {
                Some(read) => Snapshot::load_after(store, read, Some(version)).await?,
                None => Snapshot::load(store, Some(version)).await?,
            };
            crate::write::checkpoint::write_checkpoint(store, &snap, self.table.env.clock.now_ms())
                .await
        }
        .await;
        if let Err(e) = result {
            tracing::warn!("checkpoint at version {version} failed: {e}");
        }
    }
}
