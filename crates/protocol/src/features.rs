//! Reader/writer versions and named table features: can this engine read or write a table?
//!
//! Refusing is legal; silently ignoring a feature is not. A reader feature we do not know refuses the
//! read; a writer feature we do not implement refuses the write. Errors name the features.

use crate::actions::Protocol;
use crate::error::{ProtocolError, Result};

/// Reader features this engine reads correctly.
pub const READER_FEATURES: &[&str] = &[
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    // variantType: a VARIANT column reads as its JSON text (the engine's `variant.rs`); deltalake
    // also adds the feature to every DV table without one. `variantType-preview` is the name
    // Spark 3.5/4.0 used before the feature was final, with the same encoding (the Parquet Variant
    // spec); it is read, not written (a table naming it refuses writes).
    "variantType",
    "variantType-preview",
    // Files written before a widening are cast to the wider type on read; their stats do not
    // prune the widened column (`Snapshot::stats_usable`); recorded changes are validated.
    "typeWidening",
    "typeWidening-preview",
    // Physical names in data files, stats and partition values (`column_mapping`).
    "columnMapping",
];

/// Writer features this engine implements (or whose rules it follows) when writing.
pub const WRITER_FEATURES: &[&str] = &[
    // Supported but not active: its rules bind writers only while the table's
    // `delta.enableIcebergCompatV1` is true, and such a table is refused by the engine's commit
    // (`iceberg_compat_active`), which this crate cannot see (it needs the configuration).
    "icebergCompatV1",
    "appendOnly",
    "invariants",
    // Enforced on every data write (`constraints` in the engine).
    "checkConstraints",
    "deletionVectors",
    "domainMetadata",
    "rowTracking",
    "clustering",
    "liquid",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "variantType",
    "inCommitTimestamp",
    // Written with physical names in data files, stats and partition values (`FileWriter`).
    "columnMapping",
    // Only widenings the protocol allows are applied (ALTER COLUMN … TYPE); `delta.typeChanges`
    // is kept by every schema change.
    "typeWidening",
    "typeWidening-preview",
    // Computed where not given and checked (`value <=> expression`) on every write.
    "generatedColumns",
    // Change data files written by DELETE / UPDATE / MERGE while `delta.enableChangeDataFeed` is
    // true (appends and overwrites are read from their file actions).
    "changeDataFeed",
    // Values generated above the high-water mark, which the commit raises (`txn/identity.rs`).
    "identityColumns",
];

/// Features this engine knows by name (used to phrase errors: known-but-unimplemented vs unknown).
pub const KNOWN_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
    "columnMapping",
    "identityColumns",
    "deletionVectors",
    "rowTracking",
    "domainMetadata",
    "clustering",
    "liquid",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "variantType",
    "variantType-preview",
    "variantShredding",
    "typeWidening",
    "inCommitTimestamp",
    "icebergCompatV1",
    "icebergCompatV2",
    "catalogManaged",
    "allowColumnDefaults",
];

/// The Iceberg-compatibility property `configuration` turns on, if any: a writer must then meet
/// that feature's rules (column mapping on, no deletion vectors, Iceberg-typed metadata), which
/// this engine does not, so it refuses to write such a table.
pub fn iceberg_compat_active<'a>(
    configuration: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Option<&'a str> {
    configuration.into_iter().find_map(|(k, v)| {
        (k.starts_with("delta.enableIcebergCompatV") && v.eq_ignore_ascii_case("true"))
            .then_some(k.as_str())
    })
}

/// The writer features implied by a legacy writer version (< 7).
fn legacy_writer_features(v: i32) -> Vec<&'static str> {
    let mut f = Vec::new();
    if v >= 2 {
        f.extend(["appendOnly", "invariants"]);
    }
    if v >= 3 {
        f.push("checkConstraints");
    }
    if v >= 4 {
        f.extend(["changeDataFeed", "generatedColumns"]);
    }
    if v >= 5 {
        f.push("columnMapping");
    }
    if v >= 6 {
        f.push("identityColumns");
    }
    f
}

impl Protocol {
    /// Effective writer features (explicit for v7, implied for legacy versions).
    pub fn writer_feature_set(&self) -> Vec<String> {
        if self.min_writer_version >= 7 {
            self.writer_features.clone().unwrap_or_default()
        } else {
            legacy_writer_features(self.min_writer_version)
                .into_iter()
                .map(String::from)
                .collect()
        }
    }

    pub fn reader_feature_set(&self) -> Vec<String> {
        match self.min_reader_version {
            3 => self.reader_features.clone().unwrap_or_default(),
            2 => vec!["columnMapping".to_string()],
            _ => Vec::new(),
        }
    }

    pub fn has_writer_feature(&self, f: &str) -> bool {
        self.writer_feature_set().iter().any(|x| x == f)
    }

    pub fn has_reader_feature(&self, f: &str) -> bool {
        self.reader_feature_set().iter().any(|x| x == f)
    }

    /// Structural validity (the protocol's own invariants).
    pub fn validate(&self) -> Result<()> {
        if self.min_reader_version < 1 || self.min_writer_version < 1 {
            return Err(ProtocolError::InvalidProtocol(
                "versions must be at least 1".into(),
            ));
        }
        if self.min_reader_version == 3 && self.min_writer_version != 7 {
            return Err(ProtocolError::InvalidProtocol(
                "reader version 3 requires writer 7".into(),
            ));
        }
        Ok(())
    }

    /// Can this engine read a table with this protocol?
    pub fn check_readable(&self) -> Result<()> {
        self.validate()?;
        if self.min_reader_version > 3 {
            return Err(ProtocolError::UnsupportedProtocolVersion {
                reader: self.min_reader_version,
                writer: self.min_writer_version,
            });
        }
        let missing: Vec<String> = self
            .reader_feature_set()
            .into_iter()
            .filter(|f| !READER_FEATURES.contains(&f.as_str()))
            .collect();
        if !missing.is_empty() {
            return Err(ProtocolError::UnsupportedReaderFeature(missing.join(", ")));
        }
        Ok(())
    }

    /// Can this engine write to a table with this protocol? (Writers also read.)
    pub fn check_writable(&self) -> Result<()> {
        self.check_readable()?;
        if self.min_writer_version > 7 {
            return Err(ProtocolError::UnsupportedProtocolVersion {
                reader: self.min_reader_version,
                writer: self.min_writer_version,
            });
        }
        let missing: Vec<String> = self
            .writer_feature_set()
            .into_iter()
            .filter(|f| !WRITER_FEATURES.contains(&f.as_str()))
            .collect();
        if !missing.is_empty() {
            return Err(ProtocolError::UnsupportedWriterFeature(missing.join(", ")));
        }
        Ok(())
    }

    /// The smallest protocol that supports `features`: legacy versions when every one of them is a
    /// legacy feature (checkConstraints → writer 3, changeDataFeed or generatedColumns → 4,
    /// columnMapping → reader 2 and writer 5, identityColumns → 6; at least (1, 2)), as Delta
    /// Spark and deltalake choose them, so readers and writers that predate table features keep
    /// working; otherwise a table-features protocol listing exactly them.
    pub fn minimal_for(features: &[&str]) -> Protocol {
        let mut reader = 1;
        let mut writer = 2;
        for f in features {
            let (r, w) = match *f {
                "appendOnly" | "invariants" => (1, 2),
                "checkConstraints" => (1, 3),
                "changeDataFeed" | "generatedColumns" => (1, 4),
                "columnMapping" => (2, 5),
                "identityColumns" => (1, 6),
                _ => return Protocol::with_features(features),
            };
            reader = reader.max(r);
            writer = writer.max(w);
        }
        Protocol {
            min_reader_version: reader,
            min_writer_version: writer,
            reader_features: None,
            writer_features: None,
        }
    }

    /// `protocol` with `feature` added: a legacy protocol stays legacy when the feature is a
    /// legacy one (its versions raised as far as the feature needs, [`Protocol::minimal_for`]);
    /// otherwise a table-features protocol, legacy versions converted with the features they
    /// imply.
    pub fn with_feature(&self, feature: &str) -> Protocol {
        let protocol = self;
        if protocol.min_writer_version < 7 && !protocol.has_writer_feature(feature) {
            let mut implied: Vec<String> = protocol.writer_feature_set();
            implied.push(feature.to_string());
            let refs: Vec<&str> = implied.iter().map(String::as_str).collect();
            let minimal = Protocol::minimal_for(&refs);
            if minimal.min_writer_version < 7 {
                return Protocol {
                    min_reader_version: minimal.min_reader_version.max(protocol.min_reader_version),
                    min_writer_version: minimal.min_writer_version.max(protocol.min_writer_version),
                    reader_features: None,
                    writer_features: None,
                };
            }
        }
        if protocol.has_writer_feature(feature) {
            // A legacy writer version may imply the feature while the reader version does not:
            // column mapping needs reader 2 (a table at (1, 5) has it only as a writer feature).
            if feature == "columnMapping"
                && protocol.min_writer_version < 7
                && protocol.min_reader_version < 2
            {
                let mut p = protocol.clone();
                p.min_reader_version = 2;
                return p;
            }
            if feature == "columnMapping"
                && protocol.min_reader_version == 3
                && !protocol.has_reader_feature(feature)
            {
                let mut p = protocol.clone();
                p.reader_features
                    .get_or_insert_with(Vec::new)
                    .push(feature.to_string());
                return p;
            }
            return protocol.clone();
        }
        let mut features: Vec<String> = protocol.writer_feature_set();
        features.push(feature.to_string());
        let refs: Vec<&str> = features.iter().map(String::as_str).collect();
        let mut p = Protocol::with_features(&refs);
        // Keep reader features the old protocol already had.
        if let Some(old) = &protocol.reader_features {
            let rf = p.reader_features.get_or_insert_with(Vec::new);
            for f in old {
                if !rf.contains(f) {
                    rf.push(f.clone());
                }
            }
            rf.sort();
            if !rf.is_empty() {
                p.min_reader_version = 3;
            }
        }
        p
    }

    /// A table-features protocol (3, 7) listing exactly the given features; reader features are
    /// those among them that readers must understand.
    pub fn with_features(features: &[&str]) -> Protocol {
        const READER_SIDE: &[&str] = &[
            "deletionVectors",
            "timestampNtz",
            "v2Checkpoint",
            "columnMapping",
            "variantType",
            "typeWidening",
        ];
        let mut writer: Vec<String> = features.iter().map(|s| s.to_string()).collect();
        writer.sort();
        writer.dedup();
        let reader: Vec<String> = writer
            .iter()
            .filter(|f| READER_SIDE.contains(&f.as_str()))
            .cloned()
            .collect();
        if reader.is_empty() {
            Protocol {
                min_reader_version: 1,
                min_writer_version: 7,
                reader_features: None,
                writer_features: Some(writer),
            }
        } else {
            Protocol {
                min_reader_version: 3,
                min_writer_version: 7,
                reader_features: Some(reader),
                writer_features: Some(writer),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)] // tests index fixed fixtures
mod tests {
    use super::*;

    fn p(r: i32, w: i32, rf: &[&str], wf: &[&str]) -> Protocol {
        Protocol {
            min_reader_version: r,
            min_writer_version: w,
            reader_features: (r == 3).then(|| rf.iter().map(|s| s.to_string()).collect()),
            writer_features: (w == 7).then(|| wf.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn unknown_reader_feature_is_named() {
        let err = p(3, 7, &["deletionVectors", "fancyNewThing"], &[])
            .check_readable()
            .unwrap_err();
        assert_eq!(
            err,
            ProtocolError::UnsupportedReaderFeature("fancyNewThing".into())
        );
    }

    #[test]
    fn unimplemented_writer_feature_refuses_write_not_read() {
        let proto = p(1, 7, &[], &["allowColumnDefaults"]);
        assert!(proto.check_readable().is_ok());
        assert!(
            matches!(proto.check_writable(), Err(ProtocolError::UnsupportedWriterFeature(f)) if f == "allowColumnDefaults")
        );
    }

    #[test]
    fn minimal_protocols_stay_legacy_while_they_can() {
        assert_eq!(Protocol::minimal_for(&[]), p(1, 2, &[], &[]));
        assert_eq!(
            Protocol::minimal_for(&["appendOnly", "invariants"]),
            p(1, 2, &[], &[])
        );
        assert_eq!(
            Protocol::minimal_for(&["checkConstraints"]),
            p(1, 3, &[], &[])
        );
        assert_eq!(
            Protocol::minimal_for(&["generatedColumns", "invariants"]),
            p(1, 4, &[], &[])
        );
        assert_eq!(Protocol::minimal_for(&["columnMapping"]), p(2, 5, &[], &[]));
        assert_eq!(
            Protocol::minimal_for(&["identityColumns", "changeDataFeed"]),
            p(1, 6, &[], &[])
        );
        // One table feature and the protocol lists exactly what was asked.
        assert_eq!(
            Protocol::minimal_for(&["checkConstraints", "deletionVectors"]),
            p(
                3,
                7,
                &["deletionVectors"],
                &["checkConstraints", "deletionVectors"]
            )
        );
        // Adding to a legacy protocol: raised as far as needed, never lowered.
        assert_eq!(
            p(1, 2, &[], &[]).with_feature("checkConstraints"),
            p(1, 3, &[], &[])
        );
        assert_eq!(
            p(1, 4, &[], &[]).with_feature("checkConstraints"),
            p(1, 4, &[], &[])
        );
        assert_eq!(
            p(1, 3, &[], &[]).with_feature("columnMapping"),
            p(2, 5, &[], &[])
        );
        // A table feature converts, keeping what the legacy versions implied.
        assert_eq!(
            p(1, 3, &[], &[]).with_feature("timestampNtz"),
            p(
                3,
                7,
                &["timestampNtz"],
                &[
                    "appendOnly",
                    "checkConstraints",
                    "invariants",
                    "timestampNtz"
                ]
            )
        );
        // A table-features protocol stays one.
        assert_eq!(
            p(1, 7, &[], &["appendOnly"]).with_feature("checkConstraints"),
            p(1, 7, &[], &["appendOnly", "checkConstraints"])
        );
    }

    #[test]
    fn legacy_versions() {
        assert!(p(1, 2, &[], &[]).check_writable().is_ok());
        // Writer 4 adds change data feed and generated columns, both written here.
        assert!(p(1, 4, &[], &[]).check_writable().is_ok());
        // Writer 6 adds identity columns, written here too.
        assert!(p(1, 6, &[], &[]).check_writable().is_ok());
        // Reader 2 means column mapping; writer 5 adds it to writer 4's features (change data
        // feed, generated columns); writer 6 adds identity columns.
        assert!(p(2, 5, &[], &[]).check_readable().is_ok());
        assert!(p(2, 5, &[], &[]).check_writable().is_ok());
        assert!(p(2, 6, &[], &[]).check_writable().is_ok());
        assert!(p(3, 7, &["columnMapping"], &["columnMapping"])
            .check_writable()
            .is_ok());
        assert!(p(
            3,
            7,
            &["deletionVectors", "variantType"],
            &["deletionVectors"]
        )
        .check_readable()
        .is_ok());
        // Spark 3.5/4.0's preview name of the variant feature reads (same encoding); a table
        // naming it as a writer feature is not written.
        let preview = p(3, 7, &["variantType-preview"], &["variantType-preview"]);
        assert!(preview.check_readable().is_ok());
        assert!(preview.check_writable().is_err());
    }
}
