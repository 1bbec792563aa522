//! A struct value's fields meet a struct column's as Spark 4 with Delta assigns them (twin
//! tables against Spark, `ops::nested_fields`): INSERT by position, UPDATE and MERGE by name with
//! every field matched; anything else refused, nothing committed.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{rt, sorted_rows};

fn session(name: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(12), ConflictConfig::default());
    s.register("t", &format!("memory://struct-assignment-{name}/t"));
    rt().block_on(s.execute(
        "CREATE TABLE t (id INT, s STRUCT<a: INT, b: INT>, l ARRAY<STRUCT<a: INT, b: STRING>>)",
    ))
    .unwrap();
    s
}

fn run(s: &SqlSession, sql: &str) {
    rt().block_on(s.execute(sql))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn rows(s: &SqlSession) -> Vec<String> {
    let q = "SELECT id, s.a, s.b, l FROM t";
    rt().block_on(async { sorted_rows(&s.execute(q).await.unwrap().batches) })
}

/// Each statement is refused as bad input, and the table is as it was.
fn refused(s: &SqlSession, statements: &[&str]) {
    let before = rows(s);
    for sql in statements {
        let e = rt().block_on(s.execute(sql)).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::InvalidArgument),
            "{sql}: {:?} {e}",
            e.kind()
        );
        assert!(e.to_string().contains("nested field"), "{sql}: {e}");
    }
    assert_eq!(rows(s), before);
}

#[test]
fn insert_assigns_a_structs_fields_by_position() {
    let s = session("insert");
    run(&s, "INSERT INTO t VALUES (1, named_struct('b', 10, 'a', 20), array(named_struct('b', 1, 'a', 'x')))");
    run(
        &s,
        "INSERT INTO t SELECT 2, named_struct('b', 11, 'a', 21), NULL",
    );
    run(&s, "INSERT INTO t SELECT 3, struct(90, 91), NULL");
    run(&s, "INSERT INTO t VALUES (4, struct(92, 93), NULL)");
    run(
        &s,
        "INSERT INTO t (s, id) VALUES (named_struct('x', 70, 'y', 80), 5)",
    );
    let want = [
        "1|10|20|[{a: 1, b: x}]",
        "2|11|21|NULL",
        "3|90|91|NULL",
        "4|92|93|NULL",
        "5|70|80|NULL",
    ];
    assert_eq!(rows(&s), want.map(String::from));
    refused(
        &s,
        &[
            "INSERT INTO t VALUES (6, named_struct('a', 1, 'b', 2, 'c', 3), NULL)",
            "INSERT INTO t VALUES (7, named_struct('a', 1), NULL)",
            "INSERT INTO t SELECT 8, NULL, array(named_struct('a', 1))",
        ],
    );
}

#[test]
fn update_and_merge_assign_a_structs_fields_by_name() {
    let s = session("by-name");
    run(&s, "INSERT INTO t VALUES (1, named_struct('a', 1, 'b', 2), NULL), (2, named_struct('a', 1, 'b', 2), NULL)");
    run(&s, "UPDATE t SET s = named_struct('b', 100, 'A', 200), l = array(named_struct('b', 'y', 'a', 7)) WHERE id = 1");
    run(&s, "MERGE INTO t USING (SELECT 2 AS id, named_struct('b', 30, 'a', 40) AS s UNION ALL SELECT 9, named_struct('b', 50, 'a', 60)) AS src ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)");
    run(&s, "MERGE INTO t USING (SELECT 11 AS id, named_struct('B', 70, 'a', 80) AS s, CAST(NULL AS ARRAY<STRUCT<b: STRING, a: INT>>) AS l) AS src ON t.id = src.id WHEN NOT MATCHED THEN INSERT *");
    let want = [
        "11|80|70|NULL",
        "1|200|100|[{a: 7, b: y}]",
        "2|40|30|NULL",
        "9|60|50|NULL",
    ];
    assert_eq!(rows(&s), want.map(String::from));
    refused(
        &s,
        &[
            "UPDATE t SET s = named_struct('x', 1, 'y', 2) WHERE id = 2",
            "UPDATE t SET s = struct(300, 301) WHERE id = 2",
            "UPDATE t SET s = named_struct('a', 5) WHERE id = 2",
            "UPDATE t SET s = named_struct('a', 5, 'b', 6, 'c', 7) WHERE id = 2",
            "UPDATE t SET s = named_struct('a', 5, 'A', 6) WHERE id = 2",
            "UPDATE t SET l = array(named_struct('x', 1, 'b', 'z')) WHERE id = 1",
            "MERGE INTO t USING (SELECT 2 AS id, named_struct('x', 30, 'y', 40) AS s) AS src ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s",
            "MERGE INTO t USING (SELECT 10 AS id, named_struct('x', 30, 'y', 40) AS s) AS src ON t.id = src.id WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)",
        ],
    );
}

/// As Delta: an INSERT without a column list whose query names the table's columns, with the
/// table's types but for the order of struct fields, is written by name (Delta's
/// `needsSchemaAdjustmentByOrdinal` is false, the write is a DataFrame's); other names, another
/// type or a column list keep the positional rule. Spark 4's rows (red team helper-51).
#[test]
fn an_insert_whose_query_names_the_columns_is_written_by_name() {
    let mut u = SqlSession::new(Env::deterministic(13), ConflictConfig::default());
    u.register("t", "memory://struct-assignment-insert-by-name/t");
    u.register("u", "memory://struct-assignment-insert-by-name/u");
    let s = u;
    run(
        &s,
        "CREATE TABLE t (id INT, s STRUCT<a: INT, b: INT>, l ARRAY<STRUCT<a: INT, b: STRING>>)",
    );
    run(
        &s,
        "CREATE TABLE u (id INT, s STRUCT<b: INT, a: INT>, l ARRAY<STRUCT<b: STRING, a: INT>>)",
    );
    run(&s, "INSERT INTO u VALUES (1, named_struct('b', 10, 'a', 20), array(named_struct('b', 'x', 'a', 7)))");
    run(&s, "INSERT INTO t SELECT * FROM u");
    run(
        &s,
        "INSERT INTO t SELECT 2 AS id, named_struct('b', 1, 'a', 2) AS s, CAST(NULL AS ARRAY<STRUCT<a: INT, b: STRING>>) AS l",
    );
    run(
        &s,
        "INSERT INTO t SELECT 3, named_struct('b', 1, 'a', 2), NULL",
    );
    run(&s, "INSERT INTO t (l, s, id) SELECT NULL, s, 4 FROM u");
    run(&s, "INSERT INTO t SELECT 5 AS id, named_struct('b', CAST(1 AS BIGINT), 'a', 2) AS s, NULL AS l");
    let want = [
        "1|20|10|[{a: 7, b: x}]",
        "2|2|1|NULL",
        "3|1|2|NULL",
        "4|10|20|NULL",
        "5|1|2|NULL",
    ];
    assert_eq!(rows(&s), want.map(String::from));
}

/// A NOT NULL field of a struct column is an invariant: the table lists the `invariants` feature
/// (Spark refuses to read it otherwise), and a NULL struct above the field violates it, as in
/// Delta (`s.a IS NOT NULL`); nothing is committed.
#[test]
fn a_not_null_struct_field_is_an_invariant_a_null_parent_violates() {
    let dir = tempfile::tempdir().unwrap();
    let loc = dir.path().join("n").display().to_string();
    let mut s = SqlSession::new(Env::deterministic(14), ConflictConfig::default());
    s.register("n", &loc);
    run(
        &s,
        "CREATE TABLE n (id INT, s STRUCT<a: INT NOT NULL, b: INT>)",
    );
    let snapshot = rt().block_on(crate::common::latest_snapshot(&loc));
    let features = snapshot
        .protocol
        .writer_features
        .clone()
        .unwrap_or_default();
    assert!(features.iter().any(|f| f == "invariants"), "{features:?}");
    run(&s, "INSERT INTO n VALUES (1, named_struct('a', 1, 'b', 2))");
    for bad in [
        "INSERT INTO n VALUES (2, NULL)",
        "INSERT INTO n VALUES (3, named_struct('a', NULL, 'b', 2))",
        "UPDATE n SET s = NULL WHERE id = 1",
    ] {
        let e = rt().block_on(s.execute(bad)).unwrap_err().to_string();
        assert!(
            e.contains("NOT NULL constraint violated for") && e.contains("s.a"),
            "{bad}: {e}"
        );
    }
    let got = rt().block_on(async {
        sorted_rows(&s.execute("SELECT id, s.a FROM n").await.unwrap().batches)
    });
    assert_eq!(got, vec!["1|1"]);
}

/// A UNION of structs whose fields are named or ordered otherwise is refused (Spark matches them
/// by position, DataFusion by name); alike fields, and names differing only in case, run.
#[test]
fn a_union_of_structs_with_fields_in_another_order_is_refused() {
    let s = session("union");
    let e = rt()
        .block_on(s.execute(
            "SELECT named_struct('a', 1, 'b', 2) AS s UNION ALL SELECT named_struct('b', 3, 'a', 4)",
        ))
        .unwrap_err();
    assert!(e.to_string().contains("UNION of column s"), "{e}");
    let e = rt()
        .block_on(s.execute("INSERT INTO t SELECT 1, named_struct('a', 1, 'b', 2), NULL UNION ALL SELECT 2, named_struct('b', 3, 'a', 4), NULL"))
        .unwrap_err();
    assert!(e.to_string().contains("UNION of column"), "{e}");
    run(&s, "INSERT INTO t SELECT 1, named_struct('a', 1, 'b', 2), NULL UNION ALL SELECT 2, named_struct('a', 3, 'b', 4), NULL");
    assert_eq!(rows(&s), ["1|1|2|NULL", "2|3|4|NULL"].map(String::from));
}

/// `struct(…)` names a field after a column or a struct field read, else `col<i>`, as Spark
/// does; so `SET s = struct(s.b, s.a)` is a struct of fields b and a, assigned by name
/// (helper-51: it was refused as `struct<col1, col2>`).
#[test]
fn struct_fields_are_named_as_spark_names_them() {
    let s = session("struct-names");
    run(
        &s,
        "INSERT INTO t VALUES (1, named_struct('a', 1, 'b', 2), NULL)",
    );
    // Names as Spark 4 gives them: a name read as written, an alias, else col<i> (one-based).
    let cases: [(&str, &[&str]); 4] = [
        (
            "SELECT struct(id, s.a, s.b * 2) AS x FROM t",
            &["id", "a", "col3"],
        ),
        (
            "SELECT struct(ID, t.s.a, id AS Z, id + 1) AS x FROM t",
            &["ID", "a", "Z", "col4"],
        ),
        (
            "SELECT struct(id, struct(s.b, 1 AS one)) AS x FROM t",
            &["id", "col2"],
        ),
        ("SELECT struct(1 AS one, s) AS x FROM t", &["one", "s"]),
    ];
    for (q, want) in cases {
        let out = rt().block_on(s.execute(q)).unwrap();
        let schema = out.batches[0].schema();
        let arrow::datatypes::DataType::Struct(fields) = schema.field(0).data_type() else {
            panic!("{schema:?}")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, want.to_vec(), "{q}");
    }
    // The inner struct of the third case: `b` and `one`.
    let q = "SELECT x.b, x.one FROM (SELECT struct(s.b, 1 AS one) AS x FROM t)";
    let out = rt().block_on(s.execute(q)).unwrap();
    assert_eq!(sorted_rows(&out.batches), ["2|1"]);
    run(&s, "UPDATE t SET s = struct(s.b, s.a) WHERE id = 1");
    assert_eq!(rows(&s), ["1|1|2|NULL"].map(String::from));
}
