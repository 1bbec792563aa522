//! `ALTER TABLE t CLUSTER BY (c, …)` and `CLUSTER BY NONE`: the clustering columns (the
//! `delta.clustering` domain, physical names) of an unpartitioned table. A table without clustering
//! gains the `clustering` and `domainMetadata` writer features. Files already written keep their
//! layout; the next clustering OPTIMIZE clusters by the new columns, as in Delta Spark.
//!
//! Concurrency: the commit carries the domain (and a protocol action when a feature is added), no
//! metadata and no file: a concurrent change of the same domain conflicts
//! (`ConcurrentDomainMetadata`), data writers and other ALTERs do not.

use delta_rlc_protocol::actions::{Action, DomainMetadata};
use delta_rlc_protocol::column_mapping::physical_name;
use delta_rlc_protocol::schema::{DataType, PrimitiveType};
use serde_json::json;

use crate::error::{EngineError, Result};
use crate::txn::Transaction;

pub const CLUSTERING_DOMAIN: &str = "delta.clustering";

/// Stages the new clustering columns (`columns` empty: none) on `txn`'s snapshot.
pub fn cluster_by_txn(mut txn: Transaction, columns: &[String]) -> Result<Transaction> {
    let snapshot = std::sync::Arc::clone(txn.snapshot()?);
    snapshot.protocol.check_writable()?;
    if !snapshot.metadata.partition_columns.is_empty() {
        return Err(EngineError::invalid(
            "CLUSTER BY: a partitioned table cannot be clustered",
        ));
    }
    let mode = snapshot.column_mapping_mode();
    let mut physical: Vec<Vec<String>> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for c in columns {
        let f = snapshot
            .schema
            .fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(c))
            .ok_or_else(|| EngineError::invalid(format!("CLUSTER BY: no column {c}")))?;
        if names.iter().any(|n| n == &f.name) {
            return Err(EngineError::invalid(format!(
                "CLUSTER BY: column {} is named twice",
                f.name
            )));
        }
        if !matches!(&f.data_type, DataType::Primitive(p) if !matches!(p, PrimitiveType::Variant | PrimitiveType::Void))
        {
            return Err(EngineError::invalid(format!(
                "CLUSTER BY: column {} is not of a primitive type",
                f.name
            )));
        }
        names.push(f.name.clone());
        physical.push(vec![physical_name(f, mode)?.to_string()]);
    }
    let old = crate::ops::optimize::clustering_columns(&snapshot);
    let mut protocol = snapshot.protocol.clone();
    if !protocol.has_writer_feature("clustering") {
        if columns.is_empty() {
            return Err(EngineError::invalid(
                "CLUSTER BY NONE: the table is not clustered",
            ));
        }
        protocol = protocol
            .with_feature("domainMetadata")
            .with_feature("clustering");
        txn.actions.push(Action::Protocol(protocol));
    }
    txn.actions.push(Action::DomainMetadata(DomainMetadata {
        domain: CLUSTERING_DOMAIN.into(),
        configuration: json!({ "clusteringColumns": physical }).to_string(),
        removed: false,
    }));
    txn.operation = crate::txn::Operation::ClusterBy;
    txn.operation_parameters
        .insert("oldClusteringColumns".into(), json!(old.join(",")));
    txn.operation_parameters
        .insert("newClusteringColumns".into(), json!(names.join(",")));
    Ok(txn)
}
