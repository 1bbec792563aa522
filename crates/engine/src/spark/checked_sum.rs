//! `sum` of integers and DECIMALs as Spark computes it:
//! - integers: a BIGINT, each addition checked in ANSI mode (`[ARITHMETIC_OVERFLOW]`, as Java's
//!   `addExact`); legacy mode wraps, as DataFusion's does, so it is left there;
//! - DECIMALs: DECIMAL(min(38, p + 10), s), in both modes, past the type
//!   `[NUMERIC_VALUE_OUT_OF_RANGE]` in ANSI mode and NULL in legacy mode. Where it is checked
//!   follows Spark's two plans: a window keeps an exact buffer and checks each result (so
//!   {9e37, 9e37, -9e37} is 9e37 there); a GROUP BY or whole-table aggregate keeps its buffer in
//!   the sum type and checks every addition (the same values raise there in ANSI mode, and are
//!   NULL in legacy mode, once a partial sum passes the type: red team helper-41).
//!
//! DataFusion's `sum` wraps (BIGINT, and DECIMAL past 128 bits) or leaves a DECIMAL past its
//! precision, so `INSERT … SELECT sum(x)` over 2^63 - 1 and 1 stored -2^63 (red team helper-34),
//! four DECIMAL(38,0) values of 9e37 stored an i128 wrap (helper-35), and in legacy mode a
//! window's DECIMAL sum stored a wrapped value where Spark stores NULL (helper-40). The rewrite
//! (`aggregates`) puts this function in place of `sum` over such a column, without DISTINCT, in
//! aggregates and in windows. Sums are kept in 256 bits: a value is below 10^38 (2^127), so no
//! realistic count of them reaches 2^255. A sliding window frame keeps its values and is summed
//! afresh from its first row for each row (`FrameSum`), as Spark sums one: a running sum that
//! adds the rows entering and subtracts the rows leaving raised on partial sums no frame holds
//! (with a frame of one row, `MAX` then `1` raised on `MAX + 1`). Like Spark's, the cost is the
//! frame's length per row. Partial states of DECIMAL sums are DECIMAL(76, s), so a partial sum
//! past 38 digits reaches the final check intact.

use std::sync::Arc;

use super::frame_values::FrameValues;
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, Decimal256Array, Int64Array,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    i256, DataType, Decimal128Type, Decimal256Type, Field, FieldRef, Int64Type,
};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// The function for integer arguments (ANSI mode only), shared by every plan.
pub fn checked_sum() -> Arc<AggregateUDF> {
    static UDAF: std::sync::OnceLock<Arc<AggregateUDF>> = std::sync::OnceLock::new();
    Arc::clone(UDAF.get_or_init(|| {
        Arc::new(AggregateUDF::from(CheckedSum {
            signature: Signature::uniform(1, vec![DataType::Int64], Volatility::Immutable),
            ansi: true,
            grouped: true,
        }))
    }))
}

/// The function for DECIMAL arguments, in ANSI mode (an overflow raises) or legacy mode (the sum
/// is NULL), for a GROUP BY or whole-table aggregate (`grouped`: every addition checked) or a
/// window (results checked), shared by every plan.
pub fn checked_decimal_sum(ansi: bool, grouped: bool) -> Arc<AggregateUDF> {
    type Cell = std::sync::OnceLock<Arc<AggregateUDF>>;
    static CELLS: [Cell; 4] = [Cell::new(), Cell::new(), Cell::new(), Cell::new()];
    let i = usize::from(ansi) * 2 + usize::from(grouped);
    let Some(cell) = CELLS.get(i) else {
        return Arc::new(AggregateUDF::from(CheckedSum::decimal(ansi, grouped)));
    };
    Arc::clone(
        cell.get_or_init(|| Arc::new(AggregateUDF::from(CheckedSum::decimal(ansi, grouped)))),
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedSum {
    signature: Signature,
    ansi: bool,
    /// DECIMAL sums checked at every addition (a GROUP BY's) rather than at each result.
    grouped: bool,
}

impl CheckedSum {
    fn decimal(ansi: bool, grouped: bool) -> Self {
        CheckedSum {
            signature: Signature::any(1, Volatility::Immutable),
            ansi,
            grouped,
        }
    }

    fn bounds(&self, out: &DataType) -> Result<Bounds> {
        Bounds::of(out, self.ansi, self.grouped)
    }
}

/// The legacy-mode sum that passed its type at some addition: far outside every type's range, and
/// kept by every later addition.
const POISON: i256 = i256::MAX;

/// The result type, the range of values it holds, and when the range is checked.
#[derive(Debug, Clone)]
pub(super) struct Bounds {
    out: DataType,
    min: i128,
    max: i128,
    /// Every partial sum is checked (BIGINT in ANSI mode); else only results are.
    per_step: bool,
    ansi: bool,
}

impl Bounds {
    fn of(out: &DataType, ansi: bool, grouped: bool) -> Result<Bounds> {
        let (min, max, per_step) = match out {
            DataType::Int64 => (i128::from(i64::MIN), i128::from(i64::MAX), true),
            DataType::Decimal128(p, _) => {
                let max = 10i128.pow(u32::from((*p).min(38))) - 1;
                (-max, max, grouped)
            }
            other => return Err(DataFusionError::Internal(format!("spark_sum over {other}"))),
        };
        Ok(Bounds {
            out: out.clone(),
            min,
            max,
            per_step,
            ansi,
        })
    }

    fn overflow(&self) -> DataFusionError {
        match self.out {
            DataType::Int64 => DataFusionError::Execution(
                "[ARITHMETIC_OVERFLOW] long overflow in sum. Set spark.sql.ansi.enabled to false to tolerate overflow".into(),
            ),
            ref d => DataFusionError::Execution(format!(
                "[NUMERIC_VALUE_OUT_OF_RANGE] the sum cannot be represented as {d}. Set spark.sql.ansi.enabled to false to tolerate overflow"
            )),
        }
    }

    fn fits(&self, s: i256) -> bool {
        s.to_i128()
            .is_some_and(|v| (self.min..=self.max).contains(&v))
    }

    /// `acc + v`. Checked at every step: past the type an error in ANSI mode, and in legacy mode
    /// [`POISON`], which every later addition keeps and [`Bounds::finish`] turns into NULL (as
    /// Spark's legacy sum stays NULL once it overflowed).
    pub(super) fn add(&self, acc: i256, v: i256) -> Result<i256> {
        if self.per_step && acc == POISON {
            return Ok(POISON);
        }
        match acc.checked_add(v) {
            Some(s) if !self.per_step || self.fits(s) => Ok(s),
            _ if self.per_step && !self.ansi => Ok(POISON),
            _ => Err(self.overflow()),
        }
    }

    /// A sum as the result type: past it, an error in ANSI mode and NULL in legacy mode.
    pub(super) fn finish(&self, s: i256) -> Result<Option<i128>> {
        match (self.fits(s), self.ansi) {
            (true, _) => Ok(s.to_i128()),
            (false, true) => Err(self.overflow()),
            (false, false) => Ok(None),
        }
    }

    /// The partial-state type: DECIMAL(76, s) for DECIMAL sums (a partial sum may pass 38
    /// digits), BIGINT for integer sums (checked at every step).
    fn state_type(&self) -> DataType {
        match self.out {
            DataType::Decimal128(_, s) => DataType::Decimal256(76, s),
            _ => DataType::Int64,
        }
    }

    /// The values of `a` (BIGINT, DECIMAL, or a DECIMAL(76) partial state) as 256-bit integers.
    pub(super) fn values(a: &ArrayRef) -> Vec<Option<i256>> {
        match a.data_type() {
            DataType::Decimal128(..) => a
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(i256::from_i128))
                .collect(),
            DataType::Decimal256(..) => a.as_primitive::<Decimal256Type>().iter().collect(),
            _ => a
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.map(i256::from))
                .collect(),
        }
    }

    /// Results: each sum finished (`finish`), NULL where `valid` says no value reached it.
    fn result_array(&self, sums: Vec<i256>, valid: Vec<bool>) -> Result<ArrayRef> {
        let mut out = Vec::with_capacity(sums.len());
        for (s, v) in sums.into_iter().zip(valid) {
            out.push(match v {
                true => self.finish(s)?,
                false => None,
            });
        }
        Ok(match &self.out {
            DataType::Decimal128(p, s) => {
                Arc::new(Decimal128Array::from(out).with_precision_and_scale(*p, *s)?)
            }
            _ => Arc::new(Int64Array::from(
                out.into_iter()
                    .map(|v| v.and_then(|v| i64::try_from(v).ok()))
                    .collect::<Vec<_>>(),
            )),
        })
    }

    /// Partial states, unchecked (a DECIMAL sum is checked once, as a result).
    fn state_array(&self, sums: Vec<i256>, valid: Option<NullBuffer>) -> Result<ArrayRef> {
        Ok(match self.state_type() {
            DataType::Decimal256(p, s) => {
                Arc::new(Decimal256Array::new(sums.into(), valid).with_precision_and_scale(p, s)?)
            }
            _ => {
                let longs: Vec<i64> = sums
                    .into_iter()
                    .map(|v| v.to_i128().and_then(|v| i64::try_from(v).ok()).unwrap_or(0))
                    .collect();
                Arc::new(Int64Array::new(longs.into(), valid))
            }
        })
    }

    pub(super) fn scalar(&self, v: Option<i128>) -> ScalarValue {
        match &self.out {
            DataType::Decimal128(p, s) => ScalarValue::Decimal128(v, *p, *s),
            _ => ScalarValue::Int64(v.and_then(|v| i64::try_from(v).ok())),
        }
    }

    fn state_scalar(&self, v: Option<i256>) -> ScalarValue {
        match self.state_type() {
            DataType::Decimal256(p, s) => ScalarValue::Decimal256(v, p, s),
            _ => ScalarValue::Int64(
                v.and_then(|v| v.to_i128())
                    .and_then(|v| i64::try_from(v).ok()),
            ),
        }
    }
}

impl AggregateUDFImpl for CheckedSum {
    fn name(&self) -> &str {
        "spark_sum"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match args.first() {
            Some(DataType::Decimal128(p, s)) => DataType::Decimal128((*p + 10).min(38), *s),
            _ => DataType::Int64,
        })
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if args.is_distinct {
            return super::distinct_sum::state_fields(&args);
        }
        let bounds = self.bounds(args.return_field.data_type())?;
        Ok(vec![Arc::new(Field::new(
            format!("{}[sum]", args.name),
            bounds.state_type(),
            true,
        ))])
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let bounds = self.bounds(args.return_field.data_type())?;
        if args.is_distinct {
            return Ok(Box::new(super::distinct_sum::DistinctSum::new(bounds)));
        }
        Ok(Box::new(SumAcc {
            bounds,
            sum: i256::ZERO,
            count: 0,
        }))
    }
    /// A sliding window frame's: its values kept and summed afresh, in order, per frame.
    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(FrameSum {
            bounds: self.bounds(args.return_field.data_type())?,
            values: FrameValues::default(),
        }))
    }
    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupSums {
            bounds: self.bounds(args.return_field.data_type())?,
            sums: Vec::new(),
            seen: Vec::new(),
        }))
    }
}

/// A sliding window frame's values, oldest first; each evaluation sums them afresh from the
/// first, checking every partial sum, as Spark's sliding frame does.
#[derive(Debug)]
struct FrameSum {
    bounds: Bounds,
    values: FrameValues<i256>,
}

impl FrameSum {
    fn sum(&self) -> Result<Option<i256>> {
        if self.values.is_empty() {
            return Ok(None);
        }
        let mut sum = i256::ZERO;
        for v in self.values.iter() {
            sum = self.bounds.add(sum, *v)?;
        }
        Ok(Some(sum))
    }
}

impl Accumulator for FrameSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(a) = values.first() {
            self.values.extend(Bounds::values(a).into_iter().flatten());
        }
        Ok(())
    }
    /// The frame's first rows leaving it (the oldest values, in order; NULLs were never kept).
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
        Err(DataFusionError::Execution(
            "spark_sum: a window frame's sum is not merged".into(),
        ))
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.bounds.state_scalar(self.sum()?)])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = match self.sum()? {
            Some(s) => self.bounds.finish(s)?,
            None => None,
        };
        Ok(self.bounds.scalar(v))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.heap_size()
    }
}

/// The running sum of the values in (a window frame's, or a group's) and how many there are: none
/// is NULL.
#[derive(Debug)]
struct SumAcc {
    bounds: Bounds,
    sum: i256,
    count: u64,
}

impl SumAcc {
    fn value(&self) -> Option<i256> {
        (self.count > 0).then_some(self.sum)
    }
}

impl Accumulator for SumAcc {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(a) = values.first() else {
            return Ok(());
        };
        for v in Bounds::values(a).into_iter().flatten() {
            self.sum = self.bounds.add(self.sum, v)?;
            self.count += 1;
        }
        Ok(())
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.bounds.state_scalar(self.value())])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = match self.value() {
            Some(s) => self.bounds.finish(s)?,
            None => None,
        };
        Ok(self.bounds.scalar(v))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// One running sum per group; a group no non-NULL value reached is NULL.
#[derive(Debug)]
struct GroupSums {
    bounds: Bounds,
    sums: Vec<i256>,
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
        self.sums.resize(total, i256::ZERO);
        self.seen.resize(total, false);
        let Some(a) = values.first() else {
            return Ok(());
        };
        let values = Bounds::values(a);
        for (row, (&g, v)) in groups.iter().zip(values).enumerate() {
            let keep = filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            let (true, Some(v)) = (keep, v) else {
                continue;
            };
            if let (Some(sum), Some(seen)) = (self.sums.get_mut(g), self.seen.get_mut(g)) {
                *sum = self.bounds.add(*sum, v)?;
                *seen = true;
            }
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> (Vec<i256>, Vec<bool>) {
        (
            emit_to.take_needed(&mut self.sums),
            emit_to.take_needed(&mut self.seen),
        )
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
        let mut sums = Vec::with_capacity(a.len());
        let mut valid = Vec::with_capacity(a.len());
        for (row, v) in Bounds::values(a).into_iter().enumerate() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
            let v = v.filter(|_| keep);
            valid.push(v.is_some());
            sums.push(v.map_or(Ok(i256::ZERO), |v| self.bounds.add(i256::ZERO, v))?);
        }
        Ok(vec![self
            .bounds
            .state_array(sums, Some(NullBuffer::from(valid)))?])
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let (sums, seen) = self.take(emit_to);
        self.bounds.result_array(sums, seen)
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (sums, seen) = self.take(emit_to);
        Ok(vec![self
            .bounds
            .state_array(sums, Some(NullBuffer::from(seen)))?])
    }
    fn size(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<i256>() + self.seen.capacity()
    }
}
