//! `sum(DISTINCT x)` of integers and DECIMALs with Spark's overflow rules (`checked_sum::Bounds`):
//! DataFusion's distinct sum wrapped, so `sum(DISTINCT b)` over {2^63 - 1, 1} was -2^63 where
//! Spark raises `[ARITHMETIC_OVERFLOW]` (red team helper-41; a CTAS stored it).
//!
//! The distinct values are kept in the order first seen (Spark sums them after de-duplicating,
//! in its own order; the first-seen order is the one a single file gives both engines), and
//! summed with every addition checked, as Spark's aggregate buffer is. Only GROUP BY and
//! whole-table aggregates reach here: a DISTINCT window aggregate is refused, as in Spark.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{i256, DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::StateFieldsArgs;
use datafusion::logical_expr::Accumulator;

use super::checked_sum::Bounds;

/// The state of a distinct sum: the distinct values seen, as a list of the argument's type.
pub(super) fn state_fields(args: &StateFieldsArgs) -> Result<Vec<FieldRef>> {
    let item = args
        .input_fields
        .first()
        .map(|f| f.data_type().clone())
        .unwrap_or(DataType::Int64);
    Ok(vec![Arc::new(Field::new_list(
        format!("{}[distinct]", args.name),
        Field::new_list_field(item, true),
        true,
    ))])
}

/// The distinct non-NULL values seen, in the order first seen, with the input's type.
#[derive(Debug)]
pub(super) struct DistinctSum {
    bounds: Bounds,
    seen: HashSet<i256>,
    order: Vec<i256>,
    input: Option<DataType>,
}

impl DistinctSum {
    pub(super) fn new(bounds: Bounds) -> Self {
        DistinctSum {
            bounds,
            seen: HashSet::new(),
            order: Vec::new(),
            input: None,
        }
    }

    fn see(&mut self, a: &ArrayRef) {
        self.input.get_or_insert_with(|| a.data_type().clone());
        for v in Bounds::values(a).into_iter().flatten() {
            if self.seen.insert(v) {
                self.order.push(v);
            }
        }
    }

    /// The values as scalars of the input's type (a DECIMAL keeps its precision and scale).
    fn scalars(&self) -> Vec<ScalarValue> {
        self.order
            .iter()
            .map(|v| match self.input {
                Some(DataType::Decimal128(p, s)) => ScalarValue::Decimal128(v.to_i128(), p, s),
                _ => ScalarValue::Int64(v.to_i128().and_then(|v| i64::try_from(v).ok())),
            })
            .collect()
    }
}

impl Accumulator for DistinctSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.see(a);
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(lists) = states.first() else {
            return Ok(());
        };
        let lists = lists.as_list::<i32>();
        for i in 0..lists.len() {
            if lists.is_valid(i) {
                self.see(&lists.value(i));
            }
        }
        Ok(())
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let item = self.input.clone().unwrap_or(DataType::Int64);
        Ok(vec![ScalarValue::List(ScalarValue::new_list_nullable(
            &self.scalars(),
            &item,
        ))])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.order.is_empty() {
            return Ok(self.bounds.scalar(None));
        }
        let mut sum = i256::ZERO;
        for v in &self.order {
            sum = self.bounds.add(sum, *v)?;
        }
        Ok(self.bounds.scalar(self.bounds.finish(sum)?))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.order.capacity() * std::mem::size_of::<i256>() * 3
    }
}
