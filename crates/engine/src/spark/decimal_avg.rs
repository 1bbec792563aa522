//! `avg` of a DECIMAL(p,s) as Spark computes it (`Average` with `DecimalDivideWithOverflowCheck`):
//! the sum kept as DECIMAL(min(38, p + 10), s), the quotient sum / count rounded HALF_UP once to
//! the result type DECIMAL(min(38, p + 4), min(38, s + 4)).
//!
//! Why not DataFusion's: it truncates the quotient, so `avg` of 2, 0, 0 in DECIMAL(10,2) was
//! 0.666666 where Spark's is 0.666667, and `INSERT … SELECT avg(d)` stored the other value.
//!
//! Overflow, as in Spark: a sum past its type raises `[ARITHMETIC_OVERFLOW]` in ANSI mode and makes
//! the average NULL in legacy mode; a quotient past the result type (DECIMAL(38,10)'s average has
//! 24 integer digits) raises `[NUMERIC_VALUE_OUT_OF_RANGE]` or is NULL. No value: NULL.
//!
//! The rewrite (`aggregates`) puts this function in place of `avg` over a DECIMAL without
//! DISTINCT, in aggregates and in windows (a sliding frame is summed afresh, as in Spark).

use std::sync::Arc;

use super::frame_values::FrameValues;
use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, Int64Array};
use arrow::datatypes::{i256, DataType, Decimal128Type, Field, FieldRef, Int64Type};
use datafusion::common::{exec_err, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// The function for ANSI (`ansi`) or legacy mode, shared by every plan.
pub fn decimal_avg(ansi: bool) -> Arc<AggregateUDF> {
    static ANSI: std::sync::OnceLock<Arc<AggregateUDF>> = std::sync::OnceLock::new();
    static LEGACY: std::sync::OnceLock<Arc<AggregateUDF>> = std::sync::OnceLock::new();
    let cell = match ansi {
        true => &ANSI,
        false => &LEGACY,
    };
    Arc::clone(cell.get_or_init(|| {
        Arc::new(AggregateUDF::from(DecimalAvg {
            ansi,
            signature: Signature::any(1, Volatility::Immutable),
        }))
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalAvg {
    ansi: bool,
    signature: Signature,
}

/// The input's scale, the sum's precision and the result type: what every accumulator needs.
#[derive(Debug, Clone, Copy)]
struct Shape {
    ansi: bool,
    scale: i8,
    sum_precision: u8,
    out_precision: u8,
    out_scale: i8,
}

impl Shape {
    fn of(input: &DataType, ansi: bool) -> Result<Shape> {
        let DataType::Decimal128(p, s) = input else {
            return exec_err!("spark_avg over {input}: expected a DECIMAL");
        };
        if *s < 0 {
            return exec_err!("spark_avg over {input}: a negative scale is not supported");
        }
        Ok(Shape {
            ansi,
            scale: *s,
            sum_precision: (*p + 10).min(38),
            out_precision: (*p + 4).min(38),
            out_scale: (*s + 4).min(38),
        })
    }

    fn sum_type(&self) -> DataType {
        DataType::Decimal128(self.sum_precision, self.scale)
    }

    /// `acc + v` within the sum's type; None past it (legacy mode), an error in ANSI mode.
    fn add(&self, acc: Option<i128>, v: i128) -> Result<Option<i128>> {
        let limit = 10i128.pow(u32::from(self.sum_precision));
        match acc.and_then(|a| a.checked_add(v)).filter(|s| s.abs() < limit) {
            Some(s) => Ok(Some(s)),
            None if self.ansi => Err(DataFusionError::Execution(
                "[ARITHMETIC_OVERFLOW] Overflow in sum of decimals. If necessary set spark.sql.ansi.enabled to false to bypass this error".into(),
            )),
            None => Ok(None),
        }
    }

    /// The average of `count` values summing to `sum` (unscaled at the input's scale); None for
    /// no value or an overflow in legacy mode.
    fn average(&self, sum: Option<i128>, count: i64) -> Result<Option<i128>> {
        if count <= 0 {
            return Ok(None);
        }
        let Some(sum) = sum else {
            return Ok(None);
        };
        match quotient(sum, count, self.scale, self.out_scale, self.out_precision) {
            Some(v) => Ok(Some(v)),
            None if self.ansi => Err(DataFusionError::Execution(format!(
                "[NUMERIC_VALUE_OUT_OF_RANGE] the average cannot be represented as DECIMAL({}, {}). If necessary set spark.sql.ansi.enabled to false to bypass this error",
                self.out_precision, self.out_scale
            ))),
            None => Ok(None),
        }
    }

    fn state_arrays(&self, sums: Vec<Option<i128>>, counts: Vec<i64>) -> Result<Vec<ArrayRef>> {
        let sums =
            Decimal128Array::from(sums).with_precision_and_scale(self.sum_precision, self.scale)?;
        Ok(vec![Arc::new(sums), Arc::new(Int64Array::from(counts))])
    }
}

/// `sum / count` (sum unscaled at `scale`) rounded HALF_UP to `out_scale`, unscaled; None past
/// `out_precision` digits.
///
/// Spark divides to 39 decimal places, truncating, and then rounds HALF_UP to the result's
/// scale (at most 38): the digits up to the 39th decide the rounding exactly as the whole
/// quotient does, so this is the exact quotient rounded once. (Its overflow message shows
/// the 39 places: `5590281004233449284969348854.689333171857142857142857142857142857142`.)
/// Exact in 256 bits: |sum| < 10^38 is scaled by at most 10^38.
fn quotient(sum: i128, count: i64, scale: i8, out_scale: i8, out_precision: u8) -> Option<i128> {
    let up = u32::try_from(i32::from(out_scale) - i32::from(scale)).ok()?;
    let ten = i256::from_i128(10);
    let num = i256::from_i128(sum).checked_mul(ten.checked_pow(up)?)?;
    let den = i256::from_i128(i128::from(count));
    let (q, r) = (num.wrapping_div(den), num.wrapping_rem(den));
    // HALF_UP: away from zero when the remainder is at least half the divisor.
    let q = match r.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= den {
        true if num < i256::ZERO => q.wrapping_sub(i256::ONE),
        true => q.wrapping_add(i256::ONE),
        false => q,
    };
    let limit = ten.checked_pow(u32::from(out_precision))?;
    (q.wrapping_abs() < limit).then_some(q)?.to_i128()
}

impl AggregateUDFImpl for DecimalAvg {
    fn name(&self) -> &str {
        match self.ansi {
            true => "spark_avg",
            false => "legacy_avg",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let Some(t) = args.first() else {
            return exec_err!("spark_avg takes one argument");
        };
        let shape = Shape::of(t, self.ansi)?;
        Ok(DataType::Decimal128(shape.out_precision, shape.out_scale))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let Some(input) = args.input_fields.first() else {
            return exec_err!("spark_avg takes one argument");
        };
        let shape = Shape::of(input.data_type(), self.ansi)?;
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[sum]", args.name),
                shape.sum_type(),
                true,
            )),
            Arc::new(Field::new(
                format!("{}[count]", args.name),
                DataType::Int64,
                false,
            )),
        ])
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(AvgAcc {
            shape: shape_of(&args, self.ansi)?,
            sum: Some(0),
            count: 0,
        }))
    }
    /// A sliding window frame's: its values kept and summed afresh, in order, per frame.
    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(FrameAvg {
            shape: shape_of(&args, self.ansi)?,
            values: FrameValues::default(),
        }))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupAvgs {
            shape: shape_of(&args, self.ansi)?,
            sums: Vec::new(),
            counts: Vec::new(),
        }))
    }
}

fn shape_of(args: &AccumulatorArgs, ansi: bool) -> Result<Shape> {
    let Some(e) = args.exprs.first() else {
        return exec_err!("spark_avg takes one argument");
    };
    Shape::of(&e.data_type(args.schema)?, ansi)
}

fn decimals(a: &ArrayRef) -> Result<Vec<Option<i128>>> {
    match a.data_type() {
        DataType::Decimal128(..) => Ok(a.as_primitive::<Decimal128Type>().iter().collect()),
        other => exec_err!("spark_avg: expected a DECIMAL, found {other}"),
    }
}

/// The (sum, count) pairs of a state batch: the sums (None where one overflowed, or past a
/// filter) and the counts.
fn states(states: &[ArrayRef]) -> Result<Vec<(Option<i128>, i64)>> {
    let (Some(sums), Some(counts)) = (states.first(), states.get(1)) else {
        return exec_err!("spark_avg: a state of two columns expected");
    };
    let DataType::Int64 = counts.data_type() else {
        return exec_err!("spark_avg: a BIGINT count expected");
    };
    let counts = counts.as_primitive::<Int64Type>();
    Ok(decimals(sums)?
        .into_iter()
        .zip(counts.iter())
        .map(|(s, c)| (s, c.unwrap_or(0)))
        .collect())
}

/// One running average (the window frame's, or the one group's).
#[derive(Debug)]
struct AvgAcc {
    shape: Shape,
    /// None once the sum overflowed in legacy mode (the average is then NULL).
    sum: Option<i128>,
    count: i64,
}

impl Accumulator for AvgAcc {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(a) = values.first() else {
            return Ok(());
        };
        for v in decimals(a)?.into_iter().flatten() {
            self.sum = self.shape.add(self.sum, v)?;
            self.count = self.count.saturating_add(1);
        }
        Ok(())
    }
    /// No retraction: a sliding frame is summed afresh from its first row, as Spark sums it, so
    /// an overflow is the one Spark meets on the way through that frame (a running sum with
    /// values taken out kept a legacy-mode NULL for every later frame, red team helper-38).
    fn supports_retract_batch(&self) -> bool {
        false
    }
    fn merge_batch(&mut self, batch: &[ArrayRef]) -> Result<()> {
        for (sum, count) in states(batch)? {
            if count == 0 {
                continue;
            }
            self.sum = match sum {
                Some(s) => self.shape.add(self.sum, s)?,
                None => None,
            };
            self.count = self.count.saturating_add(count);
        }
        Ok(())
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Decimal128(self.sum, self.shape.sum_precision, self.shape.scale),
            ScalarValue::Int64(Some(self.count)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Decimal128(
            self.shape.average(self.sum, self.count)?,
            self.shape.out_precision,
            self.shape.out_scale,
        ))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// A sliding window frame's average: the frame's non-NULL values in order (rows enter at the
/// back and leave at the front), summed afresh from the first at each evaluation, as Spark
/// sums each sliding frame. A running sum with values taken out would meet other overflows: in
/// legacy mode it kept NULL for every frame after one overflowed (red team helper-38).
#[derive(Debug)]
struct FrameAvg {
    shape: Shape,
    values: FrameValues<i128>,
}

impl FrameAvg {
    fn sum(&self) -> Result<Option<i128>> {
        let mut sum = Some(0);
        for v in self.values.iter() {
            sum = self.shape.add(sum, *v)?;
            if sum.is_none() {
                break;
            }
        }
        Ok(sum)
    }
}

impl Accumulator for FrameAvg {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.values.extend(decimals(a)?.into_iter().flatten());
        }
        Ok(())
    }
    /// The frame's first rows leaving it (the oldest values, in order).
    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.values.retract(a);
        }
        Ok(())
    }
    fn supports_retract_batch(&self) -> bool {
        true
    }
    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        exec_err!("spark_avg: a window frame's average is not merged")
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Decimal128(self.sum()?, self.shape.sum_precision, self.shape.scale),
            ScalarValue::Int64(Some(self.values.len() as i64)),
        ])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        let count = i64::try_from(self.values.len()).unwrap_or(i64::MAX);
        Ok(ScalarValue::Decimal128(
            self.shape.average(self.sum()?, count)?,
            self.shape.out_precision,
            self.shape.out_scale,
        ))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.heap_size()
    }
}

/// One running sum and count per group.
#[derive(Debug)]
struct GroupAvgs {
    shape: Shape,
    sums: Vec<Option<i128>>,
    counts: Vec<i64>,
}

impl GroupAvgs {
    /// Adds each row's (sum, count) to its group's.
    fn add_all(
        &mut self,
        rows: Vec<(Option<i128>, i64)>,
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.sums.resize(total, Some(0));
        self.counts.resize(total, 0);
        for (row, (&g, (v, n))) in groups.iter().zip(rows).enumerate() {
            let keep = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            if !keep || n == 0 {
                continue;
            }
            if let (Some(sum), Some(count)) = (self.sums.get_mut(g), self.counts.get_mut(g)) {
                *sum = match v {
                    Some(v) => self.shape.add(*sum, v)?,
                    None => None,
                };
                *count = count.saturating_add(n);
            }
        }
        Ok(())
    }
}

impl GroupsAccumulator for GroupAvgs {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let Some(a) = values.first() else {
            return Ok(());
        };
        // A NULL value counts for nothing.
        let rows = decimals(a)?
            .into_iter()
            .map(|v| (v, i64::from(v.is_some())))
            .collect();
        self.add_all(rows, group_indices, opt_filter, total_num_groups)
    }
    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        let rows = states(values)?;
        self.add_all(rows, group_indices, None, total_num_groups)
    }
    /// Each row its own group: its value and a count of one (none when NULL or filtered out).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let Some(a) = values.first() else {
            return exec_err!("spark_avg takes one argument");
        };
        let (mut sums, mut counts) = (Vec::with_capacity(a.len()), Vec::with_capacity(a.len()));
        for (row, v) in decimals(a)?.into_iter().enumerate() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            let v = v.filter(|_| keep);
            sums.push(Some(v.unwrap_or(0)));
            counts.push(i64::from(v.is_some()));
        }
        self.shape.state_arrays(sums, counts)
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        let out = sums
            .into_iter()
            .zip(counts)
            .map(|(s, c)| self.shape.average(s, c))
            .collect::<Result<Decimal128Array>>()?
            .with_precision_and_scale(self.shape.out_precision, self.shape.out_scale)?;
        Ok(Arc::new(out))
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let counts = emit_to.take_needed(&mut self.counts);
        self.shape.state_arrays(sums, counts)
    }
    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<Option<i128>>()
            + self.counts.capacity() * std::mem::size_of::<i64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotients_round_half_up_as_sparks() {
        // Spark 4: avg of 2.00, 0, 0 in DECIMAL(10,2) is 0.666667 (DECIMAL(14,6)); of 1, 0, 0 in
        // DECIMAL(10,0) 0.3333 and of -2, 0, 0 -0.6667 (DECIMAL(14,4)).
        assert_eq!(quotient(200, 3, 2, 6, 14), Some(666_667));
        assert_eq!(quotient(1, 3, 0, 4, 14), Some(3_333));
        assert_eq!(quotient(-2, 3, 0, 4, 14), Some(-6_667));
        // 1E-37 over 22 rows of DECIMAL(38,37): 4.54…E-39, 0E-38 in Spark (no rounding at the
        // 39th place first).
        assert_eq!(quotient(1, 22, 37, 38, 38), Some(0));
        // A sum of 10^38 - 1 over one row at scale 0, result DECIMAL(38,4): 34 integer digits
        // only, out of range.
        assert_eq!(quotient(10i128.pow(38) - 1, 1, 0, 4, 38), None);
        assert_eq!(quotient(0, 5, 2, 6, 14), Some(0));
    }

    #[test]
    fn a_sum_past_its_type_raises_in_ansi_and_is_null_in_legacy() {
        let ansi = Shape::of(&DataType::Decimal128(38, 0), true).unwrap();
        let max = 10i128.pow(38) - 1;
        assert!(ansi.add(Some(max), 1).is_err());
        let legacy = Shape::of(&DataType::Decimal128(38, 0), false).unwrap();
        assert_eq!(legacy.add(Some(max), 1).unwrap(), None);
        assert_eq!(legacy.average(None, 3).unwrap(), None);
        assert_eq!(ansi.average(Some(5), 0).unwrap(), None);
    }
}
