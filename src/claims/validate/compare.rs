//! A `compare` measure: two sides, each checked as a measure of the compared analysis over its
//! own scope, then the comparison's own keys (`split`, `same_length`, `seed`, `sample`), the
//! devices it is judged on and its formula over the fields of `compare`. It binds a
//! comparison; it never runs one.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::{Checker, DEFAULT_SAME_LENGTH, at, formula_over, measure_unit, runs_of};
use crate::analysis;
use crate::analysis::compare::SampleUnit;
use crate::claims::raw::{RawMeasure, RawScope};
use crate::claims::{Compare, Measure, Quantity, Scope, Unit};
use crate::formula::Expr;
use crate::scope::DeviceSel;

/// The keys of a `compare` measure besides the compared analysis's own parameters.
const COMPARE_KEYS: [&str; 7] =
    ["versus", "of", "metric", "split", "seed", "same_length", "sample"];

/// A `compare` measure whose required keys are all there, with what its steps share.
struct Comparison<'a> {
    /// The measure as written.
    outer: &'a Spanned<RawMeasure>,
    /// The part it belongs to, for its errors.
    what: &'a str,
    /// The declared scopes.
    scopes: &'a BTreeMap<String, Scope>,
    /// The declared scopes as written, for a suggestion.
    raw_scopes: &'a BTreeMap<String, RawScope>,
    /// Side A's scope.
    scope_a: &'a Spanned<String>,
    /// The comparison's formula over the fields of `compare`.
    value: &'a Spanned<String>,
    /// Side B's scope.
    versus: &'a Spanned<String>,
    /// The compared analysis.
    of: &'a Spanned<String>,
    /// What each side computes over the compared analysis's fields.
    metric: &'a Spanned<String>,
    /// The compared analysis's own parameters, given to both sides.
    rest: Vec<(String, Spanned<String>)>,
}

/// A `compare` measure: each side validated as a measure of `of` over its scope with the
/// metric as its value (so its errors point at the same keys), then the comparison's own
/// formula over the fields of `compare`.
pub(super) fn measurement(
    c: &mut Checker,
    outer: &Spanned<RawMeasure>,
    what: &str,
    scopes: &BTreeMap<String, Scope>,
    raw_scopes: &BTreeMap<String, RawScope>,
) -> Option<Measure> {
    let cmp = Comparison::new(c, outer, what, scopes, raw_scopes)?;
    let (scope_a, versus, of, metric) = (cmp.scope_a, cmp.versus, cmp.of, cmp.metric);
    if let Some(spec) = analysis::spec(&of.value)
        && !analysis::is_comparable(spec.name)
    {
        c.err(
            at(of),
            format!("{what}: `compare` cannot compare `{}`", of.value),
            Some(format!("compare one of: {}", analysis::comparable_names())),
        );
        return None;
    }
    let split = cmp.split(c);
    let same_length = cmp.same_length(c)?;
    let seed = cmp.seed(c);
    cmp.check_split_scopes(c, split);
    let a = cmp.side(c, scope_a, "A", split);
    let b = cmp.side(c, versus, "B", split);
    let spec = &analysis::compare::SPEC;
    let value_expr = formula_over(c, cmp.value, spec, what, false)?;
    let (a, b) = (a?, b?);
    let runs = cmp.runs(&a, &b);
    let sample = cmp.sample(c, &runs);
    let devices = cmp.devices(c, &a, &b, &runs);
    let unit = cmp.unit(c, &value_expr, &a);
    let mut args: Vec<(String, String)> = vec![
        ("versus".into(), versus.value.clone()),
        ("of".into(), of.value.clone()),
        ("metric".into(), metric.value.clone()),
    ];
    args.extend(a.args.iter().cloned());
    if cmp.key("seed").is_some() {
        args.push(("seed".into(), seed.to_string()));
    }
    Some(Measure {
        analysis: spec.name.to_string(),
        scope: scope_a.value.clone(),
        value_text: cmp.value.value.clone(),
        value: value_expr,
        unit,
        args,
        params: a.params.clone(),
        compare: Some(Box::new(Compare {
            of: of.value.clone(),
            metric_text: metric.value.clone(),
            versus: versus.value.clone(),
            split,
            seed,
            same_length,
            sample: sample?,
            sides: [a, b],
            runs,
            devices,
        })),
        ranks: None,
        over: None,
    })
}

impl<'a> Comparison<'a> {
    /// The comparison of `outer`, if it gives every key a comparison requires; each one
    /// missing is reported.
    fn new(
        c: &mut Checker,
        outer: &'a Spanned<RawMeasure>,
        what: &'a str,
        scopes: &'a BTreeMap<String, Scope>,
        raw_scopes: &'a BTreeMap<String, RawScope>,
    ) -> Option<Self> {
        let raw = &outer.value;
        let key = |k: &str| raw.params.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        let mut missing = false;
        for (name, present) in [
            ("scope", raw.scope.is_some()),
            ("value", raw.value.is_some()),
            ("versus", key("versus").is_some()),
            ("of", key("of").is_some()),
            ("metric", key("metric").is_some()),
        ] {
            if !present {
                missing = true;
                c.err(
                    at(outer),
                    format!("{what}: a `compare` measure has no `{name}`"),
                    Some("compare: {analysis: compare, scope: A, versus: B, of: ANALYSIS, metric: FORMULA, value: FORMULA} (docs/claims.md, A/B comparisons)".into()),
                );
            }
        }
        if missing {
            return None;
        }
        Some(Comparison {
            outer,
            what,
            scopes,
            raw_scopes,
            scope_a: raw.scope.as_ref()?,
            value: raw.value.as_ref()?,
            versus: key("versus")?,
            of: key("of")?,
            metric: key("metric")?,
            rest: raw
                .params
                .iter()
                .filter(|(n, _)| !COMPARE_KEYS.contains(&n.as_str()))
                .cloned()
                .collect(),
        })
    }

    /// The value of key `k` of the measure, if it gives one.
    fn key(&self, k: &str) -> Option<&'a Spanned<String>> {
        self.outer.value.params.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }

    /// `split`: a number of equal windows, each one sample.
    fn split(&self, c: &mut Checker) -> Option<u32> {
        let v = self.key("split")?;
        match v.value.trim().parse::<u32>() {
            Ok(n) if (2..=analysis::MAX_SPLITS).contains(&n) => Some(n),
            _ => {
                c.err(
                    at(v),
                    format!("{}: `split` is `{}`", self.what, v.value),
                    Some(format!("a number of equal windows, 2 to {}", analysis::MAX_SPLITS)),
                );
                None
            }
        }
    }

    /// Gate R1's "same length" of the two sides' windows, as a share of the longer (1%: splits
    /// of two runs are rarely equal to the nanosecond); the default stands in for a bad one.
    fn same_length(&self, c: &mut Checker) -> Option<Quantity> {
        let Some(v) = self.key("same_length") else {
            return Quantity::parse(DEFAULT_SAME_LENGTH, Unit::Percent);
        };
        match Quantity::parse(&v.value, Unit::Percent) {
            Some(q)
                if q.unit == Unit::Percent
                    && q.value.num >= 0
                    && q.value.cmp_to(crate::formula::Rational::int(1))
                        != std::cmp::Ordering::Greater =>
            {
                Some(q)
            }
            _ => {
                c.err(
                    at(v),
                    format!("{}: `same_length` is `{}`", self.what, v.value),
                    Some(
                        "a percentage of the longer side's window length, 0% to 100% (default 1%)"
                            .into(),
                    ),
                );
                Quantity::parse(DEFAULT_SAME_LENGTH, Unit::Percent)
            }
        }
    }

    /// `seed`: the resampling's seed; the default stands in for a bad one.
    fn seed(&self, c: &mut Checker) -> u64 {
        let Some(v) = self.key("seed") else { return crate::stats::DEFAULT_SEED };
        match v.value.trim().parse::<u64>() {
            Ok(n) => n,
            Err(_) => {
                c.err(
                    at(v),
                    format!("{}: `seed` is `{}`", self.what, v.value),
                    Some("a whole number, 0 to 2^64 - 1".into()),
                );
                crate::stats::DEFAULT_SEED
            }
        }
    }

    /// A `split` of a side whose window comes from NVTX ranges, reported: those ranges are
    /// samples already.
    fn check_split_scopes(&self, c: &mut Checker, split: Option<u32>) {
        let (Some(_), Some(v)) = (split, self.key("split")) else { return };
        for sc in [self.scope_a, self.versus] {
            if self.scopes.get(&sc.value).is_some_and(|s| s.nvtx.is_some()) {
                c.err(
                    at(v),
                    format!("{}: `split` with scope `{}`, whose window comes from NVTX ranges", self.what, sc.value),
                    Some("NVTX ranges with `index: all` are already one sample per range; split a window given in seconds or the whole trace".into()),
                );
            }
        }
    }

    /// One side (`label`, over `scope`): a measure of the compared analysis with the metric
    /// as its value and the comparison's `split`.
    fn side(
        &self,
        c: &mut Checker,
        scope: &Spanned<String>,
        label: &str,
        split: Option<u32>,
    ) -> Option<Measure> {
        let raw_side = RawMeasure {
            analysis: Some(self.of.clone()),
            scope: Some(scope.clone()),
            value: Some(self.metric.clone()),
            unit: None,
            params: self.rest.clone(),
        };
        let spanned = Spanned::new(raw_side, self.outer.referenced, self.outer.defined);
        c.compare_side = true;
        let what = format!("{} (side {label})", self.what);
        let m = super::measurement(c, &spanned, &what, self.scopes, self.raw_scopes);
        c.compare_side = false;
        let mut m = m?;
        if let Some(n) = split {
            m.params.split = Some(n);
            m.args.push(("split".into(), n.to_string()));
        }
        Some(m)
    }

    /// Sides over runs: each side's measure on each of its runs' scopes (none for a side of
    /// one capture).
    fn runs(&self, a: &Measure, b: &Measure) -> [Vec<Measure>; 2] {
        let runs =
            [runs_of(self.scopes, &self.scope_a.value), runs_of(self.scopes, &self.versus.value)];
        let over = |m: &Measure, scope: &str| Measure { scope: scope.to_string(), ..m.clone() };
        [runs[0].iter().map(|n| over(a, n)).collect(), runs[1].iter().map(|n| over(b, n)).collect()]
    }

    /// What one sample is: the one the sides' scopes give (a run, an NVTX step or a window),
    /// and the one `sample` names, which must be the same.
    fn sample(&self, c: &mut Checker, runs: &[Vec<Measure>; 2]) -> Option<SampleUnit> {
        let what = self.what;
        let nvtx =
            |sc: &Spanned<String>| self.scopes.get(&sc.value).is_some_and(|s| s.nvtx.is_some());
        let found = match (runs[0].is_empty(), runs[1].is_empty()) {
            (false, false) => Some(SampleUnit::Run),
            (true, true) if nvtx(self.scope_a) && nvtx(self.versus) => Some(SampleUnit::Step),
            (true, true) => Some(SampleUnit::Window),
            _ => {
                c.err(
                    at(self.outer),
                    format!("{what}: one side is over runs and the other is one capture"),
                    Some("declare both sides' traces with `runs: true` (two or more runs each), or neither".into()),
                );
                None
            }
        };
        match (self.key("sample"), found) {
            (None, found) => found,
            (Some(v), found) => match SampleUnit::parse(v.value.trim()) {
                None => {
                    c.err(
                        at(v),
                        format!("{what}: `sample` is `{}`", v.value),
                        Some("`run` (one trace per run, `runs: true`), `step` (NVTX ranges of one capture) or `window` (equal splits or one window of one capture)".into()),
                    );
                    None
                }
                Some(u) if found.is_some_and(|f| f != u) => {
                    let f = found.expect("checked");
                    c.err(
                        at(v),
                        format!("{what}: `sample: {}`, but the sides' scopes give one sample per {}", u.as_str(), f.as_str()),
                        Some(match u {
                            SampleUnit::Run => "a run is one trace: declare each side's trace with `runs: true` and a list or glob of two or more files".into(),
                            SampleUnit::Step => "steps are NVTX ranges: give both scopes `window: {nvtx: \"ProfilerStep#*\", index: all}`".into(),
                            SampleUnit::Window => format!("the scopes give {}s: write `sample: {}`", f.as_str(), f.as_str()),
                        }),
                    );
                    None
                }
                Some(u) => Some(u),
            },
        }
    }

    /// A per-device analysis over several devices: one comparison per device, the same
    /// devices on both sides (sides `a` and `b`), over one capture each.
    fn devices(
        &self,
        c: &mut Checker,
        a: &Measure,
        b: &Measure,
        runs: &[Vec<Measure>; 2],
    ) -> Vec<(i64, [Measure; 2])> {
        let per_device = analysis::spec(&self.of.value)
            .is_some_and(|s| s.scope == analysis::ScopeRule::PerDevice);
        let mut devices = Vec::new();
        if let (true, DeviceSel::Set(da), DeviceSel::Set(db)) =
            (per_device, &a.params.devices, &b.params.devices)
            && (da.len() > 1 || db.len() > 1)
        {
            if da != db || !runs[0].is_empty() {
                c.err(
                    at(self.outer),
                    format!("{}: a comparison over several devices needs the same devices on both sides, over one capture each", self.what),
                    Some("give both scopes the same `devices` (such as `0-1`), or name one device per side".into()),
                );
            } else {
                for &d in da {
                    let one = |m: &Measure| {
                        let mut m = m.clone();
                        m.params.devices = DeviceSel::Set(vec![d]);
                        m.args.push(("device".into(), d.to_string()));
                        m
                    };
                    devices.push((d, [one(a), one(b)]));
                }
            }
        }
        devices
    }

    /// The comparison's unit: its `unit`, else a percentage for a relative change
    /// (`value_expr` reads a ratio field), else what the metric's unit (side `a`'s) gives a
    /// difference.
    fn unit(&self, c: &mut Checker, value_expr: &Expr, a: &Measure) -> Unit {
        let metric_unit = analysis::spec(&self.of.value).map_or(analysis::Unit::Ratio, |s| {
            analysis::compare::metric_unit(s, &a.value, &self.metric.value)
        });
        let relative = value_expr.vars().iter().any(|v| {
            analysis::compare::SPEC.field(v).is_some_and(|f| f.unit == analysis::Unit::Ratio)
        });
        match &self.outer.value.unit {
            Some(u) => measure_unit(c, u, self.what),
            None if relative => Unit::Percent,
            None => match metric_unit {
                analysis::Unit::Ns => Unit::Ms,
                analysis::Unit::Ratio => Unit::PercentagePoints,
                _ => Unit::Count,
            },
        }
    }
}
