//! An output column keeps its alias as written (`spark::alias_case`), as in Spark: a CREATE TABLE
//! AS SELECT stores `MyCol`, a column read as `NAME` is named `NAME`, and INSERT's by-name rule
//! compares the names as written. References
//! to an alias keep the meaning they had when DataFusion lower-cased both.

use delta_rlc_engine::conflict::ConflictConfig;
use delta_rlc_engine::env::Env;
use delta_rlc_engine::sql::SqlSession;
use delta_rlc_engine::ErrorKind;

use crate::common::{latest_snapshot, rt, sorted_rows};

fn session(name: &str) -> SqlSession {
    let mut s = SqlSession::new(Env::deterministic(7), ConflictConfig::default());
    for t in ["t", "c", "x", "c2"] {
        s.register(t, &format!("memory://alias-names-{name}/{t}"));
    }
    s
}

async fn run(s: &SqlSession, sql: &str) -> Vec<arrow::record_batch::RecordBatch> {
    s.execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .batches
}

/// The output's column names, then its rows in the order they came.
async fn named_rows(s: &SqlSession, sql: &str) -> (Vec<String>, Vec<String>) {
    let batches = run(s, sql).await;
    let names = batches
        .first()
        .map(|b| {
            b.schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        })
        .unwrap_or_default();
    let rows = batches
        .iter()
        .flat_map(|b| sorted_rows(std::slice::from_ref(b)))
        .collect();
    (names, rows)
}

#[test]
fn aliases_name_columns_as_written() {
    let s = session("ctas");
    rt().block_on(async {
        run(&s, "CREATE TABLE t (id INT, v INT, Name STRING)").await;
        run(
            &s,
            "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'A'), (3, 30, 'b')",
        )
        .await;
        run(
            &s,
            "CREATE TABLE c AS SELECT id AS MyId, v * 2 AS Doubled, Name FROM t",
        )
        .await;
        let snap = latest_snapshot("memory://alias-names-ctas/c").await;
        let names: Vec<&str> = snap.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["MyId", "Doubled", "Name"]);
        // Unaliased: a CAST of a name is the name, a literal its text, parentheses nothing.
        run(&s, "CREATE TABLE x AS SELECT CAST(v AS STRING), 1, 2.50, 'a', (NAME), true FROM t WHERE id = 1").await;
        let snap = latest_snapshot("memory://alias-names-ctas/x").await;
        let names: Vec<&str> = snap.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["v", "1", "2.50", "a", "NAME", "true"]);
        // A subquery's alias, read in another spelling, is that column, named as read.
        let (names, rows) = named_rows(
            &s,
            "SELECT myid FROM (SELECT id AS MyId FROM t) WHERE MYID = 2",
        )
        .await;
        assert_eq!(
            (names, rows),
            (vec!["myid".to_string()], vec!["2".to_string()])
        );
        // A column read by name is named as written, as Spark names it.
        let (names, _) = named_rows(
            &s,
            "SELECT doubled, DOUBLED, t.ID, MyID FROM c JOIN t ON t.id = c.MyId",
        )
        .await;
        assert_eq!(names, ["doubled", "DOUBLED", "ID", "MyID"]);
        // Two aliases that differ only in case are two columns of one name to a table: refused.
        let e = s
            .execute("CREATE TABLE c2 AS SELECT 1 AS a, 2 AS A")
            .await
            .expect_err("duplicate columns");
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument), "{e}");
    });
}

#[test]
fn references_to_an_alias_mean_what_spark_reads() {
    let s = session("refs");
    rt().block_on(async {
        run(&s, "CREATE TABLE t (id INT, v INT, Name STRING)").await;
        run(&s, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'A'), (3, 30, 'b')").await;
        let cases: [(&str, &[&str], &[&str]); 6] = [
            // ORDER BY reads the alias before the input column `v`, in any spelling.
            ("SELECT -v AS V FROM t ORDER BY v LIMIT 1", &["V"], &["-30"]),
            ("SELECT -v AS Neg FROM t ORDER BY NEG DESC LIMIT 1", &["Neg"], &["-10"]),
            // GROUP BY reads the column `Name` first ('a' and 'A' apart), inside an expression too.
            ("SELECT upper(Name) AS NAME, count(*) AS n FROM t GROUP BY name ORDER BY n, name", &["NAME", "n"], &["A|1", "A|1", "B|1"]),
            ("SELECT lower(Name) AS NAME, count(*) AS N FROM t GROUP BY lower(Name) ORDER BY n DESC", &["NAME", "N"], &["a|2", "b|1"]),
            // In HAVING, `sum(v)` beside an alias `V` sums the input's `v` (red team helper-52).
            ("SELECT Name, id + 0 AS V FROM t GROUP BY Name, id HAVING sum(v) > 15 ORDER BY id", &["Name", "V"], &["A|2", "b|3"]),
            // HAVING on an alias in another spelling.
            ("SELECT Name AS Nm, sum(v) AS Total FROM t GROUP BY Name HAVING total > 10 ORDER BY TOTAL", &["Nm", "Total"], &["A|20", "b|30"]),
        ];
        for (sql, want_names, want_rows) in cases {
            let (names, rows) = named_rows(&s, sql).await;
            assert_eq!(names, want_names.to_vec(), "{sql}");
            assert_eq!(rows, want_rows.to_vec(), "{sql}");
        }
        // Beside a wildcard, ORDER BY reads the output as DataFusion does: the wildcard's `v`.
        let (_, rows) = named_rows(&s, "SELECT *, -v AS V FROM t ORDER BY V LIMIT 1").await;
        assert_eq!(rows, ["1|10|a|-10"]);
        // A name two output columns match: Spark reads neither; refused (red team helper-53).
        for sql in [
            "SELECT v AS x, id AS X FROM t ORDER BY x",
            "SELECT v, -v AS V FROM t ORDER BY v",
        ] {
            let e = s.execute(sql).await.expect_err(sql).to_string();
            assert!(e.contains("more than one output column"), "{sql}: {e}");
        }
    });
}

/// Delta's rule (`needsSchemaAdjustmentByOrdinal`) compares a query's names with the table's
/// exactly: `AS ID` is not `id`, so the row goes by position, and a struct's fields with it.
#[test]
fn insert_by_name_compares_aliases_as_written() {
    let s = session("insert");
    rt().block_on(async {
        run(&s, "CREATE TABLE t (id INT, s STRUCT<a: INT, b: INT>)").await;
        run(
            &s,
            "INSERT INTO t SELECT 1 AS ID, named_struct('b', 2, 'a', 3) AS s",
        )
        .await;
        run(
            &s,
            "INSERT INTO t SELECT 2 AS id, named_struct('b', 2, 'a', 3) AS s",
        )
        .await;
        // Struct fields spelled in another case are not the table's either (Delta's
        // `isReadCompatible` finds them without regard to case, then requires the spelling).
        run(
            &s,
            "INSERT INTO t SELECT 3 AS id, named_struct('B', 2, 'A', 3) AS s",
        )
        .await;
        // Columns read by name carry their names: by name (red team helper-53), whatever the
        // query around them; a name two items share is by position.
        run(&s, "CREATE TABLE c (id INT, s STRUCT<b: INT, a: INT>)").await;
        run(&s, "INSERT INTO c VALUES (4, named_struct('b', 2, 'a', 3))").await;
        run(&s, "INSERT INTO t SELECT id, s FROM c").await;
        run(
            &s,
            "INSERT INTO t SELECT c.id + 1 AS id, c.s FROM c WHERE id > 0 ORDER BY id",
        )
        .await;
        let rows = sorted_rows(&run(&s, "SELECT id, s.a, s.b FROM t").await);
        assert_eq!(rows, ["1|2|3", "2|3|2", "3|2|3", "4|3|2", "5|3|2"]);
    });
}
