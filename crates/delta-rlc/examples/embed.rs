//! Embedding delta-rlc: create a table, append Arrow batches, run a DELETE and a MERGE from two
//! tasks at once (both commit: row-level concurrency reconciles them), read with a filter, and
//! see a true conflict reported as a typed error.
//!
//! `cargo run --example embed [TABLE_DIR]` (default: a temporary directory).

use std::future::IntoFuture;
use std::sync::Arc;

use delta_rlc::arrow::array::{Int64Array, RecordBatch, StringArray};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use delta_rlc::arrow::util::pretty::pretty_format_batches;
use delta_rlc::{col, lit, CommitOutcome, ErrorKind, Table};

fn batch(
    schema: &SchemaRef,
    ids: std::ops::Range<i64>,
    tag: &str,
) -> delta_rlc::Result<RecordBatch> {
    let v: Vec<String> = ids.clone().map(|i| format!("{tag}-{i}")).collect();
    Ok(RecordBatch::try_new(
        Arc::clone(schema),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(v)),
        ],
    )?)
}

fn report(what: &str, outcome: &delta_rlc::Result<CommitOutcome>) {
    match outcome {
        Ok(c) => {
            let events: Vec<&str> = c.events.iter().map(|e| e.name.as_str()).collect();
            println!(
                "{what}: committed version {:?} after {} attempt(s), {:?} rows; events {events:?}",
                c.version, c.attempts, c.metrics.rows_affected
            );
        }
        Err(e) => match e.kind() {
            ErrorKind::Conflict(info) => println!(
                "{what}: true conflict with version {:?} ({}): {e}",
                info.winning_version,
                info.winning_operation.as_deref().unwrap_or("?")
            ),
            _ => println!("{what}: failed: {e}"),
        },
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| tmp.path().join("events").display().to_string());

    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]));
    let table = Table::create(&dir)
        .columns_from(&schema)
        .property("delta.enableDeletionVectors", "true")
        .await?;
    report(
        "append",
        &Ok(table.write([batch(&schema, 0..1000, "a")?]).await?),
    );

    // Two writers at once on the same file: a DELETE of ids below 100 and a MERGE that updates
    // ids 500..599 and inserts 1000..1099. They touch different rows, so both commit.
    let updates = batch(&schema, 500..600, "merged")?;
    let inserts = batch(&schema, 1000..1100, "new")?;
    let source = delta_rlc::arrow::compute::concat_batches(&schema, &[updates, inserts])?;
    let delete = table.delete().filter(col("id").lt(lit(100i64)));
    let merge = table
        .merge(source, "target.id = source.id")
        .when_matched_update(|u| u.set("v", "source.v"))
        .when_not_matched_insert(|i| i.all());
    let (deleted, merged) = (
        tokio::spawn(delete.into_future()),
        tokio::spawn(merge.into_future()),
    );
    let (deleted, merged) = (deleted.await?, merged.await?);
    report("delete", &deleted);
    report("merge", &merged);

    // Two updates of the same row at once: a true conflict; one of them is told so.
    let first = table.update().set("v", "'first'").filter("id = 700");
    let second = table.update().set("v", "'second'").filter("id = 700");
    let (a, b) = (
        tokio::spawn(first.into_future()),
        tokio::spawn(second.into_future()),
    );
    let (a, b) = (a.await?, b.await?);
    report("update 1", &a);
    report("update 2", &b);

    let rows = table
        .scan()
        .filter("id % 100 = 0")
        .columns(["id", "v"])
        .collect()
        .await?;
    println!("{}", pretty_format_batches(&rows)?);
    let snap = table.snapshot(delta_rlc::At::Latest).await?;
    println!(
        "{}: version {}, {} rows in {} files",
        table.uri(),
        snap.version(),
        snap.num_rows().unwrap_or(-1),
        snap.files().len()
    );
    Ok(())
}
