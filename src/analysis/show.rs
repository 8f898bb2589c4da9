//! Evidence laid out for the terminal: the scope lines every query prints, its notes, and
//! the value helpers the analyses' tables use. A value that is absent or null prints `n/a`,
//! never 0.

use serde_json::Value;

use super::Evidence;
use crate::scope::{format_device_list, format_seconds};
use crate::term as table;
use crate::units::{duration, percent, thousands};

/// An integer field of the evidence; `None` when it is absent or null (a value the analysis
/// could not compute), which prints as `n/a`, never as 0.
pub fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

/// A field of an evidence object; null when absent, so that a missing value reads `n/a`.
pub fn field<'a>(m: &'a serde_json::Map<String, Value>, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    m.get(key).unwrap_or(&NULL)
}

/// `f` of an integer field, or `n/a`.
pub fn show(v: Option<&Value>, f: impl Fn(i64) -> String) -> String {
    int(v).map_or_else(|| "n/a".to_string(), f)
}

/// A duration field with its unit, or `n/a`.
pub fn time(v: Option<&Value>) -> String {
    show(v, duration)
}

/// A count field with thousands separators, or `n/a`.
pub fn count(v: Option<&Value>) -> String {
    show(v, |n| thousands(n.into()))
}

/// An integer field as it is (an id, a count in a `key:value` list), or `n/a`.
pub fn plain(v: Option<&Value>) -> String {
    show(v, |n| n.to_string())
}

/// A typed duration with its unit, or `n/a` when it does not exist.
pub fn dur(v: impl Into<Option<i64>>) -> String {
    v.into().map_or_else(|| "n/a".to_string(), duration)
}

/// A typed count with thousands separators, or `n/a` when it does not exist.
pub fn num(v: impl Into<Option<i64>>) -> String {
    v.into().map_or_else(|| "n/a".to_string(), |n| thousands(n.into()))
}

/// `num / den` as a percentage, or `n/a` when either is missing or `den` is zero.
pub fn share(num: Option<i64>, den: Option<i64>) -> String {
    num.zip(den).and_then(|(n, d)| percent(n.into(), d.into())).unwrap_or_else(|| "n/a".into())
}

/// `key:value` pairs of an object field, each value through `f`, or `n/a` for a missing one.
pub fn pairs(v: &Value, f: impl Fn(Option<&Value>) -> String) -> String {
    v.as_object()
        .map(|m| m.iter().map(|(k, x)| format!("{k}:{}", f(Some(x)))).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "n/a".into())
}

/// The scope lines every query prints above its table, wrapped to `width`.
pub fn scope_lines(ev: &Evidence, width: usize) -> String {
    let line = |label: &str, text: &str| table::hang(&format!("{label:<10}"), text, 10, width);
    let t = &ev.trace;
    let mut s = line("analysis", &ev.analysis);
    let unrecorded = |v: &Option<String>| v.clone().unwrap_or_else(|| "unrecorded".into());
    // Each format says its own version fields: an nsys export its schema and nsys version,
    // a PyTorch profiler trace its `schemaVersion`.
    let version = match t.format.as_deref() {
        Some("pytorch-profiler") => format!(
            "PyTorch profiler JSON, schemaVersion {}",
            unrecorded(&t.schema_version.as_ref().map(|v| v.trim_start_matches("kineto ").into()))
        ),
        _ => format!(
            "schema {} · nsys {}",
            unrecorded(&t.schema_version),
            unrecorded(&t.nsys_version.clone().flatten())
        ),
    };
    s += &line(
        "trace",
        &format!(
            "{} · sha256 {} · {version} · {} clock",
            t.path,
            &t.sha256.get(..16).unwrap_or(&t.sha256),
            t.time_base
        ),
    );
    let span = |w: [i64; 2]| {
        let mut s = format!(
            "{}-{} s ({})",
            format_seconds(w[0]),
            format_seconds(w[1]),
            duration(w[1] - w[0])
        );
        // A UTC-epoch clock reads better from the capture start.
        if let Some(o) = t.capture_start_ns {
            s += &format!(
                ", capture start +{}-+{} s",
                format_seconds(w[0] - o),
                format_seconds(w[1] - o)
            );
        }
        s
    };
    let requested = ev.window.requested_ns.map_or("whole trace".to_string(), span);
    let effective = ev.window.effective_ns.map_or("none".to_string(), span);
    s += &line(
        "window",
        &format!("requested {requested}, semantics {}; effective {effective}", ev.window.semantics),
    );
    let mut devices = format!(
        "{} · present {} · missing {}",
        format_device_list(&ev.scope.devices),
        format_device_list(&ev.scope.present_devices),
        format_device_list(&ev.scope.missing_devices)
    );
    if let Some(st) = &ev.scope.streams {
        devices +=
            &format!(" · streams {}", st.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
    }
    s += &line("devices", &devices);
    for (k, v) in &ev.parameters {
        if !v.is_null() {
            s += &line(
                "param",
                &format!("{k} = {}", v.as_str().map_or(v.to_string(), str::to_string)),
            );
        }
    }
    s
}

/// The notes of a piece of evidence, wrapped to `width`.
pub fn notes(ev: &Evidence, width: usize) -> String {
    if ev.notes.is_empty() {
        return String::new();
    }
    let mut s = "\nnotes:\n".to_string();
    for n in &ev.notes {
        s += &table::hang("- ", &n.text, 2, width);
    }
    s
}

/// The whole terminal text of a piece of evidence: scope lines, the analysis's own table,
/// notes.
pub fn render(ev: &Evidence, width: usize) -> String {
    let mut s = scope_lines(ev, width);
    s.push('\n');
    if let Some(spec) = super::spec(&ev.analysis) {
        if ev.samples.is_empty() {
            s += &(spec.table)(ev, width);
        }
        // A set of windows: each window's table in turn.
        for (i, sample) in ev.samples.iter().enumerate() {
            let [a, b] = sample.window_ns;
            s += &format!(
                "{}window {} of {}: {}-{} s\n",
                if i == 0 { "" } else { "\n" },
                i + 1,
                ev.samples.len(),
                format_seconds(a),
                format_seconds(b)
            );
            let mut one = ev.clone();
            one.values = Some(sample.values.clone());
            one.samples = Vec::new();
            s += &(spec.table)(&one, width);
        }
    }
    s += &notes(ev, width);
    s
}
