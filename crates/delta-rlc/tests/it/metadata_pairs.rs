//! Two metadata changes at once through the library (`Table::alter`): a handle that read an
//! older version (as a deltalake `DeltaTable` loaded earlier does) re-applies its ALTER on the
//! winner's metadata when they touch different things, and aborts when they touch the same key
//! (red team helper-16: the library checked its commit against its own staged metadata, so every
//! library ALTER aborted, and one the winner had already made committed).

use std::collections::BTreeMap;
use std::sync::Arc;

use delta_rlc::arrow::datatypes::{DataType, Field, Schema};
use delta_rlc::{At, ConflictKind, Table, TableChange};

async fn table_and_stale(dir: &tempfile::TempDir) -> (Table, Table) {
    let loc = dir.path().join("t").display().to_string();
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let table = Table::create(&loc).columns_from(&schema).await.unwrap();
    let stale = table.at_version(table.version().await.unwrap());
    let props = BTreeMap::from([("team".to_string(), "b".to_string())]);
    table
        .alter(TableChange::SetProperties(props))
        .await
        .unwrap();
    (table, stale)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_alter_is_re_applied_on_a_winner_that_changed_other_things() {
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = table_and_stale(&dir).await;
    let out = stale
        .alter(TableChange::SetName(Some("events".into())))
        .await
        .unwrap();
    assert_eq!(out.version, Some(2));
    let snap = table.snapshot(At::Latest).await.unwrap();
    assert_eq!(snap.metadata().name.as_deref(), Some("events"));
    assert_eq!(snap.properties().get("team").map(String::as_str), Some("b"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twin_a_library_alter_of_the_same_key_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let (table, stale) = table_and_stale(&dir).await;
    let props = BTreeMap::from([("team".to_string(), "a".to_string())]);
    let e = stale
        .alter(TableChange::SetProperties(props))
        .await
        .unwrap_err();
    assert_eq!(
        e.conflict().map(|c| c.kind),
        Some(ConflictKind::MetadataChanged),
        "{e}"
    );
    let snap = table.snapshot(At::Latest).await.unwrap();
    assert_eq!(snap.version(), 1);
    assert_eq!(snap.properties().get("team").map(String::as_str), Some("b"));
}
