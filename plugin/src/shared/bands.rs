//! A band's settings and their designs: cookbook or analog-matched second-order
//! sections, written into caller-owned arrays (no allocation: the audio thread designs).
//! The vocabulary both sides share: the parameters produce [`Band`]s, the equaliser, the
//! linear-phase designer and the editor's curve design them.

use ferrofx::design::matched::{biquad_matched_into, cut_matched_into, cut_sections, MATCHED_SECTIONS};
use ferrofx::design::{butterworth_into, rbj, BiquadKind, Response, Sos};

/// Number of bands.
pub const BANDS: usize = 24;
/// Most sections one band designs to (a 96 dB/oct analog-matched cut: Butterworth order
/// 16, two sections per pole pair; the bilinear one has 8).
pub const MAX_SECTIONS_PER_BAND: usize = 16;

/// Parameter ranges, shared with the editor.
pub mod ranges {
    /// Band frequency in Hz (log scale).
    pub fn freq_hz() -> (f64, f64) {
        (20.0, 20_000.0)
    }
    /// Band gain in dB.
    pub fn gain_db() -> (f64, f64) {
        (-24.0, 24.0)
    }
    /// Band Q.
    pub fn q() -> (f64, f64) {
        (0.1, 18.0)
    }
    /// Cut slopes in dB/oct (multiples of 6).
    pub fn slope_db_per_oct() -> (u32, u32) {
        (6, 96)
    }
}

/// What a band does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Peak,
    LowShelf,
    HighShelf,
    LowCut,
    HighCut,
    Notch,
    BandPass,
    AllPass,
    /// Low shelf by `-gain/2` and high shelf by `+gain/2` at the same frequency.
    TiltShelf,
}

/// Cut slope: Butterworth of `db / 6` poles, or Linkwitz-Riley of the same slope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slope {
    pub db_per_oct: u32,
    pub linkwitz_riley: bool,
}

/// Which channels a band acts on (stereo layouts; on any other layout every band acts on
/// every channel). See `audio/routing.rs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    /// Both channels (every channel on other layouts).
    #[default]
    Stereo,
    Left,
    Right,
    /// The mid signal `(L + R) / 2`.
    Mid,
    /// The side signal `(L - R) / 2`.
    Side,
}

impl Route {
    pub const ALL: [Route; 5] = [Route::Stereo, Route::Left, Route::Right, Route::Mid, Route::Side];

    /// Short tag for the editor's nodes ("" for stereo).
    pub fn tag(self) -> &'static str {
        match self {
            Route::Stereo => "",
            Route::Left => "L",
            Route::Right => "R",
            Route::Mid => "M",
            Route::Side => "S",
        }
    }
}

/// One band's settings (plain values).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// The band is in use (its node is shown); a disabled band is an empty slot.
    pub enabled: bool,
    /// In use but not acting on the signal (its node stays on the curve, dimmed).
    pub bypassed: bool,
    pub shape: Shape,
    pub freq_hz: f64,
    pub gain_db: f64,
    pub q: f64,
    pub slope: Slope,
    /// The channels it acts on.
    pub route: Route,
    /// Analog-matched design (see [`Band::uses_matched`]) instead of the cookbook's
    /// bilinear one; the plugin sets it for every band from its instance switch.
    pub matched: bool,
    /// The gain follows the band's dynamics (`audio/dynamics.rs`): such a band is designed
    /// cookbook and stays out of the linear-phase FIR.
    pub dynamic: bool,
}

impl Default for Band {
    fn default() -> Band {
        Band {
            enabled: false,
            bypassed: false,
            shape: Shape::Peak,
            freq_hz: 1000.0,
            gain_db: 0.0,
            q: std::f64::consts::FRAC_1_SQRT_2,
            slope: Slope { db_per_oct: 24, linkwitz_riley: false },
            route: Route::Stereo,
            matched: false,
            dynamic: false,
        }
    }
}

/// Band frequencies are kept at or below this share of the sample rate (0.9 of Nyquist).
pub const NYQUIST_SHARE: f64 = 0.45;

impl Band {
    /// Whether the band acts on the signal: in use and not bypassed.
    pub fn active(&self) -> bool {
        self.enabled && !self.bypassed
    }

    /// The settings clamped into the parameter ranges and below Nyquist at `fs`.
    pub fn clamped(&self, fs: f64) -> Band {
        let (f_lo, f_hi) = ranges::freq_hz();
        let (g_lo, g_hi) = ranges::gain_db();
        let (q_lo, q_hi) = ranges::q();
        let (s_lo, s_hi) = ranges::slope_db_per_oct();
        let finite = |v: f64, default: f64| if v.is_finite() { v } else { default };
        let mut db = (self.slope.db_per_oct.clamp(s_lo, s_hi) / 6) * 6;
        if self.slope.linkwitz_riley && db % 12 != 0 {
            db += 6; // Linkwitz-Riley slopes come in steps of 12 dB/oct
        }
        Band {
            // At very low rates even the lowest band frequency is above Nyquist: then
            // the band sits at the highest frequency the rate can carry.
            freq_hz: {
                let hi = f_hi.min(NYQUIST_SHARE * fs);
                finite(self.freq_hz, 1000.0).clamp(f_lo.min(hi), hi)
            },
            gain_db: finite(self.gain_db, 0.0).clamp(g_lo, g_hi),
            q: finite(self.q, 0.7).clamp(q_lo, q_hi),
            slope: Slope { db_per_oct: db.min(s_hi), linkwitz_riley: self.slope.linkwitz_riley },
            ..*self
        }
    }

    /// Whether the band is designed analog-matched: `matched` set and a shape that has a
    /// matched design (bells, shelves, tilt, notch, band-pass, cuts) and not dynamic (a
    /// dynamic band re-designs too often for the fit; it stays the cookbook's). The
    /// all-pass stays the cookbook's (its magnitude is 1 either way).
    pub fn uses_matched(&self) -> bool {
        self.matched && !self.dynamic && !matches!(self.shape, Shape::AllPass)
    }

    /// The cut's analog order (Butterworth or Linkwitz-Riley) from its slope.
    fn cut_order(&self) -> usize {
        ((self.slope.db_per_oct / 6) as usize).max(1)
    }

    /// Least-squares fits one analog-matched design of this band costs (0 when it does
    /// not use one): the re-design budget's unit. A biquad's single-section attempt
    /// before its two-section fit is counted within its one fit: the attempt stops early
    /// and replaces the larger fit where it succeeds, so the time per design stayed the
    /// same on average (`matched_probe`, docs/perf-history.md, 2026-11-29).
    pub fn matched_fits(&self) -> usize {
        if !self.uses_matched() || !self.active() {
            return 0;
        }
        match self.shape {
            Shape::TiltShelf => 2,
            Shape::LowCut | Shape::HighCut => cut_sections(self.cut_order()) / MATCHED_SECTIONS,
            _ => 1,
        }
    }

    /// Sections this band designs to at most (0 when not active), by shape and slope; an
    /// analog-matched band may design to fewer (one section where the cookbook biquad
    /// or a single fitted section is within the match's tolerance).
    pub fn section_count(&self) -> usize {
        if !self.active() {
            return 0;
        }
        if self.uses_matched() {
            return self.matched_fits() * MATCHED_SECTIONS;
        }
        match self.shape {
            Shape::LowCut | Shape::HighCut => {
                let order = self.cut_order();
                if self.slope.linkwitz_riley {
                    2 * (order / 2).div_ceil(2)
                } else {
                    order.div_ceil(2)
                }
            }
            Shape::TiltShelf => 2,
            _ => 1,
        }
    }

    /// Designs the band into `out` without allocating; returns the section count.
    /// Call with settings from [`Band::clamped`].
    pub fn design_into(&self, fs: f64, out: &mut [Sos; MAX_SECTIONS_PER_BAND]) -> usize {
        self.design_into_with(fs, out, &mut TrigCache::default())
    }

    /// [`Band::design_into`] with the cookbook designs' sine and cosine kept in `trig`
    /// from the last design at the same frequency (the same result, bit for bit).
    pub fn design_into_with(&self, fs: f64, out: &mut [Sos; MAX_SECTIONS_PER_BAND], trig: &mut TrigCache) -> usize {
        if !self.active() {
            return 0;
        }
        let (f, q, g) = (self.freq_hz, self.q, self.gain_db);
        if self.uses_matched() {
            // One section where the cookbook biquad or a single fitted section is within
            // the match's tolerance, else the fit's two (`biquad_matched_into`).
            let two = |out: &mut [Sos], kind, g| {
                let mut sections = [Sos::IDENTITY; MATCHED_SECTIONS];
                let n = biquad_matched_into(kind, f, q, g, fs, &mut sections);
                out[..n].copy_from_slice(&sections[..n]);
                n
            };
            return match self.shape {
                Shape::Peak => two(out, BiquadKind::Peaking, g),
                Shape::LowShelf => two(out, BiquadKind::LowShelf, g),
                Shape::HighShelf => two(out, BiquadKind::HighShelf, g),
                Shape::Notch => two(out, BiquadKind::Notch, 0.0),
                Shape::BandPass => two(out, BiquadKind::Bandpass, 0.0),
                Shape::LowCut | Shape::HighCut => {
                    let response = if self.shape == Shape::LowCut { Response::Highpass } else { Response::Lowpass };
                    cut_matched_into(response, self.cut_order(), self.slope.linkwitz_riley, f, fs, &mut out[..])
                }
                _ => {
                    // Tilt: the two matched shelves.
                    let n = two(&mut out[..], BiquadKind::LowShelf, -g / 2.0);
                    n + two(&mut out[n..], BiquadKind::HighShelf, g / 2.0)
                }
            };
        }
        let (sin, cos) = trig.sin_cos(f, fs);
        let one = |out: &mut [Sos; MAX_SECTIONS_PER_BAND], kind| {
            out[0] = rbj::biquad_from_trig(kind, sin, cos, q, g);
            1
        };
        match self.shape {
            Shape::Peak => one(out, BiquadKind::Peaking),
            Shape::LowShelf => one(out, BiquadKind::LowShelf),
            Shape::HighShelf => one(out, BiquadKind::HighShelf),
            Shape::Notch => one(out, BiquadKind::Notch),
            Shape::BandPass => one(out, BiquadKind::Bandpass),
            Shape::AllPass => one(out, BiquadKind::Allpass),
            Shape::TiltShelf => {
                out[0] = rbj::biquad_from_trig(BiquadKind::LowShelf, sin, cos, q, -g / 2.0);
                out[1] = rbj::biquad_from_trig(BiquadKind::HighShelf, sin, cos, q, g / 2.0);
                2
            }
            Shape::LowCut | Shape::HighCut => {
                let response = if self.shape == Shape::LowCut { Response::Highpass } else { Response::Lowpass };
                let order = self.cut_order();
                if self.slope.linkwitz_riley {
                    let half = (order / 2).max(1);
                    let n = butterworth_into(response, half, f, fs, &mut out[..MAX_SECTIONS_PER_BAND / 2]);
                    let (first, second) = out.split_at_mut(n);
                    second[..n].copy_from_slice(first);
                    2 * n
                } else {
                    butterworth_into(response, order.max(1), f, fs, &mut out[..])
                }
            }
        }
    }
}

impl Band {
    /// The band's analog prototype at `f_hz` (magnitude and phase; 1 when the band does
    /// not act): what natural (analog) phase follows. Call with settings from
    /// [`Band::clamped`].
    pub fn analog_response(&self, f_hz: f64) -> ferrofx::design::natural::Complex64 {
        use ferrofx::design::natural::{analog_biquad_response, analog_butterworth_response, Complex64};
        if !self.active() {
            return Complex64::new(1.0, 0.0);
        }
        let (f, q, g) = (self.freq_hz, self.q, self.gain_db);
        let biquad = |kind, g| analog_biquad_response(kind, f, q, g, f_hz);
        match self.shape {
            Shape::Peak => biquad(BiquadKind::Peaking, g),
            Shape::LowShelf => biquad(BiquadKind::LowShelf, g),
            Shape::HighShelf => biquad(BiquadKind::HighShelf, g),
            Shape::Notch => biquad(BiquadKind::Notch, 0.0),
            Shape::BandPass => biquad(BiquadKind::Bandpass, 0.0),
            Shape::AllPass => biquad(BiquadKind::Allpass, 0.0),
            Shape::TiltShelf => biquad(BiquadKind::LowShelf, -g / 2.0) * biquad(BiquadKind::HighShelf, g / 2.0),
            Shape::LowCut | Shape::HighCut => {
                let response = if self.shape == Shape::LowCut { Response::Highpass } else { Response::Lowpass };
                let order = self.cut_order();
                if self.slope.linkwitz_riley {
                    let h = analog_butterworth_response(response, (order / 2).max(1), f, f_hz);
                    h * h
                } else {
                    analog_butterworth_response(response, order, f, f_hz)
                }
            }
        }
    }
}

/// The sine and cosine of a cookbook design's `w0` at the last frequency and rate asked
/// for ([`Band::design_into_with`]): an automated gain re-designs a band every 32
/// samples at one frequency. No allocation.
#[derive(Clone, Copy, Debug)]
pub struct TrigCache {
    /// `(freq_hz, fs)` as bits; none before the first design.
    key: Option<(u64, u64)>,
    sin_cos: (f64, f64),
}

impl Default for TrigCache {
    fn default() -> TrigCache {
        TrigCache { key: None, sin_cos: (0.0, 1.0) }
    }
}

impl TrigCache {
    /// [`rbj::w0_sin_cos`] of `freq_hz` at `fs`, computed only when either changed.
    pub fn sin_cos(&mut self, freq_hz: f64, fs: f64) -> (f64, f64) {
        let key = (freq_hz.to_bits(), fs.to_bits());
        if self.key != Some(key) {
            self.sin_cos = rbj::w0_sin_cos(freq_hz, fs);
            self.key = Some(key);
        }
        self.sin_cos
    }
}
