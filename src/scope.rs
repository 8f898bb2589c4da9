//! What a piece of evidence covers: a time window, its semantics and a device selection.
//!
//! Windows are written in seconds on the trace's own clock and parsed exactly, as decimals,
//! into integer nanoseconds. Nothing here touches a trace: these are plain values.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Errors in a window or device specification as a user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// The window text is not `START:END` in seconds.
    #[error("invalid window `{text}` ({reason})")]
    Window {
        /// The text as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The device list is malformed.
    #[error("invalid device list `{text}` ({reason})")]
    Devices {
        /// The text as written.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ScopeError {
    /// A hint telling the user how to write it.
    pub fn hint(&self) -> &'static str {
        match self {
            ScopeError::Window { .. } => {
                "write the window as START:END in seconds on the trace clock, e.g. 39.964:46.123 (see `verdict inspect TRACE` for the trace's time range)"
            }
            ScopeError::Devices { .. } => "write devices as ids and ranges, e.g. 4, 1-7 or 0,2,4-6",
        }
    }
}

/// A closed-open time window `[start_ns, end_ns)` in integer nanoseconds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct Window {
    /// Inclusive start (ns).
    pub start_ns: i64,
    /// Exclusive end (ns).
    pub end_ns: i64,
}

impl Window {
    /// Parses `START:END`, both in seconds with at most nine decimals.
    pub fn parse(text: &str) -> Result<Window, ScopeError> {
        let err =
            |reason: &str| ScopeError::Window { text: text.to_string(), reason: reason.into() };
        let (a, b) = text.split_once(':').ok_or_else(|| err("expected START:END"))?;
        let start_ns = parse_seconds(a.trim()).map_err(|r| err(&r))?;
        let end_ns = parse_seconds(b.trim()).map_err(|r| err(&r))?;
        if end_ns <= start_ns {
            return Err(err("the end must be after the start"));
        }
        Ok(Window { start_ns, end_ns })
    }

    /// Length in ns.
    pub fn len_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }

    /// The window as `[start, end]` for JSON.
    pub fn as_array(&self) -> [i64; 2] {
        [self.start_ns, self.end_ns]
    }
}

impl fmt::Display for Window {
    /// Formats the window back in seconds, without trailing zeros.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", format_seconds(self.start_ns), format_seconds(self.end_ns))
    }
}

/// Parses a non-negative decimal number of seconds into integer nanoseconds, exactly.
pub fn parse_seconds(text: &str) -> Result<i64, String> {
    if text.is_empty() {
        return Err("a bound is empty".into());
    }
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(format!("`{text}` is not a number of seconds"));
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a non-negative decimal number of seconds"));
    }
    if frac.len() > 9 {
        return Err(format!("`{text}` has more than nine decimals (finer than 1 ns)"));
    }
    let whole: i64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("`{text}` is too large"))?
    };
    let mut nanos: i64 = 0;
    for (i, b) in frac.bytes().enumerate() {
        nanos += i64::from(b - b'0') * 10_i64.pow(8 - i as u32);
    }
    whole
        .checked_mul(1_000_000_000)
        .and_then(|w| w.checked_add(nanos))
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Formats nanoseconds as seconds with only the decimals needed (`39964000000` -> `39.964`).
pub fn format_seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        format!("{sign}{whole}")
    } else {
        let digits = format!("{frac:09}");
        format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// How a window selects kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(clap::ValueEnum)]
pub enum Semantics {
    /// Kernels intersecting the window, clipped to it; the total is the window length.
    #[default]
    Clip,
    /// Kernels fully inside the window, unclipped; the total is the span of the kept kernels
    /// (nsys-ai 0.3.0 `--trim`).
    Contain,
}

impl Semantics {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Semantics::Clip => "clip",
            Semantics::Contain => "contain",
        }
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which devices (nsys `deviceId`) an analysis covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceSel {
    /// These devices, sorted and deduplicated.
    Set(Vec<i64>),
    /// Every device that has kernels in the trace.
    All,
}

impl DeviceSel {
    /// Parses `4`, `1-7`, `0,2,4-6` or `all`.
    pub fn parse(text: &str) -> Result<DeviceSel, ScopeError> {
        if text.trim() == "all" {
            return Ok(DeviceSel::All);
        }
        parse_device_list(text).map(DeviceSel::Set)
    }

    /// The devices this selection resolves to, given the devices present in the trace.
    pub fn resolve(&self, present: &[i64]) -> Vec<i64> {
        match self {
            DeviceSel::Set(v) => v.clone(),
            DeviceSel::All => present.to_vec(),
        }
    }
}

/// Parses a device list such as `0-7` or `1,3,5-6` into sorted unique ids.
pub fn parse_device_list(text: &str) -> Result<Vec<i64>, ScopeError> {
    let err = |reason: String| ScopeError::Devices { text: text.to_string(), reason };
    let mut out = Vec::new();
    if text.trim().is_empty() {
        return Err(err("the list is empty".into()));
    }
    for part in text.split(',') {
        let part = part.trim();
        let id = |s: &str| -> Result<i64, ScopeError> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(format!("`{s}` is not a device id")));
            }
            s.parse::<i64>().map_err(|_| err(format!("`{s}` is too large")))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (id(a)?, id(b)?);
                if b < a {
                    return Err(err(format!("range `{part}` runs backwards")));
                }
                if b - a > 4096 {
                    return Err(err(format!("range `{part}` is implausibly large")));
                }
                out.extend(a..=b);
            }
            None => out.push(id(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats sorted device ids compactly: `[1,2,3,4,5,6,7]` -> `1-7`, `[0,2,3]` -> `0,2-3`.
pub fn format_device_list(ids: &[i64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if j > i {
            parts.push(format!("{}-{}", ids[i], ids[j]));
        } else {
            parts.push(ids[i].to_string());
        }
        i = j + 1;
    }
    if parts.is_empty() { "none".to_string() } else { parts.join(",") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_parsed_exactly() {
        let w = Window::parse("39.964:46.123").unwrap();
        assert_eq!(w.start_ns, 39_964_000_000);
        assert_eq!(w.end_ns, 46_123_000_000);
        assert_eq!(w.len_ns(), 6_159_000_000);
        // 129.141 is 129140999999 under float truncation; exact decimal parsing must not be.
        assert_eq!(parse_seconds("129.141").unwrap(), 129_141_000_000);
        assert_eq!(parse_seconds("0.000000001").unwrap(), 1);
        assert_eq!(parse_seconds(".5").unwrap(), 500_000_000);
        assert_eq!(parse_seconds("7").unwrap(), 7_000_000_000);
    }

    #[test]
    fn bad_windows_are_rejected() {
        for bad in ["", "1", "2:1", "1:1", "a:b", "1.0000000001:2", "-1:2", "1e3:2", "1:"] {
            assert!(Window::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn window_round_trips_through_display() {
        let w = Window::parse("39.964:46.123").unwrap();
        assert_eq!(w.to_string(), "39.964:46.123");
        assert_eq!(format_seconds(1_500_000_000), "1.5");
    }

    #[test]
    fn device_lists() {
        assert_eq!(parse_device_list("1-7").unwrap(), vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(parse_device_list("4,0,2-3,3").unwrap(), vec![0, 2, 3, 4]);
        for bad in ["", "a", "3-1", "1,,2", "-1", "1-"] {
            assert!(parse_device_list(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(format_device_list(&[1, 2, 3, 4, 5, 6, 7]), "1-7");
        assert_eq!(format_device_list(&[0, 2, 3, 9]), "0,2-3,9");
        assert_eq!(format_device_list(&[]), "none");
    }
}
