//! Exact display of numbers: integer ns to ms or a duration with its unit, ratios to percent,
//! thousands separators.
//!
//! Every displayed number is rounded once, here, from exact integers (or an exact rational),
//! half away from zero, so that a table, a formula and the JSON never disagree.

/// Formats an integer with comma thousands separators.
pub fn thousands(v: i128) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 { format!("-{out}") } else { out }
}

/// Formats `num / den` with `places` decimals, rounding half away from zero, with thousands
/// separators. `None` when `den` is zero or the scaled value does not fit 128 bits.
pub fn decimal(num: i128, den: i128, places: u32) -> Option<String> {
    if den == 0 {
        return None;
    }
    // Magnitudes in u128, so that no sign flip or rounding step can overflow.
    let neg_value = (num < 0) != (den < 0);
    let scale = 10_u128.checked_pow(places)?;
    let (n, d) = (num.unsigned_abs().checked_mul(scale)?, den.unsigned_abs());
    let (q, r) = (n / d, n % d);
    let q = if r >= d - r { q.checked_add(1)? } else { q };
    let neg = neg_value && q != 0;
    let int = i128::try_from(q / scale).ok()?;
    let frac = q % scale;
    let mut s = thousands(int);
    if places > 0 {
        s.push('.');
        s.push_str(&format!("{frac:0width$}", width = places as usize));
    }
    Some(if neg { format!("-{s}") } else { s })
}

/// Nanoseconds as milliseconds with two decimals: `6155750000` -> `6,155.75`.
pub fn ms(ns: i64) -> String {
    decimal(i128::from(ns), 1_000_000, 2).unwrap_or_default()
}

/// A duration with at least three significant digits and its unit, so that short kernels do
/// not read as `0.00 ms`: whole `ns` under 1 µs, three significant digits of `µs` under 1 ms,
/// and milliseconds with two decimals from there on: `850` -> `850 ns`, `12_345` ->
/// `12.3 µs`, `999_500` -> `1.00 ms`, `6_155_750_000` -> `6,155.75 ms`.
pub fn duration(ns: i64) -> String {
    let a = i128::from(ns).abs();
    if a < 1_000 {
        return format!("{ns} ns");
    }
    // Three significant digits of µs: 1.23, 12.3, 123. The rounded value is checked against
    // the next magnitude, so 9,995 ns reads 10.0 µs, not 10.00 µs.
    for (below, places) in [(10_000, 2), (100_000, 1), (1_000_000, 0)] {
        let step = 10_i128.pow(3 - places);
        if (a * 2 + step) / (2 * step) * step < below {
            return format!("{} µs", decimal(i128::from(ns), 1_000, places).unwrap_or_default());
        }
    }
    format!("{} ms", ms(ns))
}

/// Nanoseconds as whole microseconds: `12_400` -> `12`, `1_234_500` -> `1,235`.
pub fn us(ns: i64) -> String {
    decimal(i128::from(ns), 1_000, 0).unwrap_or_default()
}

/// A ratio as a percentage with one decimal: `(1094740000, 6155750000)` -> `17.8%`.
pub fn percent(num: i128, den: i128) -> Option<String> {
    decimal(num.checked_mul(100)?, den, 1).map(|s| format!("{s}%"))
}

/// A ratio with three decimals: `(1, 822/1000)` -> `1.217`.
pub fn ratio(num: i128, den: i128) -> Option<String> {
    decimal(num, den, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn article_numbers() {
        assert_eq!(ms(6_155_750_000), "6,155.75");
        assert_eq!(ms(1_094_744_999), "1,094.74");
        assert_eq!(ms(1_094_745_000), "1,094.75");
        assert_eq!(percent(109_474, 615_575).unwrap(), "17.8%");
        assert_eq!(percent(70_919, 70_919 + 109_474).unwrap(), "39.3%");
        assert_eq!(ratio(1000, 822).unwrap(), "1.217");
        assert_eq!(percent(30, 130).unwrap(), "23.1%");
    }

    #[test]
    fn durations_keep_three_significant_digits() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_000), "1.00 µs");
        // 1.234 µs -> 1.23; 1.235 µs rounds half away from zero -> 1.24.
        assert_eq!(duration(1_234), "1.23 µs");
        assert_eq!(duration(1_235), "1.24 µs");
        // 9.995 µs rounds up into the next magnitude, so it keeps three digits there.
        assert_eq!(duration(9_994), "9.99 µs");
        assert_eq!(duration(9_995), "10.0 µs");
        assert_eq!(duration(12_345), "12.3 µs");
        assert_eq!(duration(12_350), "12.4 µs");
        assert_eq!(duration(99_950), "100 µs");
        assert_eq!(duration(123_456), "123 µs");
        assert_eq!(duration(999_499), "999 µs");
        // 999.5 µs rounds to 1,000 µs, which is 1.00 ms.
        assert_eq!(duration(999_500), "1.00 ms");
        assert_eq!(duration(1_000_000), "1.00 ms");
        assert_eq!(duration(11_424_999), "11.42 ms");
        assert_eq!(duration(6_155_750_000), "6,155.75 ms");
        assert_eq!(duration(-12_350), "-12.4 µs");
        assert_eq!(duration(-850), "-850 ns");
    }

    #[test]
    fn edges() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(decimal(-5, 1000, 2).unwrap(), "-0.01");
        assert_eq!(decimal(-4, 1000, 2).unwrap(), "0.00");
        assert_eq!(decimal(1, 3, 0).unwrap(), "0");
        assert!(percent(1, 0).is_none());
        // At the ends of the range: exact, or None, never a wrapped or panicking value.
        assert_eq!(decimal(i128::MAX, 1, 0).unwrap(), thousands(i128::MAX));
        assert_eq!(decimal(i128::MAX, -1, 0).unwrap(), format!("-{}", thousands(i128::MAX)));
        assert!(decimal(i128::MAX, 1, 2).is_none());
        assert!(decimal(i128::MIN, -1, 0).is_none());
        assert_eq!(decimal(i128::MIN, i128::MIN, 0).unwrap(), "1");
        assert_eq!(decimal(1, i128::MAX, 3).unwrap(), "0.000");
        assert!(percent(i128::MAX, 1).is_none());
    }

    #[test]
    fn microseconds_round_half_away_from_zero() {
        assert_eq!(us(12_400), "12");
        assert_eq!(us(12_500), "13");
        assert_eq!(us(-12_500), "-13");
        assert_eq!(us(99_999), "100");
        assert_eq!(us(1_234_500), "1,235");
        assert_eq!(us(0), "0");
    }
}
