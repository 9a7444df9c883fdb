//! Per-band channel routing: each band acts on both channels, the left, the right, the
//! mid `(L + R) / 2` or the side `(L - R) / 2` signal (stereo layouts; on every other
//! layout all bands act on all channels).
//!
//! How: one [`Equaliser`] per route, each holding all 24 band slots, a band acting only
//! in the equaliser of its route (disabled in the others). Changing a band's route is
//! therefore a discrete switch like enabling it: the band fades out of one equaliser and
//! into the other over [`crate::audio::equaliser::SWITCH_FADE_MS`], without a click.
//!
//! Signal order (fixed, so a session renders the same every time): the stereo bands,
//! then the left and right bands, then the mid and side bands between an M/S encode and
//! decode. Bands acting on both channels commute with every other band (the same filter
//! on both channels is the same filter on mid and side), so only the order of L/R bands
//! against M/S bands is a choice, and this is it.
//!
//! Cost: an equaliser with no band acting is skipped ([`Equaliser::settle_if_idle`]), so
//! with every band on both channels the bands run as one fused pass over both channels,
//! as without routing; the M/S encode and decode run only while a mid or side band acts
//! or fades. A band on the side leaves a mono signal (L = R) untouched bit for bit, and a
//! band on the left leaves the right channel untouched bit for bit.
//!
//! Realtime-safe: nothing here allocates outside [`RoutedEqualiser::new`].

use crate::shared::bands::{Band, Route, BANDS};
use crate::audio::equaliser::Equaliser;

/// The five equalisers and the routing between them.
pub struct RoutedEqualiser {
    /// What it was allocated for: `(fs, channels, max_block)`.
    setup: (f64, usize, usize),
    /// Stereo bands (all bands on layouts other than stereo), on every channel.
    all: Equaliser,
    left: Equaliser,
    right: Equaliser,
    mid: Equaliser,
    side: Equaliser,
    targets: [Band; BANDS],
}

/// Which equaliser of a routed set a band's route sends it to.
fn slot(route: Route, stereo: bool) -> Route {
    if stereo {
        route
    } else {
        Route::Stereo
    }
}

impl RoutedEqualiser {
    /// Allocates everything for `channels` channels and blocks up to `max_block` frames.
    pub fn new(fs: f64, channels: usize, max_block: usize) -> RoutedEqualiser {
        RoutedEqualiser {
            setup: (fs, channels, max_block),
            all: Equaliser::new(fs, channels, max_block),
            left: Equaliser::new(fs, 1, max_block),
            right: Equaliser::new(fs, 1, max_block),
            mid: Equaliser::new(fs, 1, max_block),
            side: Equaliser::new(fs, 1, max_block),
            targets: [Band::default(); BANDS],
        }
    }

    /// Whether it was allocated for this configuration (then an activation can keep it
    /// instead of allocating a new one).
    pub fn allocated_for(&self, fs: f64, channels: usize, max_block: usize) -> bool {
        self.setup == (fs, channels, max_block)
    }

    fn each(&mut self) -> [(Route, &mut Equaliser); 5] {
        [
            (Route::Stereo, &mut self.all),
            (Route::Left, &mut self.left),
            (Route::Right, &mut self.right),
            (Route::Mid, &mut self.mid),
            (Route::Side, &mut self.side),
        ]
    }

    /// Sets band `index`'s target settings (takes effect smoothly; a route change
    /// cross-fades the band from one route to the other).
    pub fn set_band(&mut self, index: usize, band: Band) {
        // Unchanged settings (the usual case: the audio thread sets every band every block)
        // cost a comparison, not five equalisers' clamping.
        if index >= BANDS || self.targets[index] == band {
            return;
        }
        self.targets[index] = band;
        let stereo = self.setup.1 == 2;
        let to = slot(band.route, stereo);
        for (route, eq) in self.each() {
            let here = Band { enabled: band.enabled && route == to, ..band };
            eq.set_band(index, here);
        }
    }

    /// Dynamic EQ: band `index`'s gain change now, applied in the equaliser of its route.
    pub fn set_dynamic_gain(&mut self, index: usize, delta_db: f64) {
        let Some(band) = self.targets.get(index).copied() else { return };
        let to = slot(band.route, self.setup.1 == 2);
        for (route, eq) in self.each() {
            eq.set_dynamic_gain(index, if route == to { delta_db } else { 0.0 });
        }
    }

    /// Current targets (as set).
    pub fn bands(&self) -> &[Band; BANDS] {
        &self.targets
    }

    /// Jumps every smoothed value and layout to its target (activation, state loads).
    pub fn snap(&mut self) {
        for (_, eq) in self.each() {
            eq.snap();
        }
    }

    /// Clears the filter states. Allocation-free.
    pub fn reset(&mut self) {
        for (_, eq) in self.each() {
            eq.reset();
        }
    }

    /// Sections settled in all routes (for the editor's figures).
    pub fn section_count(&self) -> usize {
        [&self.all, &self.left, &self.right, &self.mid, &self.side].iter().map(|e| e.sections().len()).sum()
    }

    /// Whether any route's bands are moving (see [`Equaliser::moving`]).
    pub fn moving(&self) -> bool {
        [&self.all, &self.left, &self.right, &self.mid, &self.side].iter().any(|e| e.moving())
    }

    /// How many frames the settled sections' slowest pole takes to decay by 120 dB (the
    /// start-up transient from a reset, or from silence), at most `cap`.
    pub fn ring_frames(&self, cap: usize) -> usize {
        let radius = [&self.all, &self.left, &self.right, &self.mid, &self.side]
            .iter()
            .flat_map(|e| e.sections())
            .map(|s| {
                // Poles of z^2 + (a1/a0) z + a2/a0.
                let (p, q) = (s.a[1] / s.a[0], s.a[2] / s.a[0]);
                let disc = p * p - 4.0 * q;
                if disc < 0.0 {
                    q.sqrt()
                } else {
                    ((-p + disc.sqrt()) / 2.0).abs().max(((-p - disc.sqrt()) / 2.0).abs())
                }
            })
            .fold(0.0f64, f64::max);
        if radius.is_nan() || radius >= 1.0 {
            cap
        } else if radius <= 0.0 {
            0
        } else {
            ((1e-6f64.ln() / radius.ln()).ceil() as usize).min(cap)
        }
    }

    /// How many times any route's coefficients were recomputed.
    pub fn redesigns(&self) -> u64 {
        [&self.all, &self.left, &self.right, &self.mid, &self.side].iter().map(|e| e.redesigns()).sum()
    }

    /// Whether [`RoutedEqualiser::process`] would leave every channel as it is: no band
    /// acts or fades in any route. Settles the idle routes as `process` does (so calling
    /// `process` after it changes nothing either). Allocation-free.
    pub fn idle(&mut self) -> bool {
        self.all.settle_if_idle()
            && (self.setup.1 != 2 || [&mut self.left, &mut self.right, &mut self.mid, &mut self.side].into_iter().all(|e| e.settle_if_idle()))
    }

    /// Filters planar channel buffers in place. No allocation, lock or panic.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        if !self.all.settle_if_idle() {
            self.all.process(buffers);
        }
        if self.setup.1 != 2 || buffers.len() < 2 {
            return;
        }
        let (l, r) = buffers.split_at_mut(1);
        let (l, r) = (&mut *l[0], &mut *r[0]);
        if !self.left.settle_if_idle() {
            self.left.process(&mut [&mut *l]);
        }
        if !self.right.settle_if_idle() {
            self.right.process(&mut [&mut *r]);
        }
        let mid_idle = self.mid.settle_if_idle();
        let side_idle = self.side.settle_if_idle();
        if mid_idle && side_idle {
            return;
        }
        let frames = l.len().min(r.len());
        let (l, r) = (&mut l[..frames], &mut r[..frames]);
        encode_ms(l, r);
        if !mid_idle {
            self.mid.process(&mut [&mut *l]);
        }
        if !side_idle {
            self.side.process(&mut [&mut *r]);
        }
        decode_ms(l, r);
    }
}

/// Left/right to mid/side in place: `M = (L + R) / 2` into `l`, `S = (L - R) / 2` into
/// `r`. With `L = R` this gives `M = L` and `S = 0` exactly.
pub fn encode_ms(l: &mut [f32], r: &mut [f32]) {
    for (a, b) in l.iter_mut().zip(r.iter_mut()) {
        let (x, y) = (*a, *b);
        *a = 0.5 * (x + y);
        *b = 0.5 * (x - y);
    }
}

/// Mid/side back to left/right in place: `L = M + S`, `R = M - S`.
pub fn decode_ms(m: &mut [f32], s: &mut [f32]) {
    for (a, b) in m.iter_mut().zip(s.iter_mut()) {
        let (x, y) = (*a, *b);
        *a = x + y;
        *b = x - y;
    }
}
