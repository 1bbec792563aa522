//! `max` and `min` of FLOAT/DOUBLE in a GROUP BY, in Spark's order: NaN above every other value,
//! -0.0 equal to 0.0 (the first seen kept), NULLs skipped.
//!
//! DataFusion's grouped min/max start each group at the type's finite extreme and compare with
//! `<`/`>`: a group holding only -Infinity came out -1.7976931348623157E308 (a value not in the
//! data), `max` skipped NaN and `min` let it win (red team helper-41; a CTAS stored them). Its
//! ungrouped and window min/max already order as Spark does and are left alone.

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Which {
    Max,
    Min,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatExtremum {
    which: Which,
    signature: Signature,
}

/// Spark's `max` over floats.
pub fn float_max() -> Arc<AggregateUDF> {
    static F: OnceLock<Arc<AggregateUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| Arc::new(AggregateUDF::from(FloatExtremum::new(Which::Max)))))
}

/// Spark's `min` over floats.
pub fn float_min() -> Arc<AggregateUDF> {
    static F: OnceLock<Arc<AggregateUDF>> = OnceLock::new();
    Arc::clone(F.get_or_init(|| Arc::new(AggregateUDF::from(FloatExtremum::new(Which::Min)))))
}

impl FloatExtremum {
    fn new(which: Which) -> Self {
        FloatExtremum {
            which,
            signature: Signature::uniform(
                1,
                vec![DataType::Float32, DataType::Float64],
                Volatility::Immutable,
            ),
        }
    }
}

/// Whether `a` is strictly above `b` in Spark's order of doubles (NaN above everything, NaN equal
/// to NaN, -0.0 equal to 0.0).
fn above(a: f64, b: f64) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => false,
        (true, false) => true,
        (false, true) => false,
        (false, false) => a > b,
    }
}

/// `best` after seeing `v`: replaced only by a strictly better value (ties keep the first).
fn better(which: Which, best: Option<f64>, v: f64) -> Option<f64> {
    match best {
        None => Some(v),
        Some(b) => {
            let replace = match which {
                Which::Max => above(v, b),
                Which::Min => above(b, v),
            };
            Some(if replace { v } else { b })
        }
    }
}

/// The non-NULL values of a FLOAT or DOUBLE array as doubles (a FLOAT widens exactly), with
/// their rows.
fn values(a: &ArrayRef) -> Result<Vec<Option<f64>>> {
    Ok(match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().iter().collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(f64::from))
            .collect(),
        other => return exec_err!("spark max/min over {other}"),
    })
}

fn scalar(t: &DataType, v: Option<f64>) -> ScalarValue {
    match t {
        // Back to FLOAT exactly: the value is one of the inputs.
        DataType::Float32 => ScalarValue::Float32(v.map(|v| v as f32)),
        _ => ScalarValue::Float64(v),
    }
}

fn array(t: &DataType, vs: Vec<Option<f64>>) -> ArrayRef {
    match t {
        DataType::Float32 => Arc::new(
            vs.into_iter()
                .map(|v| v.map(|v| v as f32))
                .collect::<Float32Array>(),
        ),
        _ => Arc::new(vs.into_iter().collect::<Float64Array>()),
    }
}

impl AggregateUDFImpl for FloatExtremum {
    fn name(&self) -> &str {
        match self.which {
            Which::Max => "spark_max",
            Which::Min => "spark_min",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first() {
            Some(t @ (DataType::Float32 | DataType::Float64)) => Ok(t.clone()),
            other => exec_err!("spark max/min over {other:?}"),
        }
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[best]", args.name),
            args.return_field.data_type().clone(),
            true,
        ))])
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Best {
            which: self.which,
            out: args.return_field.data_type().clone(),
            best: None,
        }))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupBest {
            which: self.which,
            out: args.return_field.data_type().clone(),
            best: Vec::new(),
        }))
    }
}

#[derive(Debug)]
struct Best {
    which: Which,
    out: DataType,
    best: Option<f64>,
}

impl Accumulator for Best {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            for v in self::values(a)?.into_iter().flatten() {
                self.best = better(self.which, self.best, v);
            }
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![scalar(&self.out, self.best)])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(scalar(&self.out, self.best))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// One best value per group (None: no value reached the group yet).
#[derive(Debug)]
struct GroupBest {
    which: Which,
    out: DataType,
    best: Vec<Option<f64>>,
}

impl GroupBest {
    fn see(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.best.resize(total, None);
        let Some(a) = values.first() else {
            return Ok(());
        };
        for (row, (&g, v)) in groups.iter().zip(self::values(a)?).enumerate() {
            let keep = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            let (true, Some(v)) = (keep, v) else {
                continue;
            };
            if let Some(b) = self.best.get_mut(g) {
                *b = better(self.which, *b, v);
            }
        }
        Ok(())
    }
}

impl GroupsAccumulator for GroupBest {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.see(values, group_indices, opt_filter, total_num_groups)
    }
    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.see(values, group_indices, None, total_num_groups)
    }
    /// Each row its own group: its value is its best (a filtered-out row is NULL).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let Some(a) = values.first() else {
            return Ok(vec![]);
        };
        let kept = self::values(a)?
            .into_iter()
            .enumerate()
            .map(|(row, v)| {
                v.filter(|_| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row)))
            })
            .collect();
        Ok(vec![array(&self.out, kept)])
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(array(&self.out, emit_to.take_needed(&mut self.best)))
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![array(&self.out, emit_to.take_needed(&mut self.best))])
    }
    fn size(&self) -> usize {
        self.best.capacity() * std::mem::size_of::<Option<f64>>()
    }
}
