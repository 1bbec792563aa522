//! `sum` of integers as Spark's ANSI mode computes it: a BIGINT whose overflow raises
//! ARITHMETIC_OVERFLOW. DataFusion's `sum` wraps, so `INSERT … SELECT sum(x)` over 2^63 - 1 and 1
//! would store -2^63. The rewrite (`rewrite::rewrite_node`) puts this function in place of `sum`
//! over an integer column, without DISTINCT, in ANSI mode only (Spark's legacy mode wraps too).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// The function, shared by every plan.
pub fn checked_sum() -> Arc<AggregateUDF> {
    static UDAF: std::sync::OnceLock<Arc<AggregateUDF>> = std::sync::OnceLock::new();
    Arc::clone(UDAF.get_or_init(|| Arc::new(AggregateUDF::from(CheckedSum::new()))))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedSum {
    signature: Signature,
}

impl CheckedSum {
    fn new() -> Self {
        CheckedSum {
            signature: Signature::uniform(1, vec![DataType::Int64], Volatility::Immutable),
        }
    }
}

fn overflow() -> DataFusionError {
    DataFusionError::Execution(
        "[ARITHMETIC_OVERFLOW] long overflow in sum. Use 'try_sum' or set spark.sql.ansi.enabled to false to tolerate overflow"
            .into(),
    )
}

fn add(acc: i64, v: i64) -> Result<i64> {
    acc.checked_add(v).ok_or_else(overflow)
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        "spark_sum"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[sum]", args.name),
            DataType::Int64,
            true,
        ))])
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(SumAcc { sum: None }))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupSums::default()))
    }
}

#[derive(Debug)]
struct SumAcc {
    sum: Option<i64>,
}

impl Accumulator for SumAcc {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(a) = values.first() else {
            return Ok(());
        };
        for v in a.as_primitive::<Int64Type>().iter().flatten() {
            self.sum = Some(add(self.sum.unwrap_or(0), v)?);
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Int64(self.sum)])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(self.sum))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// One running sum per group; a group no non-NULL value reached is NULL.
#[derive(Debug, Default)]
struct GroupSums {
    sums: Vec<i64>,
    seen: Vec<bool>,
}

impl GroupSums {
    fn add_all(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.sums.resize(total, 0);
        self.seen.resize(total, false);
        let Some(a) = values.first() else {
            return Ok(());
        };
        let a = a.as_primitive::<Int64Type>();
        for (row, &g) in groups.iter().enumerate() {
            let keep = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if !keep || a.is_null(row) {
                continue;
            }
            if let (Some(sum), Some(seen)) = (self.sums.get_mut(g), self.seen.get_mut(g)) {
                *sum = add(*sum, a.value(row))?;
                *seen = true;
            }
        }
        Ok(())
    }

    fn emit(&mut self, emit_to: EmitTo) -> ArrayRef {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        Arc::new(Int64Array::new(sums.into(), Some(NullBuffer::from(seen))))
    }
}

impl GroupsAccumulator for GroupSums {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.add_all(values, group_indices, opt_filter, total_num_groups)
    }
    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.add_all(values, group_indices, None, total_num_groups)
    }
    /// Each row its own group: its value is its sum (a filtered-out row is NULL).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let Some(a) = values.first() else {
            return Ok(vec![]);
        };
        let a = a.as_primitive::<Int64Type>();
        let out: Int64Array = a
            .iter()
            .enumerate()
            .map(|(row, v)| match opt_filter {
                Some(f) if !(f.is_valid(row) && f.value(row)) => None,
                _ => v,
            })
            .collect();
        Ok(vec![Arc::new(out)])
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.emit(emit_to))
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.emit(emit_to)])
    }
    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<i64>() + self.seen.capacity()
    }
}
