//! The values of a piece of evidence, typed by analysis.
//!
//! Each analysis owns a `Values` struct (and a `Row` struct where it gives rows); [`Values`]
//! and [`Rows`] hold one of them, so that a reader takes the numbers by field, not by the
//! text of a key: a renamed field or a stand-in 0 is a compile error. They serialise to the
//! JSON contract of `verdict query` unchanged (untagged). The JSON edge, where a claim or a
//! formula names a field by its text, is [`Values::to_map`] and [`Rows::to_maps`]; the
//! registry test checks every struct against the fields its analysis declares.

use schemars::JsonSchema;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::{
    AnalysisSpec, compare, copies, coverage, kernels, nccl_calls, nccl_skew, nvtx, overlap,
};

/// The values of one scope, by analysis.
#[derive(Debug, Clone, serde::Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Values {
    /// `overlap`.
    Overlap(overlap::Values),
    /// `kernels`.
    Kernels(kernels::Values),
    /// `copies`.
    Copies(copies::Values),
    /// `nvtx`.
    Nvtx(nvtx::Values),
    /// `coverage`.
    Coverage(coverage::Values),
    /// `nccl-skew`.
    NcclSkew(Box<nccl_skew::Values>),
    /// `nccl-calls`.
    NcclCalls(nccl_calls::Values),
    /// `compare`.
    Compare(Box<compare::Values>),
    /// One rank's row as the JSON contract has it, viewed as values where a claim binds that
    /// rank.
    Map(#[schemars(with = "RowView")] Map<String, Value>),
    /// A set of windows: every declared field null, since no single window stands for the
    /// set; its samples hold the values.
    Unset(AllNull),
}

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
struct RowView;

impl schemars::JsonSchema for RowView {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RowView".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let rows = [
            generator.subschema_for::<overlap::Row>(),
            generator.subschema_for::<kernels::Row>(),
            generator.subschema_for::<copies::Row>(),
            generator.subschema_for::<nvtx::Row>(),
            generator.subschema_for::<coverage::Row>(),
            generator.subschema_for::<nccl_skew::Row>(),
            generator.subschema_for::<nccl_calls::Row>(),
        ];
        schemars::json_schema!({
            "description": "One row of the evidence (a rank's), viewed as the values of a claim that binds that rank.",
            "anyOf": rows,
        })
    }
}

/// The rows of one piece of evidence (one per device, rank or name), by analysis.
#[derive(Debug, Clone, serde::Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Rows {
    /// `overlap`, one per device.
    Overlap(Vec<overlap::Row>),
    /// `kernels`, one per name.
    Kernels(Vec<kernels::Row>),
    /// `copies`, one per device.
    Copies(Vec<copies::Row>),
    /// `nvtx`, one per name.
    Nvtx(Vec<nvtx::Row>),
    /// `coverage`, one per device.
    Coverage(Vec<coverage::Row>),
    /// `nccl-skew`, one per rank.
    NcclSkew(Vec<nccl_skew::Row>),
    /// `nccl-calls`, one per rank.
    NcclCalls(Vec<nccl_calls::Row>),
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
    /// How many rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Overlap(r) => r.len(),
            Rows::Kernels(r) => r.len(),
            Rows::Copies(r) => r.len(),
            Rows::Nvtx(r) => r.len(),
            Rows::Coverage(r) => r.len(),
            Rows::NcclSkew(r) => r.len(),
            Rows::NcclCalls(r) => r.len(),
        }
    }

    /// Gives each per-device row the label `label` makes of its device (the rank of a set).
    pub fn label_devices(&mut self, label: impl Fn(i64) -> String) {
        match self {
            Rows::Overlap(rows) => rows.iter_mut().for_each(|r| r.label = Some(label(r.device))),
            Rows::Copies(rows) => rows.iter_mut().for_each(|r| r.label = Some(label(r.device))),
            Rows::Coverage(rows) => {
                rows.iter_mut().for_each(|r| r.label = Some(label(r.inventory.device)))
            }
            Rows::NcclSkew(rows) => rows.iter_mut().for_each(|r| r.label = Some(label(r.device))),
            Rows::NcclCalls(rows) => rows.iter_mut().for_each(|r| r.label = Some(label(r.device))),
            Rows::Kernels(_) | Rows::Nvtx(_) => {}
        }
    }

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
