//! File pruning with DataFusion's `PruningPredicate` over Delta per-file stats and partition values.
//!
//! Soundness: a file is pruned only when the predicate provably cannot hold for any of its rows.
//! Missing stats, unusable bounds (possibly truncated string maxima, unparsable values), and any error
//! building or evaluating the predicate keep the file. Wide bounds (DV'd files) only keep more.
//! Null counts are passed only when informative (tight bounds, or 0 / numRecords).
//!
//! [`FileStatsPruning`] parses each file's stats once and builds each (column, bound) array once, so
//! one set of files can be pruned against many predicates ([`StatsSubset`] answers for a subset of
//! the files by position with `take` over the cached arrays — the same values, only fewer rows).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{ArrayRef, BooleanArray, UInt32Array, UInt64Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::logical_expr::Expr;
use datafusion::physical_optimizer::pruning::PruningPredicate;
use delta_rlc_protocol::actions::Add;
use delta_rlc_protocol::partition::parse_partition_value;
use delta_rlc_protocol::schema::DataType as DeltaType;
use delta_rlc_protocol::stats::FileStats;

use crate::arrow_conv::{scalar_to_datafusion, stats_value_to_scalar, table_arrow_schema};
use crate::error::Result;
use crate::snapshot::Snapshot;

/// Per-file statistics for a list of adds, in the shape `PruningPredicate` asks for.
pub struct FileStatsPruning<'a> {
    files: &'a [Add],
    stats: Vec<Option<FileStats>>,
    schema: SchemaRef,
    snapshot_schema: &'a delta_rlc_protocol::schema::StructType,
    partition_columns: &'a [String],
    /// The table, for physical names: stats and partition values are keyed by them.
    snapshot: &'a Snapshot,
    /// (column, bound) → array over `files`, built on first use.
    columns: Mutex<HashMap<(String, Bound), Option<ArrayRef>>>,
    /// Path → position in `files`; `None` when a path repeats (positions would be ambiguous).
    positions: OnceLock<Option<HashMap<&'a str, u32>>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Bound {
    Min,
    Max,
    NullCount,
}

impl<'a> FileStatsPruning<'a> {
    pub fn new(snapshot: &'a Snapshot, files: &'a [Add]) -> Self {
        let stats = files
            .iter()
            .map(|f| f.stats.as_deref().and_then(|s| FileStats::parse(s).ok()))
            .collect();
        FileStatsPruning {
            files,
            stats,
            schema: table_arrow_schema(&snapshot.schema),
            snapshot_schema: &snapshot.schema,
            partition_columns: &snapshot.metadata.partition_columns,
            snapshot,
            columns: Mutex::new(HashMap::new()),
            positions: OnceLock::new(),
        }
    }

    /// Positions of `subset` in this pruner's files, checked by identity (not only by path), so the
    /// cached stats answered for a subset are exactly those of the given adds. `None` if any add is
    /// not one of this pruner's files.
    pub fn positions_of(&self, subset: &[&Add]) -> Option<Vec<u32>> {
        let index = self
            .positions
            .get_or_init(|| {
                let mut m = HashMap::with_capacity(self.files.len());
                for (i, f) in self.files.iter().enumerate() {
                    let pos = u32::try_from(i).ok()?;
                    if m.insert(f.path.as_str(), pos).is_some() {
                        return None;
                    }
                }
                Some(m)
            })
            .as_ref()?;
        subset
            .iter()
            .map(|a| {
                let pos = *index.get(a.path.as_str())?;
                let own = self.files.get(pos as usize)?;
                std::ptr::eq(own, *a).then_some(pos)
            })
            .collect()
    }

    /// The cached array for (column, bound), building it on first use.
    fn cached(&self, column: &Column, bound: Bound) -> Option<ArrayRef> {
        let key = (column.name.clone(), bound);
        if let Ok(map) = self.columns.lock() {
            if let Some(hit) = map.get(&key) {
                return hit.clone();
            }
        }
        let built = match bound {
            Bound::Min => self.bounds(column, false),
            Bound::Max => self.bounds(column, true),
            Bound::NullCount => self.build_null_counts(column),
        };
        if let Ok(mut map) = self.columns.lock() {
            map.insert(key, built.clone());
        }
        built
    }

    fn data_type(&self, column: &Column) -> Option<DataType> {
        self.schema
            .field_with_name(&column.name)
            .ok()
            .map(|f| f.data_type().clone())
    }

    fn partition_value(&self, file: &Add, column: &str, dt: &DataType) -> Option<ScalarValue> {
        let ty = match self.snapshot_schema.field(column).map(|f| &f.data_type) {
            Some(DeltaType::Primitive(p)) => p.clone(),
            _ => return None,
        };
        let raw = file
            .partition_values
            .get(self.snapshot.physical_name(column))
            .cloned()
            .flatten();
        let v = parse_partition_value(column, &ty, raw.as_deref()).ok()?;
        scalar_to_datafusion(&v, dt).ok()
    }

    fn is_partition(&self, column: &Column) -> bool {
        self.partition_columns.iter().any(|p| p == &column.name)
    }

    fn bounds(&self, column: &Column, is_max: bool) -> Option<ArrayRef> {
        if !self.is_partition(column) && !self.snapshot.stats_usable(&column.name) {
            return None;
        }
        let dt = self.data_type(column)?;
        let null = ScalarValue::try_from(&dt).ok()?;
        let values: Vec<ScalarValue> = if self.is_partition(column) {
            self.files
                .iter()
                .map(|f| {
                    self.partition_value(f, &column.name, &dt)
                        .unwrap_or_else(|| null.clone())
                })
                .collect()
        } else {
            self.stats
                .iter()
                .map(|s| {
                    s.as_ref()
                        .and_then(|s| {
                            let physical = self.snapshot.physical_name(&column.name);
                            if is_max {
                                s.max(&[physical])
                            } else {
                                s.min(&[physical])
                            }
                        })
                        .and_then(|v| stats_value_to_scalar(v, &dt, is_max))
                        .unwrap_or_else(|| null.clone())
                })
                .collect()
        };
        ScalarValue::iter_to_array(values).ok()
    }
}

impl FileStatsPruning<'_> {
    fn build_null_counts(&self, column: &Column) -> Option<ArrayRef> {
        if self.is_partition(column) {
            let dt = self.data_type(column)?;
            let counts: Vec<Option<u64>> = self
                .files
                .iter()
                .zip(&self.stats)
                .map(|(f, s)| {
                    let n = s.as_ref()?.num_records? as u64;
                    let v = self.partition_value(f, &column.name, &dt)?;
                    Some(if v.is_null() { n } else { 0 })
                })
                .collect();
            return Some(Arc::new(UInt64Array::from(counts)));
        }
        let counts: Vec<Option<u64>> = self
            .stats
            .iter()
            .map(|s| {
                s.as_ref()?
                    .informative_null_count(&[self.snapshot.physical_name(&column.name)])
                    .and_then(|n| u64::try_from(n).ok())
            })
            .collect();
        Some(Arc::new(UInt64Array::from(counts)))
    }

    fn build_row_counts(&self) -> Option<ArrayRef> {
        let counts: Vec<Option<u64>> = self
            .stats
            .iter()
            .map(|s| s.as_ref()?.num_records.and_then(|n| u64::try_from(n).ok()))
            .collect();
        Some(Arc::new(UInt64Array::from(counts)))
    }
}

impl PruningStatistics for FileStatsPruning<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.cached(column, Bound::Min)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.cached(column, Bound::Max)
    }

    fn num_containers(&self) -> usize {
        self.files.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.cached(column, Bound::NullCount)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        self.build_row_counts()
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// The stats of some of a [`FileStatsPruning`]'s files, by position (see `positions_of`).
pub struct StatsSubset<'s, 'a> {
    base: &'s FileStatsPruning<'a>,
    rows: UInt32Array,
}

impl<'s, 'a> StatsSubset<'s, 'a> {
    pub fn new(base: &'s FileStatsPruning<'a>, positions: Vec<u32>) -> Self {
        StatsSubset {
            base,
            rows: UInt32Array::from(positions),
        }
    }

    fn pick(&self, all: Option<ArrayRef>) -> Option<ArrayRef> {
        take(all?.as_ref(), &self.rows, None).ok()
    }
}

impl PruningStatistics for StatsSubset<'_, '_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.pick(self.base.min_values(column))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.pick(self.base.max_values(column))
    }

    fn num_containers(&self) -> usize {
        self.rows.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.pick(self.base.null_counts(column))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        self.pick(self.base.row_counts())
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// Which of `files` may hold a row satisfying `filter` (true = keep). Any failure keeps every file.
pub fn prune_files(snapshot: &Snapshot, files: &[Add], filter: &Expr) -> Result<Vec<bool>> {
    let stats = FileStatsPruning::new(snapshot, files);
    prune_with_stats(snapshot, &stats, filter)
}

/// Which containers of `stats` may hold a row satisfying `filter` (true = keep). Any failure keeps
/// every container.
pub fn prune_with_stats(
    snapshot: &Snapshot,
    stats: &dyn PruningStatistics,
    filter: &Expr,
) -> Result<Vec<bool>> {
    let n = stats.num_containers();
    let keep_all = vec![true; n];
    let schema = table_arrow_schema(&snapshot.schema);
    let Ok(df_schema) = DFSchema::try_from(schema.as_ref().clone()) else {
        return Ok(keep_all);
    };
    // Planned as every evaluation is (Spark's arithmetic): a predicate pruned under other
    // semantics than its rows are matched under could skip a file holding a matching row.
    let ctx = crate::spark::context();
    let Ok(phys) = crate::expr_plan::plan_physical(&ctx, filter, &df_schema) else {
        return Ok(keep_all);
    };
    #[allow(deprecated)]
    let Ok(pp) = PruningPredicate::try_new(phys, schema) else {
        return Ok(keep_all);
    };
    match pp.prune(stats) {
        Ok(v) if v.len() == n => Ok(v),
        _ => Ok(keep_all),
    }
}
