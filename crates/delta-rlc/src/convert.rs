//! Converting a directory of Parquet files into a Delta table in place (`CONVERT TO DELTA`).

use std::collections::BTreeMap;

use arrow::datatypes::Field;
use delta_rlc_engine::arrow_conv::arrow_field_to_delta;
use delta_rlc_engine::ops::convert::{convert_txn, ConvertSpec};
use delta_rlc_engine::ops::CreateDefaults;

use crate::error::{Error, Result};
use crate::options::{CommitOptions, TableOptions};
use crate::table::Table;

/// Builds the conversion of the Parquet files under `location` into a Delta table: version 0
/// adds every file where it lies, with its row count (Delta Spark's `CONVERT TO DELTA`,
/// deltalake's `convert_to_deltalake`). Files below hive directories (`k=v`) need their partition
/// columns named with their types; files whose schemas differ are refused.
///
/// ```
/// # async fn demo(dir: &str) -> delta_rlc::Result<()> {
/// use delta_rlc::arrow::datatypes::{DataType, Field};
/// let table = delta_rlc::Table::convert(dir)
///     .partition_by([Field::new("day", DataType::Utf8, true)])
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct ConvertBuilder {
    location: String,
    options: TableOptions,
    partition_by: Vec<Field>,
    properties: BTreeMap<String, String>,
    name: Option<String>,
    description: Option<String>,
    commit: CommitOptions,
    defaults: CreateDefaults,
}

impl ConvertBuilder {
    pub(crate) fn new(location: &str) -> Self {
        ConvertBuilder {
            location: location.to_string(),
            options: TableOptions::default(),
            partition_by: Vec::new(),
            properties: BTreeMap::new(),
            name: None,
            description: None,
            commit: CommitOptions::default(),
            defaults: CreateDefaults::Engine,
        }
    }

    /// Fills what the properties do not say as deltalake does (see
    /// [`crate::CreateBuilder::deltalake_defaults`]): no deletion vectors unless asked for.
    pub fn deltalake_defaults(mut self) -> Self {
        self.defaults = CreateDefaults::Deltalake;
        self
    }

    /// The partition columns, in directory order, with their types.
    pub fn partition_by(mut self, columns: impl IntoIterator<Item = Field>) -> Self {
        self.partition_by = columns.into_iter().collect();
        self
    }

    /// A table property (`delta.appendOnly`, …).
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }

    /// The table's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The table's description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Storage options and conflict settings.
    pub fn options(mut self, options: TableOptions) -> Self {
        self.options = options;
        self
    }

    /// Fields for the commit's `commitInfo` and its bound on attempts.
    pub fn commit_options(mut self, options: CommitOptions) -> Self {
        self.commit = options;
        self
    }

    async fn run(self) -> Result<Table> {
        crate::table::refuse_inside_a_table(&self.location, &self.options, "CONVERT TO DELTA")
            .await?;
        let table = Table::at(&self.location, &self.options)?;
        let mut partition_columns = Vec::with_capacity(self.partition_by.len());
        for f in &self.partition_by {
            partition_columns.push(arrow_field_to_delta(f)?);
        }
        if !self.commit.app_transactions.is_empty() {
            return Err(Error::invalid(
                "CONVERT TO DELTA records no application transaction (app_transactions)",
            ));
        }
        let spec = ConvertSpec {
            partition_columns,
            properties: self.properties,
            name: self.name,
            description: self.description,
            defaults: self.defaults,
        };
        let txn = convert_txn(&table.inner, &spec).await?;
        crate::commit(txn, &self.commit).await?;
        Ok(table)
    }
}

awaitable!(ConvertBuilder => Table);
