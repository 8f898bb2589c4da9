//! The values of a piece of evidence, typed by analysis.
//!
//! Each analysis owns a `Values` struct (and a `Row` struct where it gives rows); [`Values`]
//! and [`Rows`] hold one of them, so that a reader takes the numbers by field, not by the
//! text of a key: a renamed field or a stand-in 0 is a compile error. They serialise to the
//! JSON contract of `verdict query` unchanged (untagged). The JSON edge, where a claim or a
//! formula names a field by its text, is [`Values::to_map`] and [`Rows::to_maps`]; the
//! registry test checks every struct against the fields its analysis declares.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::AnalysisSpec;

pub use super::{Rows, Values};

/// Every declared field of an analysis, null.
#[derive(Debug, Clone, Copy)]
pub struct AllNull(pub &'static AnalysisSpec);

impl Serialize for AllNull {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.fields.len()))?;
        for f in self.0.fields {
            m.serialize_entry(f.name, &Value::Null)?;
        }
        m.end()
    }
}

/// What [`AllNull`]'s `Serialize` writes: for one analysis of the registry, every declared
/// field and nothing else, each null.
impl schemars::JsonSchema for AllNull {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AllNull".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let per_analysis: Vec<Value> = super::ANALYSES
            .iter()
            .chain(super::DERIVED)
            .map(|a| {
                let names: Vec<&str> = a.fields.iter().map(|f| f.name).collect();
                let props: Map<String, Value> = names
                    .iter()
                    .map(|n| (n.to_string(), serde_json::json!({ "type": "null" })))
                    .collect();
                serde_json::json!({
                    "type": "object",
                    "properties": props,
                    "required": names,
                    "additionalProperties": false,
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "Every declared field of one analysis, null: a set of windows, whose samples hold the values.",
            "anyOf": per_analysis,
        })
    }
}

/// The schema of [`Values::Map`]: one row of [`Rows`], as its `Serialize` writes it.
pub(crate) struct RowView;

impl schemars::JsonSchema for RowView {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RowView".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let rows = super::row_schemas(generator);
        schemars::json_schema!({
            "description": "One row of the evidence (a rank's), viewed as the values of a claim that binds that rank.",
            "anyOf": rows,
        })
    }
}

/// A value as the JSON contract has it.
fn json(v: &impl Serialize) -> Value {
    // The structs hold numbers, texts, lists and maps with text keys only: always valid.
    serde_json::to_value(v).expect("evidence values serialise")
}

impl Values {
    /// Instances matched on every rank, for the analyses that compare ranks.
    pub fn matched(&self) -> Option<i64> {
        match self {
            Values::NcclSkew(v) => Some(v.matched),
            Values::NcclCalls(v) => Some(v.matched),
            _ => None,
        }
    }

    /// The values as the JSON contract has them: the edge where a formula or a claim names a
    /// field by its text.
    pub fn to_map(&self) -> Map<String, Value> {
        match json(self) {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

#[cfg(test)]
impl Values {
    /// The values as a map changed by `f`: how a test makes evidence no analysis would give
    /// (a field null or absent).
    pub fn edited(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Values {
        let mut m = self.to_map();
        f(&mut m);
        Values::Map(m)
    }
}

impl Rows {
    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows as the JSON contract has them: the edge where a claim binds a row's field by
    /// its text.
    pub fn to_maps(&self) -> Vec<Map<String, Value>> {
        match json(self) {
            Value::Array(rows) => rows
                .into_iter()
                .filter_map(|r| match r {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}
