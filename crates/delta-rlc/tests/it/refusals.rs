//! Every case of `tests/contract/refusals.toml` through SQL (`Table::sql`) and through the Rust
//! builders: each front end refuses the input with the case's ErrorKind and message, and the
//! table is left as it was (version and rows). The Python side is `python/tests/test_refusals.py`.

use std::collections::BTreeMap;
use std::sync::Arc;

use delta_rlc::arrow::array::{Int64Array, RecordBatch, StringArray};
use delta_rlc::arrow::datatypes::{DataType, Field, Schema};
use delta_rlc::{ErrorKind, MergeSource, Table, TableChange};

struct Case {
    id: String,
    sql: Option<String>,
    kind: String,
    message: String,
}

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/contract/refusals.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let field = |c: &toml::Value, k: &str| c.get(k).and_then(|v| v.as_str()).map(str::to_string);
    doc["case"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            id: field(c, "id").unwrap(),
            sql: field(c, "sql"),
            kind: field(c, "kind").unwrap(),
            message: field(c, "message").unwrap(),
        })
        .collect()
}

async fn table(dir: &tempfile::TempDir) -> Table {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let loc = dir.path().join("t").display().to_string();
    let table = Table::create(&loc).columns_from(&schema).await.unwrap();
    let rows = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            Arc::new(Int64Array::from(vec![10, 20])),
            Arc::new(StringArray::from(vec!["a", "b"])),
        ],
    )
    .unwrap();
    table.write([rows]).await.unwrap();
    table
}

fn source() -> MergeSource {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let rows = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 3])),
            Arc::new(Int64Array::from(vec![11, 30])),
        ],
    )
    .unwrap();
    MergeSource::batches(schema, vec![rows])
}

/// The case through the Rust builders.
async fn through_rust(id: &str, t: &Table) -> delta_rlc::Result<()> {
    let merge = || {
        t.merge(source(), "t.k = s.k")
            .source_alias("s")
            .target_alias("t")
    };
    match id {
        "update-column-twice" => t.update().set("v", "1").set("V", "2").await.map(drop),
        "update-unknown-column" => t.update().set("nope", "1").await.map(drop),
        "update-no-column" => t.update().filter("k = 1").await.map(drop),
        "merge-update-column-twice" => merge()
            .when_matched_update(|u| u.set("v", "s.v").set("V", "1"))
            .await
            .map(drop),
        "merge-insert-unknown-column" => merge()
            .when_not_matched_insert(|i| i.value("k", "s.k").value("nope", "s.v"))
            .await
            .map(drop),
        "merge-not-matched-reads-target" => merge()
            .when_not_matched_insert(|i| i.value("k", "s.k").value("v", "t.v"))
            .await
            .map(drop),
        "merge-no-clause" => merge().await.map(drop),
        "merge-unconditional-clause-not-last" => merge()
            .when_matched_delete(|d| d)
            .when_matched_update(|u| u.when("s.v > 0").set("v", "s.v"))
            .await
            .map(drop),
        "add-constraint-violated" => t
            .alter(TableChange::AddConstraints(BTreeMap::from([(
                "big".to_string(),
                "v > 15".to_string(),
            )])))
            .await
            .map(drop),
        "restore-future-version" => t.restore(99).await.map(drop),
        "delete-subquery" => t.delete().filter("k IN (SELECT 1)").await.map(drop),
        "delete-string-ends-in-backslash" => {
            t.delete().filter("s = 'a\\' OR k = 2 -- '").await.map(drop)
        }
        "delete-comment-ends-in-backslash" => t
            .delete()
            .filter("k = 2 -- note \\\nOR k = 1")
            .await
            .map(drop),
        "delete-comment-carriage-return" => t.delete().filter("k = 2 --\rOR k = 1").await.map(drop),
        "delete-number-runs-into-word" => t.delete().filter("k=1or k=2").await.map(drop),
        "optimize-target-size-zero" => t.optimize().target_size(0).await.map(drop),
        other => panic!("case {other} has no Rust form: add it here"),
    }
}

/// The refusal as "kind: message", or why it is not one.
fn refusal(got: delta_rlc::Result<()>) -> String {
    let e = match got {
        Ok(()) => return "accepted".into(),
        Err(e) => e,
    };
    let kind = match e.kind() {
        ErrorKind::InvalidInput => "InvalidInput",
        ErrorKind::NotFound => "NotFound",
        ErrorKind::Unsupported => "Unsupported",
        ErrorKind::SchemaMismatch => "SchemaMismatch",
        other => return format!("{other:?}: {e}"),
    };
    format!("{kind}: {e}")
}

async fn unchanged(t: &Table, id: &str) {
    assert_eq!(t.version().await.unwrap(), 1, "{id}: a commit landed");
    let rows: usize = t
        .scan()
        .collect()
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, 2, "{id}: rows changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_and_rust_refuse_each_invalid_input_alike() {
    let cases = cases();
    assert!(cases.len() >= 10, "the contract file lost its cases");
    let mut wrong = Vec::new();
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let t = table(&dir).await;
        let expected = format!("{}: {}", case.kind, case.message);
        if let Some(sql) = &case.sql {
            let got = refusal(t.sql(sql).await.map(drop));
            if got != expected {
                wrong.push(format!("{} via SQL: {got}", case.id));
            }
            unchanged(&t, &case.id).await;
        }
        let got = refusal(through_rust(&case.id, &t).await);
        if got != expected {
            wrong.push(format!("{} via Rust: {got}", case.id));
        }
        unchanged(&t, &case.id).await;
    }
    assert!(
        wrong.is_empty(),
        "refused otherwise than the contract says:\n{}",
        wrong.join("\n")
    );
}
