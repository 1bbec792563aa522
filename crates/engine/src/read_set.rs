//! What a transaction observed while reading: the conflict checker's input.
//!
//! Reads are OR-ed: each read registers its own predicate; a winner's file conflicts if it could
//! match any of them. A whole-table read disables every refinement.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::logical_expr::Expr;

/// One read: the predicate split into its partition-only and data parts (either may be absent).
#[derive(Debug, Clone)]
pub struct ReadPredicate {
    /// Conjuncts that reference only partition columns.
    pub partition: Option<Expr>,
    /// The remaining conjuncts.
    pub data: Option<Expr>,
    /// Human-readable form for errors.
    pub text: String,
    /// MERGE source-key marker: a row is read only if its key tuple is one of these (evaluated
    /// exactly by the row-level tiers; the stats tier uses `partition`/`data`, the pre-filter).
    pub exact_keys: Option<std::sync::Arc<SourceKeys>>,
}

/// The distinct source key tuples of a MERGE, encoded by the shared key equality
/// ([`crate::key_equality`]): a target row is read exactly when its key tuple's encoding is here.
#[derive(Debug, Clone)]
pub struct SourceKeys {
    /// Target column names, in tuple order.
    pub columns: Vec<String>,
    /// The equality the tuples were encoded with; target rows must be encoded with the same.
    pub equality: crate::key_equality::KeyEquality,
    pub tuples: crate::key_set::KeySet,
}

impl ReadPredicate {
    /// The whole predicate (partition AND data), or None for "everything".
    pub fn full(&self) -> Option<Expr> {
        match (&self.partition, &self.data) {
            (Some(p), Some(d)) => Some(p.clone().and(d.clone())),
            (Some(p), None) => Some(p.clone()),
            (None, Some(d)) => Some(d.clone()),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ReadSet {
    pub predicates: Vec<ReadPredicate>,
    /// Paths of files read (decoded, relative), with the DV unique id they had when read.
    pub files: BTreeSet<(String, Option<String>)>,
    pub whole_table: bool,
    /// The statement also read the table through a query (a MERGE source, a subquery, the SELECT
    /// of an INSERT), not only through its own target scan. Such reads are not row-local: a row a
    /// winner deletes can change what the statement does to other rows.
    pub query_reads: bool,
    /// Application ids whose txn version this transaction read (exactly-once writers).
    pub app_ids: BTreeSet<String>,
    /// Columns the statement's expressions used beyond its read predicates — the targets of its
    /// assignments and the columns their values, MERGE clause conditions and inserted values
    /// read — declared by the operation once it has planned them all. `None` (the default, and
    /// any operation that does not declare) means every column: a winner's type change of any
    /// column is then a conflict (`conflict::metadata_change`).
    pub expression_columns: Option<BTreeSet<String>>,
    /// The names (lowercased) by which the statement's text reaches columns, declared by an
    /// operation whose meaning does not otherwise depend on the target's list of columns: no `*`
    /// over the target, no INSERT by position, no query reading the target. `None` (the default,
    /// and any operation or front end that does not declare) means it may depend on that list in
    /// any way, so a winner's ADD COLUMNS is a conflict for it; with `Some(names)`, only a column
    /// added under one of these names is (an unqualified name that would become ambiguous).
    /// Red team helper-43: a MERGE's `INSERT *` reconciled past ADD COLUMNS stored NULL where the
    /// serial run stores the source's value, and a positional INSERT committed where it fails.
    pub column_names: Option<BTreeSet<String>>,
    /// Columns into which the statement wrote a value converted inexactly from another type
    /// (`ops::conform`: 0.5 into an INT column is 0): re-run under a wider type, the value would
    /// differ. Recorded by the writer wherever it converts, whatever the operation declared.
    pub inexact_writes: BTreeSet<String>,
    /// The transaction adds back files it did not write (RESTORE): a VACUUM that announced
    /// itself after this transaction read may be deleting them (`conflict/vacuum_restore.rs`).
    pub restores_files: bool,
    /// Rows the statement read one by one and depends on without changing them, by file path:
    /// physical row indexes (a MERGE's target rows a source row matched but no clause changed —
    /// their existence decided that no NOT MATCHED clause inserted). A winner's deletion of one
    /// is a conflict even where the rows both changed are disjoint (`reconcile/dv_merge.rs`).
    pub kept_rows: BTreeMap<String, roaring::RoaringTreemap>,
}

impl ReadSet {
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty() && self.files.is_empty() && !self.whole_table
    }

    pub fn read_whole_table(&mut self) {
        self.whole_table = true;
    }

    pub fn read_by_query(&mut self) {
        self.query_reads = true;
    }

    pub fn add_predicate(&mut self, p: ReadPredicate) {
        self.predicates.push(p);
    }

    pub fn read_file(&mut self, path: &str, dv_id: Option<String>) {
        self.files.insert((path.to_string(), dv_id));
    }

    /// Declares columns the statement's non-predicate expressions used (see `expression_columns`);
    /// an operation that declares nothing is taken to depend on every column.
    pub fn used_columns<I: IntoIterator<Item = String>>(&mut self, cols: I) {
        self.expression_columns
            .get_or_insert_with(BTreeSet::new)
            .extend(cols);
    }

    /// Declares that the statement reaches the target's columns only by these names (see
    /// `column_names`); an operation that declares nothing may depend on the whole column list.
    pub fn names_columns<I: IntoIterator<Item = String>>(&mut self, names: I) {
        self.column_names
            .get_or_insert_with(BTreeSet::new)
            .extend(names.into_iter().map(|n| n.to_lowercase()));
    }

    /// The columns whose type the statement's outcome may depend on outside its read predicates,
    /// or None for "every column" (undeclared, or read through a query or as a whole table).
    pub fn type_dependent_columns(&self) -> Option<BTreeSet<String>> {
        if self.whole_table || self.query_reads {
            return None;
        }
        let mut cols = self.expression_columns.clone()?;
        cols.extend(self.inexact_writes.iter().cloned());
        Some(cols)
    }

    pub fn file_paths(&self) -> BTreeSet<&str> {
        self.files.iter().map(|(p, _)| p.as_str()).collect()
    }
}

/// Splits a predicate into (partition-only conjuncts, other conjuncts).
pub fn split_predicate(expr: &Expr, partition_columns: &[String], text: String) -> ReadPredicate {
    use datafusion::logical_expr::utils::split_conjunction;
    let mut part = Vec::new();
    let mut data = Vec::new();
    for c in split_conjunction(expr) {
        let cols = c.column_refs();
        if !cols.is_empty()
            && cols
                .iter()
                .all(|col| partition_columns.iter().any(|p| p == &col.name))
        {
            part.push(c.clone());
        } else {
            data.push(c.clone());
        }
    }
    let conj = |v: Vec<Expr>| v.into_iter().reduce(|a, b| a.and(b));
    ReadPredicate {
        partition: conj(part),
        data: conj(data),
        text,
        exact_keys: None,
    }
}
