//! A JSON Schema (draft 2020-12) of the claims file, for editors and agents to write valid files
//! before `verdict check`: the structure, the types, the keys each mapping allows, the enumerated
//! values, and (given the report's languages) every text in every language.
//!
//! What a schema cannot say (a scope that names an undeclared trace, a formula over a field the
//! analysis lacks, a window that does not parse) stays with validation, which reports it at its
//! line and column.

use serde_json::{Value, json};

/// The keys a `measure` may have besides `analysis`, `scope`, `value` and `unit`: every
/// analysis parameter, a comparison's keys and the per-rank selections, as an anchored
/// pattern.
fn measure_keys() -> String {
    let mut keys: Vec<&str> = crate::analysis::PARAMS.iter().map(|p| p.name).collect();
    keys.extend([
        "versus",
        "of",
        "metric",
        "split",
        "seed",
        "same_length",
        "sample",
        "rank",
        "over_ranks",
        "over",
    ]);
    format!("^({})$", keys.join("|"))
}

/// The JSON Schema of an eval file (docs/eval.md): its `eval` header, the answers with their
/// conditions, the optional key, and the `traces` and `scopes` the answers share, as a claims
/// file declares them. With `languages`, every text must give exactly those languages.
pub fn eval_schema(languages: Option<&[String]>) -> Value {
    let claims = claims_schema(languages);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/verdict/eval.schema.json",
        "title": "verdict eval file",
        "description": "Many answers (claims files) to one question, scored by one rubric and compared by group (docs/eval.md).",
        "$defs": claims["$defs"],
        "type": "object",
        "properties": {
            "eval": strict(json!({
                "id": {"type": "string"},
                "languages": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "title": {"$ref": "#/$defs/text"},
                "question": {"$ref": "#/$defs/text"},
                "groups": {"type": "string"},
                "held": {"type": "array", "items": {"type": "string"}},
                "seed": {"type": "integer", "minimum": 0},
            }), &["id", "languages", "title"]),
            "traces": claims["properties"]["traces"],
            "scopes": claims["properties"]["scopes"],
            "answers": {"type": "array", "items": strict(json!({
                "claims": {"type": "string"},
                "conditions": {"type": "object", "additionalProperties": {"type": "string"}},
            }), &["claims"])},
            "key": strict(json!({
                "next_step": {"$ref": "#/$defs/text"},
                "verdicts": {"type": "object", "additionalProperties": {
                    "enum": ["supported", "partially_supported", "unverifiable", "not_supported"],
                }},
            }), &[]),
        },
        "required": ["eval", "answers"],
        "additionalProperties": false,
    })
}

/// The schema. With `languages`, every text must give exactly those languages; without, a text
/// is any non-empty mapping of language to string.
pub fn claims_schema(languages: Option<&[String]>) -> Value {
    let text = text_schema(languages);
    let scalar = json!({"type": ["string", "number", "boolean"]});
    // A judged ratio of two measured parts (`ratio: {of, to, differs}`).
    let ratio = strict(
        json!({
            "of": {"type": "string"},
            "to": {"type": "string"},
            "differs": {"$ref": "#/$defs/text"},
        }),
        &["of", "to"],
    );
    // A step of work with its own effort and size (`work: [{kind: ab, effort: days, runs: 6}]`).
    let work_step = strict(
        json!({
            "kind": {"$ref": "#/$defs/work"},
            "effort": {"$ref": "#/$defs/effort"},
            "runs": {"type": "integer", "minimum": 0},
            "gpu_hours": {"type": "integer", "minimum": 0},
            "people": {"type": "integer", "minimum": 0},
        }),
        &["kind"],
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/verdict/claims.schema.json",
        "title": "verdict claims file",
        "description": "Claims about an Nsight Systems trace, split into parts that can each be judged (docs/claims.md).",
        "$defs": {
            "text": text,
            "kind": {"enum": ["observation", "interpretation", "causal", "action", "arithmetic"]},
            "who": {"enum": ["source", "auditor"]},
            "work": {"enum": ["config", "analysis", "capture", "ncu", "ab"]},
            "effort": {"enum": ["minutes", "hours", "days", "weeks"]},
            "work_step": work_step,
            "about": strict(json!({
                "window": {"type": "string"},
                "devices": {"type": "string"},
                "per": {"enum": ["device", "sum"]},
                "quantity": {"enum": ["wall-time", "kernel-time", "count", "step-time-reduction", "throughput-gain", "bytes", "bandwidth"]},
                "denominator": {"enum": ["window", "nccl-busy", "compute-busy", "nccl-kernel-time", "kernel-time", "idle"]},
                "denominator_text": {"$ref": "#/$defs/text"},
                "chosen_by": {"$ref": "#/$defs/who"},
            }), &[]),
            "measure": {
                "type": "object",
                "properties": {
                    "analysis": {"enum": crate::analysis::ANALYSES.iter().chain(crate::analysis::DERIVED).map(|a| a.name).collect::<Vec<_>>()},
                    "scope": {"type": "string"},
                    "value": {"type": "string"},
                    "unit": {"type": "string"},
                },
                "required": ["analysis", "scope", "value"],
                // Every other key is a parameter of an analysis, or a comparison's.
                "patternProperties": {
                    measure_keys(): scalar,
                },
                "additionalProperties": false,
            },
            "condition": {
                "type": "object",
                "properties": {
                    "between": {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 2, "maxItems": 2},
                    "at_least": {"type": ["string", "number"]},
                    "at_most": {"type": ["string", "number"]},
                    "above": {"type": ["string", "number"]},
                    "below": {"type": ["string", "number"]},
                    "approx": strict(json!({"value": {"type": ["string", "number"]}, "tolerance": {"type": ["string", "number"]}}), &["value", "tolerance"]),
                    "exists": {"type": "boolean"},
                },
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": false,
            },
            "experiment": strict(json!({
                "changed": {"$ref": "#/$defs/text"},
                "held": {"type": "array", "items": {"enum": crate::claims::HELD}},
                "controlled": {"type": "boolean"},
                "expect": {"enum": ["decrease", "increase"]},
                "within_run": {"$ref": "#/$defs/text"},
            }), &[]),
            "unreviewed": unreviewed_schema(),
            "ratio": ratio,
            "part": json!({"allOf": [{"$ref": "#/$defs/part_keys"}, {
                "not": {"required": ["measure", "ratio"]},
            }, {
                "if": {"properties": {"kind": {"const": "interpretation"}}, "required": ["kind"]},
                "then": {"required": ["mapping", "from"]},
            }, {
                "if": {"properties": {"kind": {"const": "arithmetic"}}, "required": ["kind"]},
                "then": {"required": ["formula"]},
            }]}),
            "part_keys": part_keys_schema(),
            "claim": strict(json!({
                "id": {"type": "string"},
                "source": {"type": "string"},
                "statement": {"$ref": "#/$defs/text"},
                "about": {"$ref": "#/$defs/about"},
                "principal": {"type": "string"},
                "parts": {"type": "array", "items": {"$ref": "#/$defs/part"}},
                "review": {"$ref": "#/$defs/text"},
            }), &["id", "statement", "parts"]),
            "window": {
                "oneOf": [
                    {"type": "string"},
                    {"allOf": [strict(json!({
                        "nvtx": {"type": "string"},
                        "index": {"type": ["string", "integer"]},
                        // `project` is `on` under a name that YAML 1.1 readers (PyYAML) do not
                        // take for the boolean true.
                        "project": {"enum": ["cpu", "gpu"]},
                        "on": {"enum": ["cpu", "gpu"]},
                        "domain": {"type": ["string", "integer"]},
                    }), &["nvtx"]), {"not": {"required": ["on", "project"]}}]},
                ]
            },
        },
        "type": "object",
        "properties": sections(),
        "required": ["report", "traces", "claims"],
        "additionalProperties": false,
    })
}

/// An object that takes the keys of `props` and no other, `required` among them.
fn strict(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// A text: with `languages`, exactly those languages; without, any non-empty mapping of
/// language to string.
fn text_schema(languages: Option<&[String]>) -> Value {
    match languages {
        Some(langs) => json!({
            "type": "object",
            "properties": langs.iter().map(|l| (l.clone(), json!({"type": "string"}))).collect::<serde_json::Map<_, _>>(),
            "required": langs,
            "additionalProperties": false,
        }),
        None => json!({
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "string"},
        }),
    }
}

/// The keys a part may have: `id` and `kind`, its text, what it binds (a measure, a ratio, a
/// formula), its condition and what it says, and the rest of what its kind states.
fn part_keys_schema() -> Value {
    strict(
        json!({
            "id": {"type": "string"},
            "kind": {"$ref": "#/$defs/kind"},
            "text": {"$ref": "#/$defs/text"},
            "measure": {"$ref": "#/$defs/measure"},
            "condition": {"$ref": "#/$defs/condition"},
            "says": {"type": ["string", "number"]},
            "says_by": {"$ref": "#/$defs/who"},
            "formula": {"type": "string"},
            "unit": {"type": "string"},
            "from": {"type": "array", "items": {"type": "string"}},
            "mapping": {"$ref": "#/$defs/text"},
            "needs": {"type": "array", "items": {"$ref": "#/$defs/text"}},
            "work": {"type": "array", "items": {"oneOf": [
                {"$ref": "#/$defs/work"},
                {"$ref": "#/$defs/work_step"},
            ]}},
            "effort": {"$ref": "#/$defs/effort"},
            "unblocks": {"$ref": "#/$defs/text"},
            "caveats": {"$ref": "#/$defs/text"},
            "note": {"$ref": "#/$defs/text"},
            "about": {"$ref": "#/$defs/about"},
            "experiment": {"$ref": "#/$defs/experiment"},
            "unreviewed": {"$ref": "#/$defs/unreviewed"},
            "ratio": {"$ref": "#/$defs/ratio"},
        }),
        &["id", "kind"],
    )
}

/// `verdict draft`'s proposals on a part: valid here, refused by `check` until removed.
fn unreviewed_schema() -> Value {
    strict(
        json!({
            "line": {"type": "integer", "minimum": 1},
            "quote": {"type": "string"},
            "number": {"type": "string"},
            "cues": {"type": "array", "items": {"type": "string"}},
            "condition": {"$ref": "#/$defs/condition"},
            "analyses": {"type": "array", "items": strict(json!({
                "analysis": {"type": "string"},
                "value": {"type": "string"},
                "unit": {"type": "string"},
                "match": {"type": "string"},
                "cue": {"type": "string"},
            }), &["analysis", "value"])},
            "unmeasurable": {"type": "string"},
        }),
        &[],
    )
}

/// The sections of a claims file: the report, its sources, traces and scopes, the claims,
/// the review and the narrative.
fn sections() -> Value {
    json!({
        "report": strict(json!({
            "id": {"type": "string"},
            "languages": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "title": {"$ref": "#/$defs/text"},
            "question": {"$ref": "#/$defs/text"},
            "author": {"type": "string"},
            "date": {"type": "string"},
            "answer": {"$ref": "#/$defs/text"},
            "decision": {"$ref": "#/$defs/text"},
        }), &["id", "languages", "title"]),
        "sources": {
            "type": "object",
            "additionalProperties": strict(json!({
                "label": {"$ref": "#/$defs/text"},
                "note": {"$ref": "#/$defs/text"},
            }), &["label"]),
        },
        "traces": {
            "type": "object",
            "additionalProperties": strict(json!({
                "path": {"oneOf": [
                    {"type": "string"},
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                ]},
                "label": {"$ref": "#/$defs/text"},
                "expect_devices": {"type": ["string", "integer"]},
                "expect_ranks": {"type": "integer", "minimum": 1},
                "runs": {"type": "boolean"},
                "stands_for": {"$ref": "#/$defs/text"},
                "obtain": {"type": "string"},
            }), &["path"]),
        },
        "scopes": {
            "type": "object",
            "additionalProperties": strict(json!({
                "trace": {"type": "string"},
                "window": {"$ref": "#/$defs/window"},
                "devices": {"type": ["string", "integer"]},
                "ranks": {"type": ["string", "integer"]},
                "semantics": {"enum": ["clip", "contain"]},
            }), &["trace"]),
        },
        "claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}},
        "review": strict(json!({
            "r6": {"$ref": "#/$defs/text"},
            "next": {"$ref": "#/$defs/text"},
            "reviewer": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/text"}]},
            "date": {"type": "string"},
        }), &[]),
        "narrative": narrative_schema(),
    })
}

/// `narrative:`: the author's prose of a post, slot by slot (src/claims/narrative.rs).
fn narrative_schema() -> Value {
    let text = json!({"$ref": "#/$defs/text"});
    strict(
        json!({
            "opening": text,
            "conditions": strict(json!({
                "source": {"type": "string"},
                "model": {"type": "string"},
                "client": {"type": "string"},
                "effort": {"type": "string"},
                "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                "runs": {"type": "integer", "minimum": 1},
                "tools": text,
                "unseen": text,
                "verifier": {"type": "string"},
                "note": text,
            }), &[]),
            "prompt": text,
            "naming": text,
            "design": text,
            "experiment": text,
            "behaviour": text,
            "candidates": text,
            "kinds_lead": text,
            "kinds": text,
            "claims": {"type": "array", "items": strict(json!({
                "claim": {"type": "string"},
                "said": text,
                "before": text,
                "after": text,
                "reading": text,
            }), &["claim"])},
            "denominators": strict(json!({
                "title": text,
                "lead": text,
                "parts": {"type": "array", "minItems": 1, "items": strict(json!({
                    "part": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
                    "label": text,
                }), &["part"])},
                "questions": text,
            }), &["parts"]),
            "bound": text,
            "gates": text,
            "gates_note": text,
            "misreadings": {"type": "array", "items": strict(json!({
                "title": text,
                "text": text,
            }), &["title", "text"])},
            "closing": text,
            "next": text,
            "references": {"type": "array", "items": strict(json!({
                "text": text,
                "url": {"type": "string", "pattern": "^https?://[^\\s<>\"()\\[\\]`]+$"},
            }), &["text", "url"])},
        }),
        &[],
    )
}
