//! The meaning layer: every stage checked at a sample rate (each type's own checks are in
//! `stages/`, with the field checks they share here in [`Check`]), then designed and
//! fused, with the chain's limits and the float64 conditioning check.
// `!(x <= limit)` on purpose throughout: a NaN must fail these checks too.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use super::{
    Chain, ChainError, DesignedChain, DesignedStage, StageKind, LIMITS_DOC,
    MAX_GAIN_DB, MAX_GIVEN_TAPS, MAX_IIR_ORDER, MAX_SECTIONS, MAX_STAGES, MAX_TOTAL_TAPS,
};
use crate::design::{self, Cutoff, Response, Sos};

/// Checks for one stage; each failure names the field.
pub(super) struct Check<'a> {
    index: usize,
    stage_type: &'a str,
    pub(super) fs: f64,
}

impl Check<'_> {
    pub(super) fn fail(&self, field: &str, message: String) -> ChainError {
        ChainError::Stage {
            index: self.index,
            stage_type: self.stage_type.to_string(),
            field: field.to_string(),
            message,
        }
    }

    pub(super) fn finite(&self, field: &str, v: f64) -> Result<f64, ChainError> {
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.fail(field, format!("{field} {v} is not a finite number")))
        }
    }

    pub(super) fn positive(&self, field: &str, v: f64) -> Result<f64, ChainError> {
        if self.finite(field, v)? > 0.0 {
            Ok(v)
        } else {
            Err(self.fail(field, format!("{field} {v} must be greater than 0")))
        }
    }

    /// A frequency strictly between 0 and Nyquist.
    pub(super) fn frequency(&self, field: &str, f: f64) -> Result<f64, ChainError> {
        let nyquist = self.fs / 2.0;
        self.finite(field, f)?;
        if f <= 0.0 {
            Err(self.fail(field, format!("{field} {f} must be greater than 0 Hz")))
        } else if f >= nyquist {
            Err(self.fail(field, format!("{field} {f} is above Nyquist ({nyquist} Hz at fs={})", self.fs)))
        } else {
            Ok(f)
        }
    }

    pub(super) fn cutoff(&self, response: Response, cutoff: Cutoff) -> Result<Cutoff, ChainError> {
        let field = "cutoff_hz";
        match (response.is_band(), cutoff) {
            (false, Cutoff::Single(f)) => Ok(Cutoff::Single(self.frequency(field, f)?)),
            (true, Cutoff::Band(lo, hi)) => {
                self.frequency(field, lo)?;
                self.frequency(field, hi)?;
                if lo >= hi {
                    return Err(self.fail(field, format!("{field} [{lo}, {hi}]: low must be below high")));
                }
                Ok(cutoff)
            }
            (true, Cutoff::Single(f)) => Err(self.fail(
                field,
                format!("{field} {f} must be a pair [low, high] for a {} response", response.name()),
            )),
            (false, Cutoff::Band(lo, hi)) => Err(self.fail(
                field,
                format!("{field} [{lo}, {hi}] must be a single number for a {} response", response.name()),
            )),
        }
    }

    /// A gain in dB within `±MAX_GAIN_DB`.
    pub(super) fn gain_db(&self, field: &str, g: f64) -> Result<f64, ChainError> {
        if self.finite(field, g)?.abs() <= MAX_GAIN_DB {
            Ok(g)
        } else {
            Err(self.fail(
                field,
                format!("{field} {g} is outside -{MAX_GAIN_DB}..={MAX_GAIN_DB} dB (no float32 signal stays finite past that; see {LIMITS_DOC})"),
            ))
        }
    }

    pub(super) fn order(&self, order: usize, min: usize) -> Result<usize, ChainError> {
        if (min..=MAX_IIR_ORDER).contains(&order) {
            Ok(order)
        } else {
            Err(self.fail("order", format!("order {order} is out of range ({min}..={MAX_IIR_ORDER})")))
        }
    }

    /// The design must come out finite and stable; a failure here is a numerical limit of
    /// the designer (extreme orders at extreme cutoffs), reported rather than run.
    pub(super) fn designed(&self, field: &str, sections: Vec<Sos>) -> Result<Vec<Sos>, ChainError> {
        match sections.iter().position(|s| !s.is_finite() || !s.is_stable()) {
            None => Ok(sections),
            Some(i) => Err(self.fail(
                field,
                format!("the design is numerically unusable at fs={} (section {i} is not finite and stable); lower the order or move {field}", self.fs),
            )),
        }
    }
}

/// The largest pole radius of a normalised section (roots of `z^2 + a1 z + a2`).
pub(super) fn pole_radius(s: &Sos) -> f64 {
    let n = s.normalized();
    let (a1, a2) = (n.a[1], n.a[2]);
    let disc = a1 * a1 - 4.0 * a2;
    if disc >= 0.0 {
        let r = disc.sqrt();
        ((-a1 + r) / 2.0).abs().max(((-a1 - r) / 2.0).abs())
    } else {
        a2.abs().sqrt()
    }
}

/// One stage, validated and designed: SOS sections or FIR taps.
pub(super) enum Designed {
    Sos(Vec<Sos>),
    Fir(Vec<f64>),
}

/// An analog-matched cut (any order the format allows).
const _: () = assert!(MAX_IIR_ORDER <= design::matched::MAX_CUT_ORDER);
pub(super) fn matched_cut(response: design::Response, order: usize, linkwitz_riley: bool, cutoff_hz: f64, fs: f64) -> Vec<Sos> {
    let mut out = vec![Sos::IDENTITY; design::matched::cut_sections(order)];
    let n = design::matched::cut_matched_into(response, order, linkwitz_riley, cutoff_hz, fs, &mut out);
    out.truncate(n);
    out
}

/// Validates and designs `chain` at `fs`, fusing consecutive SOS-type stages.
pub(super) fn design(chain: &Chain, fs: f64) -> Result<DesignedChain, ChainError> {
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ChainError::SampleRate { fs });
    }
    if chain.stages.len() > MAX_STAGES {
        return Err(ChainError::Limit {
            what: format!("the chain has {} stages, more than {MAX_STAGES}", chain.stages.len()),
        });
    }
    let mut stages: Vec<DesignedStage> = Vec::new();
    let (mut sections, mut taps) = (0usize, 0usize);
    let mut fusion_work = 0usize;
    // The conditioning check (a double-double probe) costs ~30 ns per section-sample:
    // identical stages are checked once, and a chain spends at most this much on it
    // (about 340 stages of order 24; later ones are not checked).
    let mut conditioning: std::collections::HashMap<Vec<u64>, f64> = std::collections::HashMap::new();
    let mut condition_budget: usize = 1 << 25;
    for (index, stage) in chain.stages.iter().enumerate() {
        let check = Check { index, stage_type: stage.kind.type_name(), fs };
        // Disabled stages are validated too: a file is either valid or not.
        let designed = super::stages::design(&check, &stage.kind)?;
        if !stage.enabled {
            continue;
        }
        match &designed {
            Designed::Sos(s) => {
                let cost = s.len() * probe_frames(s);
                let key: Vec<u64> = s.iter().flat_map(|x| x.b.iter().chain(&x.a).map(|v| v.to_bits())).collect();
                let drift = match conditioning.get(&key) {
                    Some(&d) => Some(d),
                    None if needs_condition_check(s) && cost <= condition_budget => {
                        condition_budget -= cost;
                        let mut balanced = s.clone();
                        balance_gains(&mut balanced);
                        let d = float64_drift(&balanced);
                        conditioning.insert(key, d);
                        Some(d)
                    }
                    None => None,
                };
                if let Some(drift) = drift {
                    if !(drift <= MAX_FLOAT64_DRIFT) {
                        let field = if matches!(stage.kind, StageKind::Sos { .. }) { "sections" } else { "order" };
                        return Err(check.fail(
                            field,
                            format!(
                                "the design is too ill-conditioned to run in float64 at fs={fs}: on a test signal its output drifts {drift:.1e} of the peak from exact arithmetic (SciPy's float64 sosfilt is no better here); lower the order or widen the band"
                            ),
                        ));
                    }
                }
                sections += s.len();
                if sections > MAX_SECTIONS {
                    return Err(check.fail(
                        "",
                        format!("the chain reaches more than {MAX_SECTIONS} second-order sections here (see {LIMITS_DOC})"),
                    ));
                }
            }
            Designed::Fir(t) => {
                taps += t.len();
                if taps > MAX_TOTAL_TAPS {
                    return Err(check.fail(
                        "",
                        format!("the chain's FIR stages reach more than {MAX_TOTAL_TAPS} taps here (see {LIMITS_DOC})"),
                    ));
                }
            }
        }
        match (designed, stages.last_mut()) {
            (Designed::Sos(new), Some(DesignedStage::Sos(run))) => run.extend(new),
            (Designed::Sos(new), _) => stages.push(DesignedStage::Sos(new)),
            (Designed::Fir(taps), Some(DesignedStage::Fir(prev)))
                if fusable(prev.len(), taps.len(), &mut fusion_work) =>
            {
                *prev = convolve(prev, &taps);
            }
            (Designed::Fir(taps), _) => stages.push(DesignedStage::Fir(taps)),
        }
    }
    // Fold pure-gain sections into a neighbour of their cascade (one section less to run),
    // then spread the cascade's gain evenly over its sections.
    for stage in stages.iter_mut() {
        if let DesignedStage::Sos(run) = stage {
            fold_gains(run);
            balance_gains(run);
        }
    }
    Ok(DesignedChain { fs, stages })
}

/// Multiply-adds that FIR fusion may spend on one chain: a chain of thousands of FIR
/// stages would otherwise cost time quadratic in their number (each fusion convolves the
/// growing kernel again). Past it, FIRs stay separate stages.
const FUSION_WORK_BUDGET: usize = 200_000_000;

/// Consecutive FIRs run as one kernel (their convolution, computed in `f64`) when the
/// result stays within the given-FIR limit and the convolution is cheap to compute here
/// (`work` counts what the chain's fusions have spent); one longer FIR costs less than
/// two (FFT levels grow logarithmically) and the signal is not rounded to `f32` between
/// them.
fn fusable(a: usize, b: usize, work: &mut usize) -> bool {
    let cost = a.saturating_mul(b);
    let ok = a + b - 1 <= MAX_GIVEN_TAPS && cost <= 50_000_000 && *work + cost <= FUSION_WORK_BUDGET;
    if ok {
        *work += cost;
    }
    ok
}

/// Full linear convolution of two kernels.
fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, &x) in a.iter().enumerate() {
        for (o, &y) in out[i..].iter_mut().zip(b) {
            *o += x * y;
        }
    }
    out
}

/// Multiplies every pure-gain section of a cascade into its first other section.
fn fold_gains(run: &mut Vec<Sos>) {
    let is_gain = |s: &Sos| s.b[1] == 0.0 && s.b[2] == 0.0 && s.a[1] == 0.0 && s.a[2] == 0.0;
    let total: f64 = run.iter().filter(|s| is_gain(s)).map(|s| s.b[0] / s.a[0]).product();
    run.retain(|s| !is_gain(s));
    match run.first_mut() {
        // No gains in the run: `total` is the empty product 1 and this is exact.
        Some(first) => first.b.iter_mut().for_each(|b| *b *= total),
        // Only gains: one section with their product.
        None => run.push(Sos::gain(total)),
    }
}

/// The largest magnitude of a section's response, estimated on a grid that includes its
/// poles' and zeros' angles (where a narrow peak or notch sits) and a log-spaced sweep
/// down to 1e-7 of Nyquist. An estimate is enough: it only decides how gain is spread.
fn peak_gain(s: &Sos) -> f64 {
    let n = s.normalized();
    let angle = |c1: f64, c2: f64| -> Option<f64> {
        // Angle of the complex roots of z^2 + c1 z + c2 (none for real roots).
        let disc = c1 * c1 - 4.0 * c2;
        (disc < 0.0 && c2 > 0.0).then(|| (-c1 / (2.0 * c2.sqrt())).clamp(-1.0, 1.0).acos())
    };
    let mut omegas: Vec<f64> = (0..=96).map(|i| std::f64::consts::PI * 10f64.powf(-7.0 * (96 - i) as f64 / 96.0)).collect();
    omegas.push(0.0);
    omegas.extend(angle(n.a[1], n.a[2]));
    omegas.extend(angle(n.b[1] / n.b[0], n.b[2] / n.b[0]).filter(|w| w.is_finite()));
    omegas.iter().map(|&w| n.response(w).norm()).filter(|m| m.is_finite()).fold(0.0, f64::max)
}

/// Spreads a cascade's gain evenly over its sections without changing its response:
/// each section's numerator is scaled so that every section peaks at the geometric mean
/// of the sections' peaks (the scale factors multiply to one). SciPy's designs put the
/// whole gain of a high-order, low-cutoff lowpass into the first section (b ~ 1e-39 for
/// order 12 at 2e-4 fs); spread, no section runs on values far below the signal's.
/// Sections whose peak cannot be estimated (zero, non-finite) leave the cascade as it is.
fn balance_gains(run: &mut [Sos]) {
    if run.len() < 2 {
        return;
    }
    let peaks: Vec<f64> = run.iter().map(peak_gain).collect();
    if peaks.iter().any(|p| !(p.is_finite() && *p > 0.0)) {
        return;
    }
    let mean_log = peaks.iter().map(|p| p.ln()).sum::<f64>() / peaks.len() as f64;
    for (s, p) in run.iter_mut().zip(&peaks) {
        let k = (mean_log - p.ln()).exp();
        s.b.iter_mut().for_each(|b| *b *= k);
    }
}

/// Cascades of at least this many sections are checked for float64 conditioning, and
/// shorter ones of two sections or more whose slowest pole outlasts the base probe: a
/// 7-section Chebyshev band-stop from 1.5 Hz at 48 kHz drifts 2e-2 of its peak in
/// float64 over 65,536 samples (SciPy's `sosfilt` 1e-2), while short cascades at
/// ordinary frequencies come nowhere near the limit and are not probed.
const CONDITION_CHECK_MIN_SECTIONS: usize = 8;

/// Whether the cascade `run` is probed for float64 conditioning.
fn needs_condition_check(run: &[Sos]) -> bool {
    run.len() >= CONDITION_CHECK_MIN_SECTIONS || (run.len() >= 2 && probe_frames(run) > 4096)
}
/// The largest drift of a float64 run from exact arithmetic, as a share of the output
/// peak, that a design may show: a tenth of the reference tolerance (1e-4).
const MAX_FLOAT64_DRIFT: f64 = 1e-5;

/// Samples of the conditioning probe for the cascade `run`: up to 4,096 (fewer for long
/// cascades), and at least four time constants of its slowest pole, up to
/// [`MAX_PROBE_FRAMES`]. A steep design at a low cutoff (a band-stop from 1 Hz at 48 kHz,
/// a 22nd-order Bessel band-stop from 4 Hz at 384 kHz) drifts only once its slow modes
/// have built up: 1e-9 of the peak after 4,096 samples, 1e-5 after 10,000, the whole
/// peak and more after 20,000, in SciPy's float64 `sosfilt` and in ours.
fn probe_frames(run: &[Sos]) -> usize {
    let base = (1usize << 20).checked_div(run.len()).unwrap_or(0).clamp(512, 4096);
    let slowest = run.iter().map(pole_radius).fold(0.0f64, f64::max);
    let settle = if slowest < 1.0 { 4.0 / (1.0 - slowest) } else { f64::INFINITY };
    base.max(settle.min(MAX_PROBE_FRAMES as f64) as usize)
}

/// The longest conditioning probe (one cascade of 24 sections: about 50 ms here).
const MAX_PROBE_FRAMES: usize = 1 << 16;

/// A double-double number `hi + lo` (about 106 bits of mantissa).
#[derive(Clone, Copy)]
struct Dd(f64, f64);

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}

fn dd_add(a: Dd, b: Dd) -> Dd {
    let s = two_sum(a.0, b.0);
    let lo = s.1 + a.1 + b.1;
    let hi = s.0 + lo;
    Dd(hi, lo - (hi - s.0))
}

fn dd_mul(a: Dd, c: f64) -> Dd {
    let p = a.0 * c;
    let lo = a.0.mul_add(c, -p) + a.1 * c;
    let hi = p + lo;
    Dd(hi, lo - (hi - p))
}

/// How far a float64 TDF-II run of `run` drifts from the same sections run in
/// double-double arithmetic, on a seeded white-noise probe: `max |y64 - y| / max |y|`.
/// A well-conditioned cascade shows ~1e-15; a design SciPy itself cannot run in float64
/// (e.g. a 46-pole bandstop with its band edges decades apart) shows 1e-3 to 1e3.
fn float64_drift(run: &[Sos]) -> f64 {
    let frames = probe_frames(run);
    let probe = design::probe_noise(frames);
    let mut y64 = probe.clone();
    let mut ydd: Vec<Dd> = probe.iter().map(|&v| Dd(v, 0.0)).collect();
    for s in run {
        let n = s.normalized();
        let (b, a) = (n.b, n.a);
        let mut z = [0.0f64; 2];
        for v in y64.iter_mut() {
            let y = b[0] * *v + z[0];
            z[0] = b[1] * *v - a[1] * y + z[1];
            z[1] = b[2] * *v - a[2] * y;
            *v = y;
        }
        let mut z = [Dd(0.0, 0.0); 2];
        for v in ydd.iter_mut() {
            let x = *v;
            let y = dd_add(dd_mul(x, b[0]), z[0]);
            z[0] = dd_add(dd_add(dd_mul(x, b[1]), dd_mul(y, -a[1])), z[1]);
            z[1] = dd_add(dd_mul(x, b[2]), dd_mul(y, -a[2]));
            *v = y;
        }
    }
    let peak = ydd.iter().fold(0.0f64, |m, v| m.max(v.0.abs()));
    let err = y64.iter().zip(&ydd).fold(0.0f64, |m, (a, b)| m.max((a - b.0).abs()));
    if !(peak > 0.0) {
        return if err == 0.0 { 0.0 } else { f64::INFINITY };
    }
    err / peak
}
