//! Interval algebra on integer nanoseconds: union, length, intersection.
//!
//! Intervals are half-open `[start, end)`. Wall-time quantities are always lengths of unions,
//! never sums of durations, because kernels overlap across streams and even on one stream.

/// Merges intervals into a sorted list of disjoint, non-touching intervals.
pub fn union(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.retain(|&(s, e)| e > s);
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of a union produced by [`union`].
pub fn length(u: &[(i64, i64)]) -> i64 {
    u.iter().map(|&(s, e)| e - s).sum()
}

/// Length of the intersection of two unions produced by [`union`].
pub fn intersection_length(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed_cases() {
        // nsys-ai's golden vector in ms: compute [1,2] [3,4] [8,9], NCCL [2.5,3.5] [4.5,5.5].
        let c = union(vec![(1000, 2000), (3000, 4000), (8000, 9000)]);
        let n = union(vec![(2500, 3500), (4500, 5500)]);
        assert_eq!(length(&c), 3000);
        assert_eq!(length(&n), 2000);
        assert_eq!(intersection_length(&c, &n), 500);
        // Touching intervals merge; contained ones vanish; empty ones are dropped.
        assert_eq!(union(vec![(0, 5), (5, 7), (1, 2), (9, 9)]), vec![(0, 7)]);
    }

    fn brute_cover(iv: &[(i64, i64)], t: i64) -> bool {
        iv.iter().any(|&(s, e)| s <= t && t < e)
    }

    proptest! {
        #[test]
        fn matches_a_brute_force_reference(
            a in prop::collection::vec((0i64..60, 0i64..12), 0..12),
            b in prop::collection::vec((0i64..60, 0i64..12), 0..12),
        ) {
            let a: Vec<(i64, i64)> = a.into_iter().map(|(s, d)| (s, s + d)).collect();
            let b: Vec<(i64, i64)> = b.into_iter().map(|(s, d)| (s, s + d)).collect();
            let (ua, ub) = (union(a.clone()), union(b.clone()));
            let cells = 0..80;
            let brute_a = cells.clone().filter(|&t| brute_cover(&a, t)).count() as i64;
            let brute_b = cells.clone().filter(|&t| brute_cover(&b, t)).count() as i64;
            let brute_ab = cells.clone().filter(|&t| brute_cover(&a, t) && brute_cover(&b, t)).count() as i64;
            prop_assert_eq!(length(&ua), brute_a);
            prop_assert_eq!(length(&ub), brute_b);
            prop_assert_eq!(intersection_length(&ua, &ub), brute_ab);
            prop_assert!(ua.windows(2).all(|w| w[0].1 < w[1].0));
        }
    }
}
