//! A GROUP BY name is a column of the query's input before it is a SELECT alias, without regard
//! to case, as Spark resolves it (`spark::group_by_names`). Expected rows are Spark 4's on a twin
//! table.

use crate::common::rt;
use crate::spark_semantics::{fails, rows, session};

#[test]
fn a_group_by_name_is_the_column_before_the_alias() {
    let s = session("memory://group-by-names/g");
    rt().block_on(async {
        s.execute("CREATE TABLE t (Total INT, x INT, Name STRING)")
            .await
            .unwrap();
        s.execute("INSERT INTO t VALUES (1, 5, 'a'), (1, 6, 'A'), (2, 7, 'b')")
            .await
            .unwrap();
        let cases: [(&str, &[&str]); 9] = [
            // The column `Name`, not the alias `name`: 'a' and 'A' are two groups.
            ("SELECT upper(Name) AS name, count(*) FROM t GROUP BY name", &["A|1", "A|1", "B|1"]),
            ("SELECT upper(Name) AS name, count(*) FROM t GROUP BY name HAVING count(*) > 0", &["A|1", "A|1", "B|1"]),
            ("SELECT Total + 10 AS total, count(*) FROM t GROUP BY total", &["11|2", "12|1"]),
            // No column has the name: the alias.
            ("SELECT x % 2 AS y, count(*) FROM t GROUP BY y", &["0|1", "1|2"]),
            // Another query block's column does not make the name a column here.
            ("WITH a AS (SELECT Total AS k, count(*) AS c FROM t GROUP BY Total) SELECT k + 1 AS total, count(*) FROM a GROUP BY total", &["2|1", "3|1"]),
            // HAVING: a grouping column before the alias; inside a GROUP BY expression a name is
            // never an alias (DataFusion made `lower(Name)` `lower(lower(Name))`).
            ("SELECT Total + 10 AS total, count(*) AS n FROM t GROUP BY total HAVING total > 1", &["12|1"]),
            ("SELECT Total + 10 AS total, count(*) AS n FROM t GROUP BY total HAVING total = 11", &[]),
            ("SELECT lower(Name) AS NAME, count(*) FROM t GROUP BY lower(Name)", &["a|2", "b|1"]),
            // In a subquery too.
            ("SELECT count(*) FROM (SELECT upper(Name) AS name FROM t GROUP BY name)", &["3"]),
        ];
        for (sql, want) in cases {
            assert_eq!(rows(&s, sql).await, want.to_vec(), "{sql}");
        }
        // Grouped by the column `Total`, `x % 2` is not grouped (Spark: MISSING_AGGREGATION).
        fails(&s, "SELECT x % 2 AS total, count(*) FROM t GROUP BY total", "GROUP BY").await;
    });
}
