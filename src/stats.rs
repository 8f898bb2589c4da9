//! Two-sample statistics for comparing sides A and B of integer values: summaries, the
//! difference and ratio of medians, the Mann-Whitney U test, the Hodges-Lehmann shift with its
//! exact (Moses) interval and a seeded bootstrap of the difference of medians.
//! Pure functions over slices: no I/O, no trace access, no clock, no global state. Quantiles, U
//! and interval ends are exact; only p-values and achieved confidence levels are floats.

use std::cmp::Ordering;
use std::fmt;

use crate::formula::Rational;

/// A side with fewer values than this is flagged `few_samples`: its test and intervals are
/// computed, but they rest on very little.
pub const FEW_SAMPLES: usize = 5;

/// The fewest values a side needs for a test or an interval: one value has no spread.
pub const MIN_SAMPLES: usize = 2;

/// The largest `n_a * n_b` for which the null distribution of U is enumerated exactly (two
/// sides of 50, or 1 against 2500). Its counts then stay below `C(100, 50) ≈ 1.0e29`, well
/// inside 128 bits.
pub const EXACT_MAX_PAIRS: usize = 2_500;

/// The most pairwise differences `b - a` the Hodges-Lehmann estimate sorts (16 MB of them).
pub const MAX_PAIRS: usize = 1_000_000;

/// The bootstrap's default number of resamples.
pub const DEFAULT_RESAMPLES: u32 = 10_000;

/// The bootstrap's default seed, disclosed with every result: the ASCII bytes of `verdict!`.
pub const DEFAULT_SEED: u64 = 0x7665_7264_6963_7421;

/// The most indices one bootstrap draws (`resamples * (n_a + n_b)`), about a second of work.
pub const MAX_BOOTSTRAP_DRAWS: u64 = 200_000_000;

/// One of the two compared samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The baseline side.
    A,
    /// The side compared with it; differences are `B - A`.
    B,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// Why a test or an interval was not computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    /// A side has fewer than [`MIN_SAMPLES`] values.
    #[error("side {side} has {n} value(s); a test or an interval needs at least {min} on each side", min = MIN_SAMPLES)]
    TooFew {
        /// The side.
        side: Side,
        /// Its number of values.
        n: usize,
    },
    /// More than [`MAX_PAIRS`] pairwise differences.
    #[error("{pairs} pairwise differences exceed the cap of {cap}", cap = MAX_PAIRS)]
    TooManyPairs {
        /// `n_a * n_b`.
        pairs: u128,
    },
    /// More than [`MAX_BOOTSTRAP_DRAWS`] bootstrap draws.
    #[error("{draws} bootstrap draws exceed the cap of {cap}; use fewer resamples", cap = MAX_BOOTSTRAP_DRAWS)]
    TooManyDraws {
        /// `resamples * (n_a + n_b)`.
        draws: u128,
    },
    /// A confidence level outside the open interval (0, 1).
    #[error("a confidence level of {num}/{den} is not strictly between 0 and 1")]
    BadConfidence {
        /// Its numerator.
        num: i128,
        /// Its denominator.
        den: i128,
    },
    /// The samples are too small for the confidence asked: even the widest rank interval
    /// (smallest to largest difference) covers less.
    #[error(
        "the samples are too small for this confidence: the widest interval reaches {max_achieved:.4}"
    )]
    Unreachable {
        /// The confidence of the widest interval.
        max_achieved: f64,
    },
    /// A bootstrap of zero resamples.
    #[error("a bootstrap needs at least one resample")]
    NoResamples,
    /// A ratio of samples with a value that is not positive.
    #[error("a ratio needs positive values on both sides, and one is {value}")]
    NotPositive {
        /// The first value that is not positive.
        value: i64,
    },
    /// An intermediate value does not fit exact arithmetic.
    #[error("a value overflows exact arithmetic")]
    Overflow,
}

/// How a p-value or an interval's rank was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// From the exact null distribution of U, enumerated: without ties, or, with ties, the
    /// permutation distribution of U given the tied values (every way of dealing the pooled
    /// values into the two sides, equally likely).
    Exact,
    /// From the normal approximation of U's distribution.
    Normal,
}

/// Order statistics and mean of one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Number of values (at least 1).
    pub n: usize,
    /// Smallest value.
    pub min: i64,
    /// Nearest-rank 10th percentile: element `ceil(n/10) - 1` of the sorted sample.
    pub p10: i64,
    /// Lower median: element `(n - 1) / 2` of the sorted sample.
    pub median: i64,
    /// Nearest-rank 90th percentile: element `ceil(9n/10) - 1` of the sorted sample.
    pub p90: i64,
    /// Largest value.
    pub max: i64,
    /// Exact mean, `sum / n` in lowest terms.
    pub mean: Rational,
}

/// Summarizes a sample with the project's quantile convention (lower median, nearest rank,
/// as in the analyses' `quantiles`); None for an empty one.
pub fn summarize(xs: &[i64]) -> Option<Summary> {
    let s = sorted(xs);
    let n = s.len();
    let last = *s.last()?;
    let sum: i128 = s.iter().map(|&x| i128::from(x)).sum();
    Some(Summary {
        n,
        min: s[0],
        p10: s[n.div_ceil(10) - 1],
        median: lower_median(&s)?,
        p90: s[(9 * n).div_ceil(10) - 1],
        max: last,
        mean: Rational::new(sum, i128::try_from(n).ok()?)?,
    })
}

/// The medians of both sides and how they differ.
#[derive(Debug, Clone, PartialEq)]
pub struct MedianDifference {
    /// Lower median of A.
    pub median_a: i64,
    /// Lower median of B.
    pub median_b: i64,
    /// `median_b - median_a`, exact.
    pub difference: i128,
    /// `median_b / median_a`, exact; None when `median_a` is 0.
    pub ratio: Option<Rational>,
}

/// `median(B) - median(A)` and `median(B) / median(A)` with lower medians; None when a side is
/// empty.
pub fn median_difference(a: &[i64], b: &[i64]) -> Option<MedianDifference> {
    let median_a = lower_median(&sorted(a))?;
    let median_b = lower_median(&sorted(b))?;
    Some(MedianDifference {
        median_a,
        median_b,
        difference: i128::from(median_b) - i128::from(median_a),
        ratio: Rational::new(median_b.into(), median_a.into()),
    })
}

/// A two-sided Mann-Whitney U test of A against B.
#[derive(Debug, Clone, PartialEq)]
pub struct MannWhitney {
    /// Number of values in A.
    pub n_a: usize,
    /// Number of values in B.
    pub n_b: usize,
    /// `2 * U_A`, where `U_A` counts the pairs with `a > b` plus half the pairs with `a == b`
    /// (the rank sum of A minus `n_a (n_a + 1) / 2`); 0 when every A is below every B.
    pub u_a_doubled: u64,
    /// `2 * U_B`; `u_a_doubled + u_b_doubled == 2 * n_a * n_b`.
    pub u_b_doubled: u64,
    /// Whether the pooled sample has equal values (which rules out the exact method).
    pub ties: bool,
    /// How the p-value was obtained: exact when there are no ties and `n_a * n_b` is at most
    /// [`EXACT_MAX_PAIRS`], else normal.
    pub method: Method,
    /// Two-sided p-value, in (0, 1]. Exact: twice the smaller tail of the null distribution at
    /// the observed U, capped at 1. Normal: with tie and continuity corrections.
    pub p_value: f64,
    /// The exact p-value as a fraction, for [`Method::Exact`].
    pub p_exact: Option<Rational>,
    /// The corrected z score `(|U - n_a n_b / 2| - 1/2) / sigma` (floored at 0), for
    /// [`Method::Normal`].
    pub z: Option<f64>,
    /// A side has fewer than [`FEW_SAMPLES`] values.
    pub few_samples: bool,
}

/// The two-sided Mann-Whitney U test (Wilcoxon rank-sum test) of A against B.
pub fn mann_whitney(a: &[i64], b: &[i64]) -> Result<MannWhitney, Refused> {
    check_sizes(a, b)?;
    let (sa, sb) = (sorted(a), sorted(b));
    let (n_a, n_b) = (sa.len(), sb.len());
    let pairs = u64::try_from(n_a as u128 * n_b as u128).map_err(|_| Refused::Overflow)?;
    let pairs2 = pairs.checked_mul(2).ok_or(Refused::Overflow)?;
    let mut u_a_doubled: u64 = 0;
    for &x in &sa {
        let below = sb.partition_point(|&y| y < x);
        let equal = sb.partition_point(|&y| y <= x) - below;
        u_a_doubled += 2 * below as u64 + equal as u64;
    }
    let u_b_doubled = pairs2 - u_a_doubled;
    let (ties, tie_term, groups) = tie_stats(&sa, &sb);
    let few_samples = n_a < FEW_SAMPLES || n_b < FEW_SAMPLES;
    let base = MannWhitney {
        n_a,
        n_b,
        u_a_doubled,
        u_b_doubled,
        ties,
        method: Method::Exact,
        p_value: 1.0,
        p_exact: None,
        z: None,
        few_samples,
    };
    if !ties && let Some(counts) = null_counts(n_a, n_b) {
        // No ties, so U is an integer.
        let p = two_sided(&counts, (u_a_doubled / 2) as usize)?;
        return Ok(MannWhitney { p_value: p.to_f64(), p_exact: Some(p), ..base });
    }
    if groups == 1 {
        // Every value is the same: U sits at its mean and nothing can be told apart.
        return Ok(MannWhitney { method: Method::Normal, z: Some(0.0), ..base });
    }
    if ties && let Some(counts) = tied_null_counts(&sa, &sb) {
        // `counts[v]`: arrangements with 2U = v.
        let p = two_sided(&counts, u_a_doubled as usize)?;
        return Ok(MannWhitney { p_value: p.to_f64(), p_exact: Some(p), ..base });
    }
    let (z, p_value) = normal_p(n_a, n_b, u_a_doubled, tie_term);
    Ok(MannWhitney { method: Method::Normal, p_value, z: Some(z), ..base })
}

/// The two-sided p of an observed statistic `at` under a symmetric null distribution given as
/// counts: twice the smaller tail, at most 1, exactly.
fn two_sided(counts: &[u128], at: usize) -> Result<Rational, Refused> {
    let total: u128 = counts.iter().sum();
    let below: u128 = counts[..=at].iter().sum();
    let above: u128 = counts[at..].iter().sum();
    let num = (2 * below.min(above)).min(total);
    Rational::new(
        i128::try_from(num).map_err(|_| Refused::Overflow)?,
        i128::try_from(total).map_err(|_| Refused::Overflow)?,
    )
    .ok_or(Refused::Overflow)
}

/// The normal approximation of U's distribution, with the tie correction of its variance and
/// a continuity correction: `(z, two-sided p)`. Used beyond [`EXACT_MAX_PAIRS`] only.
fn normal_p(n_a: usize, n_b: usize, u_a_doubled: u64, tie_term: f64) -> (f64, f64) {
    let (mf, nf, nn) = (n_a as f64, n_b as f64, (n_a + n_b) as f64);
    let pairs = mf * nf;
    let variance = mf * nf / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    let distance = (u_a_doubled as f64 - pairs).abs() / 2.0;
    let z = (distance - 0.5).max(0.0) / variance.sqrt();
    (z, erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// The Hodges-Lehmann estimate of the shift `B - A` with its rank-based (Moses) interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftInterval {
    /// The median of the `n_a * n_b` differences `b - a` (the mean of the middle two when
    /// their number is even), exact.
    pub estimate: Rational,
    /// The `rank`-th smallest difference.
    pub low: i128,
    /// The `rank`-th largest difference.
    pub high: i128,
    /// The rank `C` of the interval's ends: the largest with `P(U <= C - 1) <= (1 - level) / 2`
    /// under the null distribution of U.
    pub rank: usize,
    /// Number of pairwise differences, `n_a * n_b`.
    pub pairs: usize,
    /// The confidence level asked for.
    pub confidence: Rational,
    /// The level the interval reaches, `1 - 2 P(U <= rank - 1)`: at least the one asked for,
    /// since ranks are discrete.
    pub achieved: f64,
    /// `achieved` as a fraction, for [`Method::Exact`].
    pub achieved_exact: Option<Rational>,
    /// Exact when `n_a * n_b` is at most [`EXACT_MAX_PAIRS`], else normal (with continuity
    /// correction, without tie correction).
    pub method: Method,
    /// Whether the pooled sample has equal values. The rank's distribution assumes none; with
    /// ties the closed interval covers at least `achieved`, so it is conservative.
    pub ties: bool,
    /// A side has fewer than [`FEW_SAMPLES`] values.
    pub few_samples: bool,
}

/// The Hodges-Lehmann shift estimate of `B - A` and its Moses interval at `confidence` (e.g.
/// `95/100`): ends are order statistics of the sorted differences `b - a`, exact integers.
pub fn hodges_lehmann(
    a: &[i64],
    b: &[i64],
    confidence: Rational,
) -> Result<ShiftInterval, Refused> {
    check_sizes(a, b)?;
    let alpha = check_confidence(confidence)?;
    let (n_a, n_b) = (a.len(), b.len());
    let pairs_wide = n_a as u128 * n_b as u128;
    if pairs_wide > MAX_PAIRS as u128 {
        return Err(Refused::TooManyPairs { pairs: pairs_wide });
    }
    let pairs = n_a * n_b;
    let (rank, achieved, achieved_exact, method) = moses_rank(n_a, n_b, alpha)?;
    let mut diffs = Vec::with_capacity(pairs);
    for &y in b {
        diffs.extend(a.iter().map(|&x| i128::from(y) - i128::from(x)));
    }
    diffs.sort_unstable();
    let mid = pairs / 2;
    let estimate = if pairs % 2 == 1 {
        Rational::int(diffs[mid])
    } else {
        Rational::new(diffs[mid - 1] + diffs[mid], 2).ok_or(Refused::Overflow)?
    };
    let (sa, sb) = (sorted(a), sorted(b));
    Ok(ShiftInterval {
        estimate,
        low: diffs[rank - 1],
        high: diffs[pairs - rank],
        rank,
        pairs,
        confidence,
        achieved,
        achieved_exact,
        method,
        ties: tie_stats(&sa, &sb).0,
        few_samples: n_a < FEW_SAMPLES || n_b < FEW_SAMPLES,
    })
}

/// The rank of a Moses interval's ends among the `n_a * n_b` pairwise comparisons, the level
/// it reaches (and exactly, for [`Method::Exact`]) and how the rank was found.
fn moses_rank(
    n_a: usize,
    n_b: usize,
    alpha: Rational,
) -> Result<(usize, f64, Option<Rational>, Method), Refused> {
    Ok(match null_counts(n_a, n_b) {
        Some(counts) => {
            let (rank, level) = exact_rank(&counts, alpha)?;
            (rank, level.to_f64(), Some(level), Method::Exact)
        }
        None => {
            let (rank, level) = normal_rank(n_a, n_b, alpha.to_f64())?;
            (rank, level, None, Method::Normal)
        }
    })
}

/// The ratio `B / A` of two samples of positive values: the Hodges-Lehmann estimate and Moses
/// interval of the shift of their logarithms, taken back by exponentiation. Since the
/// logarithm keeps order, the ends are pairwise ratios `b / a` of the samples themselves, of
/// the same ranks as the shift interval's ends: exact, never below 0, so a relative change
/// `ratio - 1` is never below -100%.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioInterval {
    /// The median pairwise ratio, as `(b, a)` (the lower middle one when their number is
    /// even).
    pub estimate: (i64, i64),
    /// The `rank`-th smallest ratio, as `(b, a)`.
    pub low: (i64, i64),
    /// The `rank`-th largest ratio, as `(b, a)`.
    pub high: (i64, i64),
    /// The rank of the ends, as in [`ShiftInterval::rank`].
    pub rank: usize,
    /// The level the interval reaches.
    pub achieved: f64,
    /// How the rank was found.
    pub method: Method,
}

/// The ratio interval of `B / A` at `confidence`; refused when a value is not positive.
pub fn ratio_interval(
    a: &[i64],
    b: &[i64],
    confidence: Rational,
) -> Result<RatioInterval, Refused> {
    check_sizes(a, b)?;
    let alpha = check_confidence(confidence)?;
    if let Some(&v) = a.iter().chain(b).find(|&&v| v <= 0) {
        return Err(Refused::NotPositive { value: v });
    }
    let pairs_wide = a.len() as u128 * b.len() as u128;
    if pairs_wide > MAX_PAIRS as u128 {
        return Err(Refused::TooManyPairs { pairs: pairs_wide });
    }
    let (rank, achieved, _, method) = moses_rank(a.len(), b.len(), alpha)?;
    let mut ratios: Vec<(i64, i64)> =
        b.iter().flat_map(|&y| a.iter().map(move |&x| (y, x))).collect();
    // b1 / a1 against b2 / a2, both denominators positive: b1 a2 against b2 a1, exactly.
    ratios.sort_unstable_by(|p, q| {
        (i128::from(p.0) * i128::from(q.1)).cmp(&(i128::from(q.0) * i128::from(p.1)))
    });
    let pairs = ratios.len();
    Ok(RatioInterval {
        estimate: ratios[(pairs - 1) / 2],
        low: ratios[rank - 1],
        high: ratios[pairs - rank],
        rank,
        achieved,
        method,
    })
}

/// The two-sided level and power of [`min_detectable_shift`]: 5% and 80%.
pub const MDE_Z: f64 = 1.959_963_984_540_054 + 0.841_621_233_572_914_3;

/// The smallest shift `B - A` a two-sided rank test at the 5% level detects with 80% power at
/// these sample sizes, from the spread of the samples themselves: the normal-theory
/// `(z_0.975 + z_0.80) s sqrt(1/n_a + 1/n_b)` (Cohen, *Statistical Power Analysis for the
/// Behavioral Sciences*, 2nd ed., 1988, ch. 2), `s` the pooled standard deviation, widened by
/// `sqrt(pi / 3)` because the rank test needs `pi / 3` times the samples of the t test on
/// normal data (its asymptotic relative efficiency `3 / pi`: Hodges and Lehmann, "The
/// efficiency of some nonparametric competitors of the t-test", Ann. Math. Statist. 27, 1956;
/// Noether, "Sample size determination for some common nonparametric tests", JASA 82, 1987).
/// None when a side has fewer than [`MIN_SAMPLES`] values. A planning figure, not a test.
pub fn min_detectable_shift(a: &[i64], b: &[i64]) -> Option<f64> {
    if a.len() < MIN_SAMPLES || b.len() < MIN_SAMPLES {
        return None;
    }
    let ss = |xs: &[i64]| {
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
        xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>()
    };
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let s = ((ss(a) + ss(b)) / (na + nb - 2.0)).sqrt();
    Some(MDE_Z * s * (1.0 / na + 1.0 / nb).sqrt() * (std::f64::consts::PI / 3.0).sqrt())
}

/// A percentile bootstrap interval of `median(B) - median(A)`.
#[derive(Debug, Clone, PartialEq)]
pub struct BootstrapInterval {
    /// `median(B) - median(A)` on the samples themselves (lower medians).
    pub observed: i128,
    /// Nearest-rank `(1 - level) / 2` percentile of the resampled differences.
    pub low: i128,
    /// Nearest-rank `(1 + level) / 2` percentile of the resampled differences.
    pub high: i128,
    /// The confidence level asked for.
    pub confidence: Rational,
    /// The seed of the SplitMix64 stream the draws come from.
    pub seed: u64,
    /// Number of resamples.
    pub resamples: u32,
    /// A side has fewer than [`FEW_SAMPLES`] values.
    pub few_samples: bool,
}

/// A percentile bootstrap interval of `median(B) - median(A)` (lower medians) at `confidence`,
/// reproducible on every platform from `seed` ([`DEFAULT_SEED`], [`DEFAULT_RESAMPLES`] by
/// default).
///
/// The draws are fixed: both sides are sorted first, then for each resample `n_a` indices into
/// sorted A and then `n_b` into sorted B come from one [`SplitMix64`] stream through
/// [`SplitMix64::below`]. So the result depends on the values of each side, not their order.
/// Ends are the nearest-rank percentiles of the sorted resampled differences: ranks
/// `ceil(R (1 - level) / 2)` (at least 1) and `ceil(R (1 + level) / 2)`.
pub fn bootstrap_median_difference(
    a: &[i64],
    b: &[i64],
    confidence: Rational,
    resamples: u32,
    seed: u64,
) -> Result<BootstrapInterval, Refused> {
    check_sizes(a, b)?;
    check_confidence(confidence)?;
    if resamples == 0 {
        return Err(Refused::NoResamples);
    }
    let draws = u128::from(resamples) * (a.len() as u128 + b.len() as u128);
    if draws > u128::from(MAX_BOOTSTRAP_DRAWS) {
        return Err(Refused::TooManyDraws { draws });
    }
    let (lo_rank, hi_rank) = percentile_ranks(resamples, confidence)?;
    let (sa, sb) = (sorted(a), sorted(b));
    let observed = i128::from(lower_median(&sb).ok_or(Refused::Overflow)?)
        - i128::from(lower_median(&sa).ok_or(Refused::Overflow)?);
    let mut rng = SplitMix64::new(seed);
    let (mut counts_a, mut counts_b) = (vec![0usize; sa.len()], vec![0usize; sb.len()]);
    let mut diffs = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let ma = resampled_median(&sa, &mut rng, &mut counts_a);
        let mb = resampled_median(&sb, &mut rng, &mut counts_b);
        diffs.push(i128::from(mb) - i128::from(ma));
    }
    diffs.sort_unstable();
    Ok(BootstrapInterval {
        observed,
        low: diffs[lo_rank - 1],
        high: diffs[hi_rank - 1],
        confidence,
        seed,
        resamples,
        few_samples: a.len() < FEW_SAMPLES || b.len() < FEW_SAMPLES,
    })
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014), as in Vigna's reference `splitmix64.c`: a 64-bit state advanced by the golden
/// gamma `0x9E3779B97F4A7C15` and finalized by Stafford's mix 13 (multipliers
/// `0xBF58476D1CE4E5B9` and `0x94D049BB133111EB`). Written here, not taken from a crate, so
/// that a disclosed seed gives the same draws in every version.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose first output is the mix of `seed + gamma`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..bound` without modulo bias, by Lemire's multiply-and-reject
    /// method ("Fast random integer generation in an interval", 2019); 0 when `bound` is 0.
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(bound);
        if (m as u64) < bound {
            let threshold = bound.wrapping_neg() % bound;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(bound);
            }
        }
        (m >> 64) as u64
    }
}

/// A sorted copy.
fn sorted(xs: &[i64]) -> Vec<i64> {
    let mut s = xs.to_vec();
    s.sort_unstable();
    s
}

/// The lower median of a sorted sample; None when empty.
fn lower_median(sorted: &[i64]) -> Option<i64> {
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

/// Refuses a side with fewer than [`MIN_SAMPLES`] values.
fn check_sizes(a: &[i64], b: &[i64]) -> Result<(), Refused> {
    for (side, n) in [(Side::A, a.len()), (Side::B, b.len())] {
        if n < MIN_SAMPLES {
            return Err(Refused::TooFew { side, n });
        }
    }
    Ok(())
}

/// `1 - confidence`, for a confidence strictly between 0 and 1.
fn check_confidence(confidence: Rational) -> Result<Rational, Refused> {
    let Rational { num, den } = confidence;
    if num <= 0 || num >= den {
        return Err(Refused::BadConfidence { num, den });
    }
    Rational::int(1).checked_sub(confidence).ok_or(Refused::Overflow)
}

/// Whether the pooled sorted sides have equal values, the tie term `sum(t^3 - t)` over groups
/// of `t` equal values, and the number of distinct values.
fn tie_stats(sa: &[i64], sb: &[i64]) -> (bool, f64, usize) {
    let mut pooled = Vec::with_capacity(sa.len() + sb.len());
    pooled.extend_from_slice(sa);
    pooled.extend_from_slice(sb);
    pooled.sort_unstable();
    let (mut term, mut groups) = (0.0, 0);
    for run in pooled.chunk_by(|x, y| x == y) {
        let t = run.len() as f64;
        term += t * t * t - t;
        groups += 1;
    }
    (groups < pooled.len(), term, groups)
}

/// The null distribution of U for sides of `m` and `n` values without ties: `counts[u]` is the
/// number of the `C(m + n, m)` equally likely arrangements with `U = u`, for `u` in
/// `0..=m n`. None when `m n` exceeds [`EXACT_MAX_PAIRS`] (or a count would not fit).
///
/// The counts are the coefficients of the Gaussian binomial `[m + n choose m]_q`, built as the
/// product over `i` in `1..=k` of `(1 - q^(l + i)) / (1 - q^i)` with `k = min(m, n)`,
/// `l = max(m, n)`; after step `i` the polynomial is `[l + i choose i]_q`, so every division is
/// exact. Working modulo `q^(m n + 1)` is exact too: the result has degree `m n`.
fn null_counts(m: usize, n: usize) -> Option<Vec<u128>> {
    let pairs = m.checked_mul(n)?;
    if pairs > EXACT_MAX_PAIRS {
        return None;
    }
    let (k, l) = (m.min(n), m.max(n));
    let mut p = vec![0i128; pairs + 1];
    p[0] = 1;
    for i in 1..=k {
        let shift = l + i;
        for d in (shift..=pairs).rev() {
            p[d] = p[d].checked_sub(p[d - shift])?;
        }
        for d in i..=pairs {
            p[d] = p[d].checked_add(p[d - i])?;
        }
    }
    p.into_iter().map(|c| u128::try_from(c).ok()).collect()
}

/// The permutation distribution of twice U (an integer with ties, which count one half) given
/// the tied values of the pooled sample: `counts[v]` is the number of ways, of the
/// `C(m + n, m)` equally likely ones, to deal the pooled values into a side of `m` (A) and one
/// of `n` (B) with `2 U_A = v`. None when `m n` exceeds [`EXACT_MAX_PAIRS`] (or a count would
/// not fit).
///
/// Over the groups of equal values in ascending order, choosing `k` of a group of `t` for A
/// (`C(t, k)` ways) adds `k (2 b + (t - k))` to `2 U_A`, where `b` is the number of B values in
/// the groups below: each of those `k` values is above `b` B values and ties with `t - k`. A
/// table over (values of A so far, partial `2 U_A`) takes the groups one by one.
fn tied_null_counts(sa: &[i64], sb: &[i64]) -> Option<Vec<u128>> {
    let (m, n) = (sa.len(), sb.len());
    let pairs = m.checked_mul(n)?;
    if pairs > EXACT_MAX_PAIRS {
        return None;
    }
    let mut pooled: Vec<i64> = sa.iter().chain(sb).copied().collect();
    pooled.sort_unstable();
    let sizes: Vec<usize> = pooled.chunk_by(|x, y| x == y).map(<[i64]>::len).collect();
    let width = 2 * pairs + 1;
    // table[a][v]: ways with `a` values dealt to A and partial 2U_A = v.
    let mut table = vec![vec![0u128; width]; m + 1];
    table[0][0] = 1;
    let mut seen = 0;
    for &t in &sizes {
        let mut next = vec![vec![0u128; width]; m + 1];
        for (a, row) in table.iter().enumerate() {
            let b = seen - a.min(seen);
            if a > seen || b > n {
                continue;
            }
            for (v, &ways) in row.iter().enumerate().filter(|(_, w)| **w > 0) {
                let mut choose: u128 = 1;
                for k in 0..=t.min(m - a) {
                    if k > 0 {
                        choose = choose.checked_mul((t - k + 1) as u128)? / k as u128;
                    }
                    if t - k + b > n {
                        continue;
                    }
                    let add = k * (2 * b + (t - k));
                    let cell = &mut next[a + k][v + add];
                    *cell = cell.checked_add(ways.checked_mul(choose)?)?;
                }
            }
        }
        table = next;
        seen += t;
    }
    Some(table.swap_remove(m))
}

/// The rank `C` and the exact level `1 - 2 P(U <= C - 1)` of the widest-ranked interval whose
/// level is at least `1 - alpha`.
fn exact_rank(counts: &[u128], alpha: Rational) -> Result<(usize, Rational), Refused> {
    let total = i128::try_from(counts.iter().sum::<u128>()).map_err(|_| Refused::Overflow)?;
    let tail = |cum: u128| -> Result<Rational, Refused> {
        let twice = i128::try_from(cum).ok().and_then(|c| c.checked_mul(2));
        Rational::new(twice.ok_or(Refused::Overflow)?, total).ok_or(Refused::Overflow)
    };
    let mut best: Option<(usize, Rational)> = None;
    let mut cum = 0u128;
    // Rank c + 1 needs P(U <= c) <= alpha / 2; the tail only grows with c.
    for (c, &count) in counts.iter().enumerate() {
        cum += count;
        let twice_tail = tail(cum)?;
        if twice_tail.cmp_to(alpha) == Ordering::Greater {
            break;
        }
        let level = Rational::int(1).checked_sub(twice_tail).ok_or(Refused::Overflow)?;
        best = Some((c + 1, level));
    }
    match best {
        Some(found) => Ok(found),
        None => {
            let widest = Rational::int(1).checked_sub(tail(counts[0])?).ok_or(Refused::Overflow)?;
            Err(Refused::Unreachable { max_achieved: widest.to_f64() })
        }
    }
}

/// As [`exact_rank`], with `P(U <= c)` from the normal approximation `Phi((c + 1/2 - m n / 2)
/// / sigma)`, `sigma^2 = m n (m + n + 1) / 12` (continuity correction, no tie correction).
fn normal_rank(m: usize, n: usize, alpha: f64) -> Result<(usize, f64), Refused> {
    let (mf, nf) = (m as f64, n as f64);
    let sigma = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    let below = |c: usize| 0.5 * erfc(-(c as f64 + 0.5 - mf * nf / 2.0) / (sigma * 2f64.sqrt()));
    if 2.0 * below(0) > alpha {
        return Err(Refused::Unreachable { max_achieved: 1.0 - 2.0 * below(0) });
    }
    // The largest c with 2 P(U <= c) <= alpha, below the middle; rank = c + 1.
    let (mut lo, mut hi) = (0usize, (m * n).div_ceil(2));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if 2.0 * below(mid) <= alpha { lo = mid } else { hi = mid }
    }
    Ok((lo + 1, 1.0 - 2.0 * below(lo)))
}

/// The 1-based nearest ranks `ceil(R (1 - level) / 2)` (at least 1) and `ceil(R (1 + level)
/// / 2)` among `R` sorted resamples.
fn percentile_ranks(resamples: u32, confidence: Rational) -> Result<(usize, usize), Refused> {
    let Rational { num, den } = confidence;
    let r = i128::from(resamples);
    let rank = |part: i128| -> Option<usize> {
        let twice_den = den.checked_mul(2)?;
        let ceil = r.checked_mul(part)?.checked_add(twice_den - 1)? / twice_den;
        usize::try_from(ceil.clamp(1, r)).ok()
    };
    let lo = rank(den - num).ok_or(Refused::Overflow)?;
    let hi = rank(den + num).ok_or(Refused::Overflow)?;
    Ok((lo, hi))
}

/// The lower median of a resample, with replacement, of the sorted sample `sorted`: counts how
/// often each index is drawn, then walks the counts to the `(n - 1) / 2`-th drawn value.
fn resampled_median(sorted: &[i64], rng: &mut SplitMix64, counts: &mut [usize]) -> i64 {
    let n = sorted.len();
    counts.fill(0);
    for _ in 0..n {
        counts[rng.below(n as u64) as usize] += 1;
    }
    let target = (n - 1) / 2;
    let mut seen = 0;
    for (i, &c) in counts.iter().enumerate() {
        seen += c;
        if seen > target {
            return sorted[i];
        }
    }
    sorted[n - 1]
}

/// The complementary error function, by the Chebyshev fit `erfcc` of Numerical Recipes (Press
/// et al., 2nd ed., §6.2): fractional error below 1.2e-7 for every `x`, so p-values keep about
/// seven significant digits even far in the tail.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn q(num: i128, den: i128) -> Rational {
        Rational::new(num, den).unwrap()
    }

    #[test]
    fn summarize_one_to_ten() {
        // n = 10: p10 is element ceil(10/10) - 1 = 0 -> 1; median element 9/2 = 4 -> 5; p90
        // element ceil(90/10) - 1 = 8 -> 9; mean 55/10 = 11/2.
        let s = summarize(&(1..=10).collect::<Vec<_>>()).unwrap();
        assert_eq!(
            s,
            Summary { n: 10, min: 1, p10: 1, median: 5, p90: 9, max: 10, mean: q(11, 2) }
        );
    }

    #[test]
    fn summarize_unsorted_with_ties() {
        // Sorted: 10 10 20 20 20 30 40 50 60 70 80 90 (n = 12). p10: element ceil(1.2) - 1 = 1
        // -> 10; lower median: element 11/2 = 5 -> 30 (the upper one would be 40); p90: element
        // ceil(10.8) - 1 = 10 -> 80; sum 500, mean 500/12 = 125/3.
        let xs = [40, 10, 20, 20, 50, 10, 30, 60, 20, 70, 80, 90];
        let s = summarize(&xs).unwrap();
        assert_eq!(
            s,
            Summary { n: 12, min: 10, p10: 10, median: 30, p90: 80, max: 90, mean: q(125, 3) }
        );
        assert_eq!(summarize(&[]), None);
        let one = summarize(&[-7]).unwrap();
        assert_eq!((one.p10, one.median, one.p90, one.mean), (-7, -7, -7, q(-7, 1)));
    }

    #[test]
    fn summarize_matches_the_analyses_quantiles() {
        for xs in [vec![1, 2, 3, 4], (1..=10).collect(), vec![7], vec![5, 5, 1, 9, 3, 3, 8]] {
            let s = summarize(&xs).unwrap();
            let q = crate::analysis::quantiles_of(&sorted(&xs)).expect("a sample");
            let (min, median, p90, max) = (q.min, q.median, q.p90, q.max);
            assert_eq!((s.min, s.median, s.p90, s.max), (min, median, p90, max), "{xs:?}");
        }
    }

    #[test]
    fn median_difference_and_ratio() {
        // Lower medians: A = [1, 4, 10, 20] -> 4; B = [3, 9, 12] -> 9. Difference 5, ratio 9/4.
        let d = median_difference(&[10, 1, 20, 4], &[12, 3, 9]).unwrap();
        assert_eq!(
            d,
            MedianDifference { median_a: 4, median_b: 9, difference: 5, ratio: Some(q(9, 4)) }
        );
        assert_eq!(median_difference(&[0, 0], &[5]).unwrap().ratio, None);
        assert_eq!(median_difference(&[], &[5]), None);
        // Extremes do not overflow: the difference is an i128.
        let far = median_difference(&[i64::MIN], &[i64::MAX]).unwrap();
        assert_eq!(far.difference, i128::from(i64::MAX) - i128::from(i64::MIN));
    }

    #[test]
    fn null_counts_of_three_against_three() {
        // Partitions of u into at most 3 parts each at most 3, u = 0..=9:
        // 0:{} 1:{1} 2:{2,11} 3:{3,21,111} 4:{31,22,211} 5:{32,311,221} 6:{33,321,222}
        // 7:{331,322} 8:{332} 9:{333}; they sum to C(6, 3) = 20.
        assert_eq!(null_counts(3, 3).unwrap(), vec![1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);
        assert_eq!(null_counts(1, 4).unwrap(), vec![1; 5]);
        assert_eq!(null_counts(2, 3), null_counts(3, 2));
    }

    #[test]
    fn null_counts_match_a_brute_force_enumeration() {
        // Every way to give m of the ranks 0..m+n to A; U counts the B ranks below each A rank.
        for (m, n) in [(4, 4), (3, 5), (2, 6), (5, 4)] {
            let mut counts = vec![0u128; m * n + 1];
            for mask in 0u32..1 << (m + n) {
                if mask.count_ones() as usize != m {
                    continue;
                }
                let mut u = 0;
                let mut b_below = 0;
                for r in 0..m + n {
                    if mask & (1 << r) != 0 {
                        u += b_below;
                    } else {
                        b_below += 1;
                    }
                }
                counts[u] += 1;
            }
            assert_eq!(null_counts(m, n).unwrap(), counts, "{m} against {n}");
        }
    }

    #[test]
    fn null_counts_at_the_cap_fit_and_sum_to_the_binomial() {
        fn binomial(n: u128, k: u128) -> u128 {
            (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
        }
        for (m, n) in [(50, 50), (1, 2500), (2, 1250), (40, 62), (25, 100)] {
            let counts = null_counts(m, n).unwrap();
            assert_eq!(counts.len(), m * n + 1);
            assert_eq!(counts.iter().sum::<u128>(), binomial((m + n) as u128, m as u128));
            // Symmetric about m n / 2.
            assert!(counts.iter().eq(counts.iter().rev()));
        }
        assert_eq!(null_counts(51, 50), None);
    }

    #[test]
    fn mann_whitney_exact_three_against_three() {
        // Every A is below every B: U_A = 0. P(U <= 0) = 1/C(6, 3) = 1/20, two-sided 2/20.
        let t = mann_whitney(&[1, 2, 3], &[4, 5, 6]).unwrap();
        assert_eq!((t.u_a_doubled, t.u_b_doubled), (0, 18));
        assert_eq!(t.method, Method::Exact);
        assert_eq!(t.p_exact, Some(q(1, 10)));
        assert!((t.p_value - 0.1).abs() < 1e-15);
        assert!(t.few_samples && !t.ties);
    }

    #[test]
    fn mann_whitney_exact_four_against_four() {
        // U_A = 0; P(U <= 0) = 1/C(8, 4) = 1/70, two-sided 2/70 = 1/35.
        let t = mann_whitney(&[4, 1, 3, 2], &[8, 6, 7, 5]).unwrap();
        assert_eq!(t.u_a_doubled, 0);
        assert_eq!(t.p_exact, Some(q(2, 70)));
        // Swapped, U_A is at the top (16) and the p-value is the same.
        let s = mann_whitney(&[8, 6, 7, 5], &[4, 1, 3, 2]).unwrap();
        assert_eq!((s.u_a_doubled, s.p_exact), (32, Some(q(1, 35))));
        // Interleaved A = 1 3 5 7, B = 2 4 6 8: U_A = 0 + 1 + 2 + 3 = 6; P(U <= 6) = 24/70
        // (counts 1 1 2 3 5 5 7 for u = 0..=6), two-sided 48/70 = 24/35.
        let i = mann_whitney(&[1, 3, 5, 7], &[2, 4, 6, 8]).unwrap();
        assert_eq!((i.u_a_doubled, i.p_exact), (12, Some(q(24, 35))));
    }

    #[test]
    fn mann_whitney_normal_with_ties_by_hand() {
        // A = 1 2 3 3 4, B = 3 4 5 6 7. Pooled: 1 2 3 3 3 4 4 5 6 7 (N = 10), ranks 1, 2, 4 4 4
        // (the three 3s share ranks 3-5), 6.5 6.5, 8, 9, 10. R_A = 1 + 2 + 4 + 4 + 6.5 = 17.5,
        // U_A = 17.5 - 5*6/2 = 2.5 (2 U_A = 5), U_B = 25 - 2.5 = 22.5 (2 U_B = 45).
        // Ties: a group of 3 and one of 2, sum(t^3 - t) = 24 + 6 = 30.
        // Mean n_a n_b / 2 = 12.5. Variance 25/12 * (11 - 30/(10*9)) = 25/12 * 32/3 = 22.222,
        // sigma = 4.7140. Continuity: |2.5 - 12.5| - 0.5 = 9.5, z = 9.5 / 4.7140 = 2.0153.
        // Table: Phi(2.01) = 0.97778, Phi(2.02) = 0.97831, so Phi(2.0153) = 0.97806 and
        // p = 2 * (1 - 0.97806) = 0.0439.
        let (z, p) = normal_p(5, 5, 5, 30.0);
        assert!((z - 2.0153).abs() < 1e-4, "{z}");
        assert!((p - 0.0439).abs() < 1e-4, "{p}");
        // 25 pairs is in the exact range: the test itself is exact, with the ties.
        let t = mann_whitney(&[1, 2, 3, 3, 4], &[3, 4, 5, 6, 7]).unwrap();
        assert_eq!((t.u_a_doubled, t.u_b_doubled), (5, 45));
        assert!(t.ties);
        assert_eq!(t.method, Method::Exact);
        assert_eq!(t.p_exact, Some(brute_force_p(&[1, 2, 3, 3, 4], &[3, 4, 5, 6, 7])));
        assert!(!t.few_samples);
    }

    /// The two-sided exact p of the rank-sum test by enumerating every way to deal the pooled
    /// values into sides of the same sizes: 2 min(P(2U <= u), P(2U >= u)), at most 1.
    fn brute_force_p(a: &[i64], b: &[i64]) -> Rational {
        let pooled: Vec<i64> = a.iter().chain(b).copied().collect();
        let n = pooled.len();
        let twice_u = |side_a: &[i64], side_b: &[i64]| -> i64 {
            let mut u = 0;
            for x in side_a {
                for y in side_b {
                    u += if x > y {
                        2
                    } else if x == y {
                        1
                    } else {
                        0
                    };
                }
            }
            u
        };
        let observed = twice_u(a, b);
        let (mut total, mut le, mut ge) = (0i128, 0i128, 0i128);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != a.len() {
                continue;
            }
            let (mut sa, mut sb) = (Vec::new(), Vec::new());
            for (i, &v) in pooled.iter().enumerate() {
                if mask & (1 << i) != 0 { sa.push(v) } else { sb.push(v) }
            }
            let u = twice_u(&sa, &sb);
            total += 1;
            le += i128::from(u <= observed);
            ge += i128::from(u >= observed);
        }
        Rational::new((2 * le.min(ge)).min(total), total).unwrap()
    }

    #[test]
    fn exact_p_with_ties_equals_a_brute_force_permutation_count() {
        let cases: [(&[i64], &[i64]); 7] = [
            (&[1, 2, 3], &[4, 5, 6]),
            (&[3, 3, 4], &[4, 5, 5]),
            (&[3, 4, 4], &[4, 4, 5]),
            (&[1, 1, 2, 2], &[2, 3, 3, 3, 4]),
            (&[10, 10, 10, 20], &[10, 20, 20, 30, 30, 30]),
            (&[5, 6, 6, 7, 9, 9], &[6, 8, 9, 9, 9, 10, 11]),
            (&[0, 0, 1], &[0, 1, 1, 1]),
        ];
        for (a, b) in cases {
            let t = mann_whitney(a, b).unwrap();
            assert_eq!(t.method, Method::Exact, "{a:?} {b:?}");
            assert_eq!(t.p_exact, Some(brute_force_p(a, b)), "{a:?} {b:?}");
        }
        // Three against three: the smallest two-sided p is 2/20 = 0.1, whatever the ties (the
        // normal approximation gave 0.064).
        let t = mann_whitney(&[1, 2, 3], &[4, 5, 6]).unwrap();
        assert_eq!(t.p_exact, Some(q(1, 10)));
        // Without ties, the tied distribution is the no-tie one at even values of 2U.
        let tied = tied_null_counts(&[1, 3, 5, 7], &[2, 4, 6, 8, 9]).unwrap();
        let plain = null_counts(4, 5).unwrap();
        for (u, c) in plain.iter().enumerate() {
            assert_eq!(tied[2 * u], *c);
            if 2 * u + 1 < tied.len() {
                assert_eq!(tied[2 * u + 1], 0);
            }
        }
    }

    #[test]
    fn mann_whitney_all_equal_and_too_few() {
        let t = mann_whitney(&[5, 5, 5], &[5, 5]).unwrap();
        assert_eq!((t.u_a_doubled, t.u_b_doubled, t.p_value), (6, 6, 1.0));
        assert_eq!(mann_whitney(&[1], &[2, 3]), Err(Refused::TooFew { side: Side::A, n: 1 }));
        assert_eq!(mann_whitney(&[1, 2], &[]), Err(Refused::TooFew { side: Side::B, n: 0 }));
    }

    #[test]
    fn mann_whitney_normal_beyond_the_exact_cap() {
        // 60 against 60 without ties: every A below every B, so U_A = 0, far in the tail.
        let a: Vec<i64> = (0..60).collect();
        let b: Vec<i64> = (100..160).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.method, Method::Normal);
        assert!(t.p_value > 0.0 && t.p_value < 1e-15, "{}", t.p_value);
    }

    #[test]
    fn hodges_lehmann_three_against_three_by_hand() {
        // Differences b - a for A = 1 2 3, B = 4 5 6: 3 2 1 / 4 3 2 / 5 4 3, sorted
        // 1 2 2 3 3 3 4 4 5; the median (5th of 9) is 3.
        // Null counts of U for 3 against 3 (out of 20): 1 1 2 3 ..., so P(U <= 0) = 1/20,
        // P(U <= 1) = 2/20, P(U <= 2) = 4/20.
        // At 80%, alpha/2 = 1/10: the largest C with P(U <= C - 1) <= 1/10 is C = 2, interval
        // [2nd, 8th] = [2, 4], level 1 - 2 * 2/20 = 4/5.
        let h = hodges_lehmann(&[1, 2, 3], &[4, 5, 6], q(8, 10)).unwrap();
        assert_eq!(h.estimate, q(3, 1));
        assert_eq!((h.low, h.high, h.rank, h.pairs), (2, 4, 2, 9));
        assert_eq!((h.method, h.achieved_exact), (Method::Exact, Some(q(4, 5))));
        // At 90%, alpha/2 = 1/20: C = 1, interval [1st, 9th] = [1, 5], level 1 - 2/20 = 9/10.
        let h = hodges_lehmann(&[1, 2, 3], &[4, 5, 6], q(9, 10)).unwrap();
        assert_eq!((h.low, h.high, h.rank, h.achieved_exact), (1, 5, 1, Some(q(9, 10))));
        // At 95%, alpha/2 = 1/40 < P(U <= 0): even [1, 5] covers only 90%.
        assert_eq!(
            hodges_lehmann(&[1, 2, 3], &[4, 5, 6], q(95, 100)),
            Err(Refused::Unreachable { max_achieved: 0.9 })
        );
    }

    #[test]
    fn hodges_lehmann_even_number_of_differences() {
        // A = 0 1, B = 10 13: differences 10 9 13 12, sorted 9 10 12 13, median (10 + 12)/2 = 11.
        let h = hodges_lehmann(&[0, 1], &[10, 13], q(1, 2)).unwrap();
        assert_eq!(h.estimate, q(11, 1));
        // A = 0 1, B = 10 12: sorted 9 10 11 12, median 21/2.
        let h = hodges_lehmann(&[0, 1], &[10, 12], q(1, 2)).unwrap();
        assert_eq!(h.estimate, q(21, 2));
    }

    #[test]
    fn hodges_lehmann_refusals() {
        assert_eq!(
            hodges_lehmann(&[1, 2], &[3], q(9, 10)),
            Err(Refused::TooFew { side: Side::B, n: 1 })
        );
        assert_eq!(
            hodges_lehmann(&[1, 2], &[3, 4], Rational::int(1)),
            Err(Refused::BadConfidence { num: 1, den: 1 })
        );
        let big = vec![0i64; 1001];
        assert_eq!(
            hodges_lehmann(&big, &big, q(95, 100)),
            Err(Refused::TooManyPairs { pairs: 1001 * 1001 })
        );
    }

    #[test]
    fn hodges_lehmann_normal_rank_near_the_textbook_value() {
        // 60 against 60: mean 1800, sigma^2 = 3600 * 121 / 12 = 36300, sigma = 190.53. At 95%
        // C = 1800 - 1.96 * 190.53 - 0.5 + 1 = 1427.07, so C = 1427 (largest with the
        // continuity-corrected tail at most 2.5%).
        let a: Vec<i64> = (0..60).collect();
        let b: Vec<i64> = (0..60).map(|x| x * 3 + 1000).collect();
        let h = hodges_lehmann(&a, &b, q(95, 100)).unwrap();
        assert_eq!((h.method, h.rank), (Method::Normal, 1427));
        assert!(h.achieved >= 0.95 && h.achieved < 0.9502, "{}", h.achieved);
        assert!(h.low <= h.high);
    }

    #[test]
    fn splitmix64_reference_outputs_for_seed_zero() {
        let mut g = SplitMix64::new(0);
        assert_eq!(
            [g.next_u64(), g.next_u64(), g.next_u64()],
            [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F]
        );
    }

    #[test]
    fn lemire_draws_are_pinned_and_in_range() {
        // floor(x * 10 / 2^64) for the three outputs above: 0.883..., 0.431..., 0.026... of 10.
        let mut g = SplitMix64::new(0);
        assert_eq!([g.below(10), g.below(10), g.below(10)], [8, 4, 0]);
        let mut g = SplitMix64::new(DEFAULT_SEED);
        for bound in [1, 2, 3, 7, 1000, u64::MAX] {
            assert!((0..100).all(|_| g.below(bound) < bound));
        }
    }

    #[test]
    fn percentile_ranks_are_nearest_ranks() {
        // 10000 * 0.025 = 250 and 10000 * 0.975 = 9750 exactly; 999 * 0.05 = 49.95 -> 50 and
        // 999 * 0.95 = 949.05 -> 950.
        assert_eq!(percentile_ranks(10_000, q(95, 100)), Ok((250, 9750)));
        assert_eq!(percentile_ranks(999, q(9, 10)), Ok((50, 950)));
        assert_eq!(percentile_ranks(1, q(1, 2)), Ok((1, 1)));
    }

    #[test]
    fn bootstrap_is_reproducible() {
        let a = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
        let b = [5, 8, 9, 7, 9, 3, 2, 3, 8, 4];
        let one = bootstrap_median_difference(&a, &b, q(95, 100), 2000, 42).unwrap();
        let two = bootstrap_median_difference(&a, &b, q(95, 100), 2000, 42).unwrap();
        assert_eq!(one, two);
        assert_eq!((one.seed, one.resamples, one.observed), (42, 2000, 2));
        // The order of the values does not matter, only the values.
        let mut shuffled = a;
        shuffled.reverse();
        let three = bootstrap_median_difference(&shuffled, &b, q(95, 100), 2000, 42).unwrap();
        assert_eq!(one, three);
        assert!(one.low <= one.observed && one.observed <= one.high);
    }

    #[test]
    fn bootstrap_draws_are_pinned() {
        // Pinned against a separate Python rendering of the documented draws (SplitMix64,
        // Lemire, n_a indices into sorted A then n_b into sorted B per resample, lower medians,
        // nearest ranks ceil(R (1 -+ level) / 2)): a change of these ends changes the draws.
        let a = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
        let b = [5, 8, 9, 7, 9, 3, 2, 3, 8, 4];
        let r = bootstrap_median_difference(&a, &b, q(95, 100), 2000, 42).unwrap();
        assert_eq!((r.low, r.high), (-1, 6));
        // Ranks 50 and 450 of 500 resamples.
        let a = [120, 95, 130, 101, 99, 143, 88, 110];
        let b = [131, 150, 99, 160, 142, 137, 155];
        let r = bootstrap_median_difference(&a, &b, q(8, 10), 500, 7).unwrap();
        assert_eq!((r.low, r.high, r.observed), (21, 54, 142 - 101));
    }

    #[test]
    fn bootstrap_of_a_constant_shift_of_a_constant_sample() {
        // Every resample of A is all 50 and of B all 150: each difference is exactly 100.
        let a = [50; 8];
        let b = [150; 8];
        let r = bootstrap_median_difference(&a, &b, q(95, 100), DEFAULT_RESAMPLES, DEFAULT_SEED)
            .unwrap();
        assert_eq!((r.low, r.high, r.observed), (100, 100, 100));
        assert!(!r.few_samples);
    }

    #[test]
    fn bootstrap_of_separated_samples_excludes_zero() {
        // Every resampled median of A is in 1..=20 and of B in 1001..=1020.
        let a: Vec<i64> = (1..=20).collect();
        let b: Vec<i64> = (1001..=1020).collect();
        let r = bootstrap_median_difference(&a, &b, q(99, 100), 1000, DEFAULT_SEED).unwrap();
        assert!(r.low >= 981 && r.high <= 1019, "{r:?}");
        assert!(r.low > 0);
    }

    #[test]
    fn bootstrap_refusals() {
        assert_eq!(
            bootstrap_median_difference(&[1], &[2, 3], q(9, 10), 10, 0),
            Err(Refused::TooFew { side: Side::A, n: 1 })
        );
        assert_eq!(
            bootstrap_median_difference(&[1, 2], &[2, 3], q(9, 10), 0, 0),
            Err(Refused::NoResamples)
        );
        assert_eq!(
            bootstrap_median_difference(&[1, 2], &[2, 3], q(0, 1), 10, 0),
            Err(Refused::BadConfidence { num: 0, den: 1 })
        );
    }

    #[test]
    fn erfc_is_within_its_stated_accuracy() {
        // Reference values of erfc to 16 digits.
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_1),
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (-1.0, 1.842_700_792_949_715),
        ] {
            let got = erfc(x);
            assert!(((got - want) / want).abs() < 1.2e-7, "erfc({x}) = {got}, want {want}");
        }
    }

    /// Two samples of distinct values (no ties across or within sides), each of 2 or more.
    fn distinct_sides() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
        proptest::collection::btree_set(-1000i64..1000, 4..40)
            .prop_flat_map(|set| {
                let v: Vec<i64> = set.into_iter().collect();
                let n = v.len();
                (Just(v).prop_shuffle(), 2..=n - 2)
            })
            .prop_map(|(v, k)| (v[..k].to_vec(), v[k..].to_vec()))
    }

    fn sides() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
        let side = proptest::collection::vec(-20i64..20, 2..25);
        (side.clone(), side)
    }

    /// The normal approximation beyond the exact range equals scipy's. The constants come
    /// from scipy 1.17.1, computed offline with:
    ///
    /// ```python
    /// from scipy.stats import mannwhitneyu
    /// cases = {
    ///  "distinct_60_45": ([2*i for i in range(60)], [2*i + 31 for i in range(45)]),
    ///  "ties_60_50": ([i % 7 for i in range(60)], [(i % 9) for i in range(50)]),
    ///  "mixed_51_50": ([(i*37) % 101 for i in range(51)], [(i*53) % 97 + 5 for i in range(50)]),
    /// }
    /// for k, (a, b) in cases.items():
    ///     r = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    ///     print(k, len(a) * len(b), r.statistic, repr(r.pvalue))
    /// ```
    #[test]
    fn the_normal_approximation_beyond_the_exact_range_matches_scipy() {
        let v = |n: i64, f: &dyn Fn(i64) -> i64| (0..n).map(f).collect::<Vec<i64>>();
        let cases: [(Vec<i64>, Vec<i64>, f64, f64); 3] = [
            (v(60, &|i| 2 * i), v(45, &|i| 2 * i + 31), 990.0, 0.019920152345750133),
            (v(60, &|i| i % 7), v(50, &|i| i % 9), 1208.0, 0.07778303533901786),
            (v(51, &|i| (i * 37) % 101), v(50, &|i| (i * 53) % 97 + 5), 1255.0, 0.8946209100464817),
        ];
        for (a, b, u, p) in cases {
            assert!(a.len() * b.len() > EXACT_MAX_PAIRS);
            let t = mann_whitney(&a, &b).unwrap();
            assert_eq!(t.method, Method::Normal);
            assert_eq!(t.u_a_doubled as f64, 2.0 * u);
            assert!((t.p_value - p).abs() <= 1e-6 * p, "{} against scipy {p}", t.p_value);
        }
    }

    #[test]
    fn the_ratio_interval_ends_are_the_pairwise_ratios_of_the_shift_ranks() {
        let a = [90, 100, 110, 95, 105, 120];
        let b = [50, 60, 55, 70, 45, 65, 58];
        let level = q(95, 100);
        let r = ratio_interval(&a, &b, level).unwrap();
        // The same ranks as the shift interval of the same sizes.
        assert_eq!(r.rank, hodges_lehmann(&a, &b, level).unwrap().rank);
        // Brute force: every ratio as a float, sorted.
        let mut all: Vec<f64> =
            b.iter().flat_map(|&y| a.iter().map(move |&x| y as f64 / x as f64)).collect();
        all.sort_by(f64::total_cmp);
        let f = |(y, x): (i64, i64)| y as f64 / x as f64;
        assert_eq!(f(r.low), all[r.rank - 1]);
        assert_eq!(f(r.high), all[all.len() - r.rank]);
        assert_eq!(f(r.estimate), all[(all.len() - 1) / 2]);
        // Shift of the logarithms: the log of the ratio interval is the interval of logs.
        assert!(f(r.low) > 0.0 && f(r.low) < f(r.high));
        assert!(f(r.high) < 1.0, "B is about 0.55 A: the interval excludes no change");
        assert_eq!(ratio_interval(&[3, 0], &b, level), Err(Refused::NotPositive { value: 0 }));
    }

    #[test]
    fn the_minimum_detectable_shift_follows_its_formula() {
        // a: mean 4, squares 1 + 0 + 1 + 0 = 2; b: mean 6, squares 4 + 0 + 4 + 0 = 8.
        let (a, b) = ([3, 4, 5, 4], [4, 6, 8, 6]);
        let s = (10.0f64 / 6.0).sqrt();
        let want =
            (1.959964 + 0.841621) * s * (0.5f64).sqrt() * (std::f64::consts::PI / 3.0).sqrt();
        let got = min_detectable_shift(&a, &b).unwrap();
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        assert_eq!(min_detectable_shift(&[1], &b), None);
    }

    proptest! {
        #[test]
        fn u_a_and_u_b_add_up((a, b) in sides()) {
            let t = mann_whitney(&a, &b).unwrap();
            prop_assert_eq!(t.u_a_doubled + t.u_b_doubled, 2 * (a.len() * b.len()) as u64);
            prop_assert!(t.p_value > 0.0 && t.p_value <= 1.0);
            let s = mann_whitney(&b, &a).unwrap();
            prop_assert_eq!((s.u_a_doubled, s.u_b_doubled), (t.u_b_doubled, t.u_a_doubled));
        }

        #[test]
        fn exact_p_values_are_probabilities((a, b) in distinct_sides()) {
            let t = mann_whitney(&a, &b).unwrap();
            prop_assert_eq!(t.method, Method::Exact);
            let p = t.p_exact.unwrap();
            prop_assert!(p.num > 0 && p.num <= p.den);
            prop_assert!(t.p_value > 0.0 && t.p_value <= 1.0);
            prop_assert_eq!(t.u_a_doubled + t.u_b_doubled, 2 * (a.len() * b.len()) as u64);
            prop_assert_eq!(mann_whitney(&b, &a).unwrap().p_exact, Some(p));
        }

        #[test]
        fn swapping_sides_negates_the_shift((a, b) in sides(), pct in 50i128..99) {
            let level = q(pct, 100);
            match (hodges_lehmann(&a, &b, level), hodges_lehmann(&b, &a, level)) {
                (Ok(ab), Ok(ba)) => {
                    prop_assert_eq!(ba.estimate, ab.estimate.checked_neg().unwrap());
                    prop_assert_eq!((ba.low, ba.high), (-ab.high, -ab.low));
                    prop_assert_eq!(ba.achieved_exact, ab.achieved_exact);
                    prop_assert!(ab.low <= ab.high);
                    let e = ab.estimate;
                    prop_assert!(Rational::int(ab.low).cmp_to(e) != Ordering::Greater);
                    prop_assert!(Rational::int(ab.high).cmp_to(e) != Ordering::Less);
                }
                (Err(x), Err(y)) => prop_assert_eq!(x, y),
                (x, y) => prop_assert!(false, "{:?} vs {:?}", x, y),
            }
        }
    }
}
