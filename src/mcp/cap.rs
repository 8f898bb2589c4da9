//! Caps on what a tool returns: the rows of every list and the bytes of the whole, with what
//! was cut stated in the result itself (`truncation`), never in silence.
//!
//! It must not change a value it keeps: a list loses its last items, nothing else.

use serde_json::{Value, json};

/// Rows kept of each list when the call does not say.
pub const DEFAULT_ROWS: u64 = 200;
/// The most rows a call may ask for.
pub const MAX_ROWS: u64 = 100_000;
/// Bytes of the structured result (as compact JSON) when the call does not say.
pub const DEFAULT_BYTES: u64 = 1024 * 1024;
/// The most bytes a call may ask for.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// A list that was cut: where (a JSON pointer), how long it was, how many items are left.
struct Cut {
    path: String,
    total: usize,
    kept: usize,
}

/// Cuts every list of `v` to at most `max_rows` items, then, while the whole is longer than
/// `max_bytes`, halves the rows kept. Returns the statement of what was cut (None when
/// nothing was), or an error when the result is too long even with every list emptied.
pub fn apply(v: &mut Value, max_rows: u64, max_bytes: u64) -> Result<Option<Value>, String> {
    let whole = v.clone();
    let mut rows = usize::try_from(max_rows).unwrap_or(usize::MAX);
    loop {
        *v = whole.clone();
        let mut cuts = Vec::new();
        cut(v, rows, &mut String::new(), &mut cuts);
        let bytes = serde_json::to_vec(v).map_or(usize::MAX, |b| b.len());
        if bytes as u64 <= max_bytes {
            if cuts.is_empty() {
                return Ok(None);
            }
            let by_bytes = rows as u64 != max_rows;
            return Ok(Some(json!({
                "max_rows": max_rows,
                "rows_kept": rows,
                "max_bytes": max_bytes,
                "cut_for_bytes": by_bytes,
                "lists": cuts
                    .iter()
                    .map(|c| json!({"path": c.path, "total": c.total, "kept": c.kept}))
                    .collect::<Vec<_>>(),
            })));
        }
        if rows == 0 {
            return Err(format!(
                "the result is {bytes} bytes with every list emptied, over the cap of {max_bytes} bytes"
            ));
        }
        rows /= 2;
    }
}

fn cut(v: &mut Value, rows: usize, path: &mut String, cuts: &mut Vec<Cut>) {
    let len = path.len();
    match v {
        Value::Array(items) => {
            if items.len() > rows {
                cuts.push(Cut { path: path.clone(), total: items.len(), kept: rows });
                items.truncate(rows);
            }
            for (i, x) in items.iter_mut().enumerate() {
                path.push_str(&format!("/{i}"));
                cut(x, rows, path, cuts);
                path.truncate(len);
            }
        }
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                cut(x, rows, path, cuts);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// The summary's sentence about a cut, if there was one.
pub fn sentence(t: &Value) -> String {
    let lists = t["lists"].as_array().map_or(0, Vec::len);
    format!(
        "truncated: {lists} list(s) cut to {} rows (see `truncation`; raise `max_rows` or `max_bytes`, or narrow the call)",
        t["rows_kept"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_cut_to_the_rows_and_the_cut_is_stated() {
        let mut v = json!({"a": [1, 2, 3, 4], "b": {"c/d": [[1, 2, 3], [4]]}, "e": "x"});
        let t = apply(&mut v, 2, 1 << 20).unwrap().unwrap();
        assert_eq!(v, json!({"a": [1, 2], "b": {"c/d": [[1, 2], [4]]}, "e": "x"}));
        let lists: Vec<(String, u64, u64)> = t["lists"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["path"].as_str().unwrap().to_string(),
                    c["total"].as_u64().unwrap(),
                    c["kept"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(lists, vec![("/a".into(), 4, 2), ("/b/c~1d/0".into(), 3, 2)]);
        let mut small = json!({"a": [1]});
        assert_eq!(apply(&mut small, 2, 1 << 20).unwrap(), None);
    }

    #[test]
    fn rows_are_halved_until_the_bytes_fit() {
        // 100 items of 10 bytes each ("xxxxxxxx" with quotes and a comma): 1,000 bytes or so.
        let mut v = json!({ "a": vec!["xxxxxxxx"; 100] });
        let t = apply(&mut v, 100, 300).unwrap().unwrap();
        // 100 -> 50 -> 25: 25 items of 11 bytes is 275 bytes, plus `{"a":[]}` minus a comma.
        assert_eq!(v["a"].as_array().unwrap().len(), 25);
        assert!(serde_json::to_vec(&v).unwrap().len() <= 300);
        assert_eq!(t["cut_for_bytes"], true);
        let mut huge = json!({ "s": "y".repeat(1000) });
        assert!(apply(&mut huge, 10, 100).is_err());
    }
}
