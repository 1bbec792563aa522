//! Classic single-file Parquet checkpoints and `_last_checkpoint`.
//!
//! The checkpoint holds exactly the reconciled state at its version: protocol, metadata, txns,
//! domain metadata, live adds, and unexpired tombstones (without stats and tags). Actions become JSON
//! lines and are decoded into Arrow with the fixed checkpoint schema below, so the action definition
//! stays in one place. A checkpoint is written only after its commit exists; racing writers produce
//! identical content, so overwriting is harmless. `_last_checkpoint` is a hint; readers list the log.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use bytes::Bytes;
use delta_rlc_protocol::actions::Action;
use delta_rlc_protocol::log_path::{checkpoint_file_name, LOG_DIR};
use delta_rlc_storage::TableStore;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::snapshot::Snapshot;

fn s(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}
fn i64f(name: &str) -> Field {
    Field::new(name, DataType::Int64, true)
}
fn i32f(name: &str) -> Field {
    Field::new(name, DataType::Int32, true)
}
fn b(name: &str) -> Field {
    Field::new(name, DataType::Boolean, true)
}
fn map(name: &str) -> Field {
    Field::new(
        name,
        DataType::Map(
            Arc::new(Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", DataType::Utf8, false),
                    s("value"),
                ])),
                false,
            )),
            false,
        ),
        true,
    )
}
fn list(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
        true,
    )
}
fn st(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, DataType::Struct(Fields::from(fields)), true)
}

fn dv_field() -> Field {
    st(
        "deletionVector",
        vec![
            s("storageType"),
            s("pathOrInlineDv"),
            i32f("offset"),
            i32f("sizeInBytes"),
            i64f("cardinality"),
        ],
    )
}

pub fn checkpoint_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        st(
            "txn",
            vec![s("appId"), i64f("version"), i64f("lastUpdated")],
        ),
        st(
            "add",
            vec![
                s("path"),
                map("partitionValues"),
                i64f("size"),
                i64f("modificationTime"),
                b("dataChange"),
                s("stats"),
                map("tags"),
                dv_field(),
                i64f("baseRowId"),
                i64f("defaultRowCommitVersion"),
                s("clusteringProvider"),
            ],
        ),
        st(
            "remove",
            vec![
                s("path"),
                i64f("deletionTimestamp"),
                b("dataChange"),
                b("extendedFileMetadata"),
                map("partitionValues"),
                i64f("size"),
                dv_field(),
                i64f("baseRowId"),
                i64f("defaultRowCommitVersion"),
            ],
        ),
        st(
            "metaData",
            vec![
                s("id"),
                s("name"),
                s("description"),
                st("format", vec![s("provider"), map("options")]),
                s("schemaString"),
                list("partitionColumns"),
                i64f("createdTime"),
                map("configuration"),
            ],
        ),
        st(
            "protocol",
            vec![
                i32f("minReaderVersion"),
                i32f("minWriterVersion"),
                list("readerFeatures"),
                list("writerFeatures"),
            ],
        ),
        st(
            "domainMetadata",
            vec![s("domain"), s("configuration"), b("removed")],
        ),
    ]))
}

/// The actions a checkpoint of `snapshot` holds. Tombstones older than `tombstone_cutoff_ms` are
/// dropped (they only serve VACUUM); remove stats and tags are never checkpointed.
pub fn checkpoint_actions(snapshot: &Snapshot, tombstone_cutoff_ms: i64) -> Vec<Action> {
    let mut out = vec![
        Action::Protocol(snapshot.protocol.clone()),
        Action::Metadata(snapshot.metadata.clone()),
    ];
    out.extend(snapshot.txns.values().cloned().map(Action::Txn));
    out.extend(
        snapshot
            .domains
            .values()
            .cloned()
            .map(Action::DomainMetadata),
    );
    for a in &snapshot.files {
        let mut a = a.clone();
        a.path = crate::write::encode_log_path(&a.path);
        a.data_change = false;
        out.push(Action::Add(a));
    }
    for r in &snapshot.tombstones {
        if r.deletion_timestamp.unwrap_or(0) < tombstone_cutoff_ms {
            continue;
        }
        let mut r = r.clone();
        r.path = crate::write::encode_log_path(&r.path);
        r.stats = None;
        r.tags = None;
        r.data_change = false;
        out.push(Action::Remove(r));
    }
    out
}

/// Writes `<version>.checkpoint.parquet` and `_last_checkpoint` (the checkpoint of a commit just
/// written: the newest version).
pub async fn write_checkpoint(store: &TableStore, snapshot: &Snapshot, now_ms: i64) -> Result<()> {
    write_checkpoint_with(store, snapshot, now_ms, false).await
}

/// Writes the checkpoint of any version (deltalake's `create_checkpoint` of the version a handle
/// loaded): `_last_checkpoint` is written only when it named no newer checkpoint, so the hint only
/// ever points forward (an older one is still correct, only slower to load from).
pub async fn write_checkpoint_of_any_version(
    store: &TableStore,
    snapshot: &Snapshot,
    now_ms: i64,
) -> Result<()> {
    write_checkpoint_with(store, snapshot, now_ms, true).await
}

async fn write_checkpoint_with(
    store: &TableStore,
    snapshot: &Snapshot,
    now_ms: i64,
    keep_newer_hint: bool,
) -> Result<()> {
    let retention_ms = crate::retention::deleted_file_retention_ms(snapshot.property(
        delta_rlc_protocol::table_properties::TableProperty::DeletedFileRetentionDuration,
    ));
    let actions = checkpoint_actions(snapshot, now_ms.saturating_sub(retention_ms));
    let schema = checkpoint_schema();
    let mut decoder = arrow::json::ReaderBuilder::new(schema.clone())
        .with_batch_size(8192)
        .build_decoder()?;
    let mut lines = Vec::new();
    for a in &actions {
        lines.extend_from_slice(a.to_json_line()?.as_bytes());
        lines.push(b'\n');
    }
    let mut pos = 0;
    let mut batches = Vec::new();
    while pos < lines.len() {
        let read = decoder.decode(lines.get(pos..).unwrap_or(&[]))?;
        if read == 0 {
            break;
        }
        pos += read;
        if let Some(batch) = decoder.flush()? {
            batches.push(batch);
        }
    }
    if let Some(batch) = decoder.flush()? {
        batches.push(batch);
    }
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut buf = Vec::new();
    {
        let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props))?;
        for b in &batches {
            w.write(b)?;
        }
        w.close()?;
    }
    let rel = format!("{LOG_DIR}/{}", checkpoint_file_name(snapshot.version));
    let size_in_bytes = buf.len();
    store.put(&rel, Bytes::from(buf)).await?;
    if keep_newer_hint
        && crate::snapshot::last_checkpoint_hint(store)
            .await?
            .is_some_and(|hint| hint > snapshot.version)
    {
        return Ok(());
    }
    let last = json!({
        "version": snapshot.version,
        "size": actions.len(),
        "sizeInBytes": size_in_bytes,
        "numOfAddFiles": snapshot.files.len(),
    });
    store
        .put(
            &format!("{LOG_DIR}/_last_checkpoint"),
            Bytes::from(last.to_string()),
        )
        .await
        .map_err(EngineError::from)?;
    Ok(())
}
