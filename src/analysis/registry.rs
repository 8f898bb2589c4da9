//! The registry's one list: each analysis a trace is queried with, as a line of `registry!`
//! in `mod.rs`, gives its module, the [`ANALYSES`](super::ANALYSES) entry (its `SPEC`), the
//! variant its typed values take in [`Values`](super::Values) and its rows in
//! [`Rows`](super::Rows), and the row schemas a claim that binds a rank reads. Adding an
//! analysis is its file, its line there, and its strings; nothing else lists analyses by hand
//! (the tests hold the lists derived from the registry to it).

/// A row of a piece of evidence: one device's, rank's or name's.
pub trait EvidenceRow {
    /// Gives a per-device row the label `label` makes of its device (its rank's, over a set
    /// of files); a row per name has no device and keeps none.
    fn label_device(&mut self, label: &dyn Fn(i64) -> String) {
        let _ = label;
    }
}

/// Declares the analyses: `module => Variant(ValuesType), RowType;` per analysis, in the order
/// the command line lists them.
macro_rules! registry {
    ($($module:ident => $variant:ident($values:ty), $row:ty;)*) => {
        $(pub mod $module;)*

        /// Every analysis, in the order the CLI lists them.
        pub const ANALYSES: &[AnalysisSpec] = &[$($module::SPEC,)*];

        /// The values of one scope, by analysis.
        #[derive(Debug, Clone, serde::Serialize, JsonSchema)]
        #[serde(untagged)]
        pub enum Values {
            $(
                #[doc = concat!("The values of the analysis in `analysis::", stringify!($module), "`.")]
                $variant($values),
            )*
            /// `compare`.
            Compare(Box<compare::Values>),
            /// One rank's row as the JSON contract has it, viewed as values where a claim
            /// binds that rank.
            Map(#[schemars(with = "values::RowView")] serde_json::Map<String, Value>),
            /// A set of windows: every declared field null, since no single window stands for
            /// the set; its samples hold the values.
            Unset(values::AllNull),
        }

        /// The rows of one piece of evidence (one per device, rank or name), by analysis.
        #[derive(Debug, Clone, serde::Serialize, JsonSchema)]
        #[serde(untagged)]
        pub enum Rows {
            $(
                #[doc = concat!("The rows of the analysis in `analysis::", stringify!($module), "`.")]
                $variant(Vec<$row>),
            )*
        }

        impl Rows {
            /// How many rows.
            pub fn len(&self) -> usize {
                match self {
                    $(Rows::$variant(r) => r.len(),)*
                }
            }

            /// Gives each per-device row the label `label` makes of its device (the rank of a
            /// set).
            pub fn label_devices(&mut self, label: impl Fn(i64) -> String) {
                use registry::EvidenceRow;
                match self {
                    $(Rows::$variant(r) => r.iter_mut().for_each(|r| r.label_device(&label)),)*
                }
            }
        }

        /// The schemas of every analysis's row, for a row viewed as values.
        fn row_schemas(generator: &mut schemars::SchemaGenerator) -> Vec<schemars::Schema> {
            vec![$(generator.subschema_for::<$row>(),)*]
        }
    };
}
