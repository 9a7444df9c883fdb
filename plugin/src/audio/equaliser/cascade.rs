//! [`Equaliser`]: the enabled bands fused into one cascade, smoothed parameter moves
//! re-designed every [`REDESIGN_INTERVAL`] samples, discrete changes cross-faded.

use ferrofx::design::Sos;
use ferrofx::dsp::simd::Isa;
use ferrofx::dsp::sos::SosCascade;

use crate::audio::svf::SvfCascade;

use super::smoothing::{BandSmoothing, Smoothed};
use super::*;

// A band's sections fit the state-variable form's per-band slots.
const _: () = assert!(MAX_SECTIONS_PER_BAND <= SvfCascade::MAX_PER_BAND);

/// The equaliser: 24 bands fused into one cascade, parameters smoothed and coefficients
/// re-designed every [`REDESIGN_INTERVAL`] samples on the audio thread without
/// allocation.
///
/// While settled, the enabled bands' sections run as one fused transposed-direct-form-II
/// cascade (the core's SIMD kernel, exactly the core chain). While anything moves, the
/// same sections run as state-variable filters (see [`crate::audio::svf`]), one slot per possible
/// section of each band, gliding per sample to each new design; states are handed over
/// exactly between the two forms. A discrete change (enable, bypass, shape, slope, Butterworth
/// or Linkwitz-Riley) cross-fades the band's output from its old sections to its new
/// ones over [`SWITCH_FADE_MS`]; a further discrete change of the same band waits until
/// that fade has ended.
pub struct Equaliser {
    fs: f64,
    channels: usize,
    max_block: usize,
    targets: [Band; BANDS],
    /// The layout (enabled, shape, slope) each band is designed with.
    layout: [Band; BANDS],
    smoothing: [BandSmoothing; BANDS],
    /// Per-sample smoothing coefficient raised to `REDESIGN_INTERVAL`.
    smoothing_step: f64,
    /// Length of a switch's cross-fade in samples (whole re-design intervals).
    switch_fade_samples: usize,
    /// The enabled bands' sections, concatenated (what the cascade runs when settled).
    sections: Vec<Sos>,
    cascade: SosCascade,
    since_redesign: usize,
    /// Whether an idle equaliser's smoothed values already equal its targets (so
    /// `settle_if_idle` has nothing to copy until a target changes).
    idle_synced: bool,
    /// Bands whose coefficients must be recomputed at the next interval.
    dirty: [bool; BANDS],
    /// The last parameter step changed nothing (settled, no band moved or switched) and
    /// no target or dynamic gain has changed since: further steps would change nothing
    /// but the time since each band's last matched design, so they are skipped.
    quiet: bool,
    /// Each band's current sections and their count, concatenated into `sections`.
    designed: [([Sos; MAX_SECTIONS_PER_BAND], usize); BANDS],
    /// Each band's last cookbook frequency's sine and cosine.
    trig: [TrigCache; BANDS],
    redesigns: u64,
    /// The modulation-safe form, running instead of `cascade` while anything moves.
    svf: SvfCascade,
    svf_mode: bool,
    /// Scratch for hand-overs between the two forms.
    state_scratch: Vec<[f64; 2]>,
    /// Samples since each band's last analog-matched design.
    since_matched: [usize; BANDS],
    /// Where the round robin of matched designs goes on.
    matched_cursor: usize,
    /// Analog-matched fits the budget has saved up (see [`MATCHED_PER_STEP`]).
    matched_credit: usize,
    /// Dynamic EQ: each band's gain change now (dB) and the one its design has.
    dyn_delta_db: [f64; BANDS],
    dyn_designed_db: [f64; BANDS],
}

impl Equaliser {
    /// Time constant of the parameter smoothing.
    pub const SMOOTHING_MS: f64 = 15.0;

    /// Allocates everything for `channels` channels and blocks up to `max_block` frames.
    pub fn new(fs: f64, channels: usize, max_block: usize) -> Equaliser {
        let capacity = BANDS * MAX_SECTIONS_PER_BAND;
        let isa = Isa::detect();
        let tau = Self::SMOOTHING_MS * 1e-3 * fs;
        let band = Band::default();
        let smoothing = BandSmoothing {
            log2_freq: Smoothed::new(band.freq_hz.log2()),
            gain_db: Smoothed::new(band.gain_db),
            log2_q: Smoothed::new(band.q.log2()),
        };
        Equaliser {
            fs,
            channels,
            max_block: max_block.max(1),
            targets: [band; BANDS],
            layout: [band; BANDS],
            smoothing: [smoothing; BANDS],
            smoothing_step: (-(REDESIGN_INTERVAL as f64) / tau).exp(),
            switch_fade_samples: {
                let intervals = (SWITCH_FADE_MS * 1e-3 * fs / REDESIGN_INTERVAL as f64).round();
                REDESIGN_INTERVAL * (intervals as usize).max(1)
            },
            sections: Vec::with_capacity(capacity),
            cascade: SosCascade::with_capacity(capacity, channels, isa),
            since_redesign: 0,
            idle_synced: false,
            quiet: false,
            dirty: [true; BANDS],
            designed: [([Sos::IDENTITY; MAX_SECTIONS_PER_BAND], 0); BANDS],
            trig: [TrigCache::default(); BANDS],
            redesigns: 0,
            svf: SvfCascade::new(BANDS, MAX_SECTIONS_PER_BAND, channels),
            svf_mode: false,
            state_scratch: Vec::with_capacity(capacity * channels),
            since_matched: [MATCHED_INTERVAL; BANDS],
            matched_cursor: 0,
            matched_credit: MATCHED_CREDIT_MAX,
            dyn_delta_db: [0.0; BANDS],
            dyn_designed_db: [0.0; BANDS],
        }
    }

    /// Sets band `index`'s target settings (takes effect smoothly).
    pub fn set_band(&mut self, index: usize, band: Band) {
        if let Some(t) = self.targets.get_mut(index) {
            let band = band.clamped(self.fs);
            if *t != band {
                *t = band;
                self.idle_synced = false;
                self.quiet = false;
            }
        }
    }

    /// Dynamic EQ: band `index`'s gain moves by `delta_db` on top of its set gain, from the
    /// next re-design interval on, through the same glide as automation (no smoothing of
    /// its own: the dynamics have their ballistics).
    pub fn set_dynamic_gain(&mut self, index: usize, delta_db: f64) {
        if let Some(d) = self.dyn_delta_db.get_mut(index) {
            let delta_db = if delta_db.is_finite() { delta_db } else { 0.0 };
            if *d != delta_db {
                *d = delta_db;
                self.quiet = false;
            }
        }
    }

    /// Current targets.
    pub fn bands(&self) -> &[Band; BANDS] {
        &self.targets
    }

    /// Whether two settings design the same kind of sections (the slope only matters to
    /// the cuts), so that moving from one to the other is a glide, not a switch.
    fn same_layout(a: &Band, b: &Band) -> bool {
        let cut = matches!(a.shape, Shape::LowCut | Shape::HighCut);
        a.active() == b.active()
            && (!a.active() || (a.shape == b.shape && (!cut || a.slope == b.slope) && a.uses_matched() == b.uses_matched()))
    }

    fn counts(&self) -> [usize; BANDS] {
        std::array::from_fn(|i| self.designed[i].1)
    }

    /// Re-designs the dirty bands from their smoothed values into `designed` and
    /// `sections`.
    ///
    /// Analog-matched designs cost about a hundred times a cookbook one per least-squares
    /// fit ([`Band::matched_fits`]), so while bands move the fits are budgeted:
    /// [`MATCHED_PER_STEP`] per interval on average, saved up to [`MATCHED_CREDIT_MAX`];
    /// each band is re-designed at most every [`MATCHED_INTERVAL`] samples and glides over
    /// that interval; the others stay dirty for a later interval (round robin, so a steep
    /// cut waiting for its credit is not passed by cheaper bands). `budget: false` designs every
    /// dirty band now (snaps and switches). Returns which bands were designed.
    fn redesign(&mut self, budget: bool, force: &[bool; BANDS]) -> [bool; BANDS] {
        let mut designed = [false; BANDS];
        let mut credit = if budget { self.matched_credit } else { usize::MAX };
        // Once a band cannot afford its fit, later matched bands wait too (round robin).
        let mut waiting = false;
        // Round robin: start after the band designed last.
        let start = self.matched_cursor;
        for k in 0..BANDS {
            let i = (start + k) % BANDS;
            let layout = &self.layout[i];
            if !self.dirty[i] {
                continue;
            }
            if layout.uses_matched() && layout.active() && !force[i] {
                if waiting || (budget && self.since_matched[i] < MATCHED_INTERVAL) {
                    continue;
                }
                let cost = layout.matched_fits();
                if credit < cost {
                    waiting = true;
                    continue;
                }
                credit -= cost;
                self.since_matched[i] = 0;
                self.matched_cursor = (i + 1) % BANDS;
            }
            let s = &self.smoothing[i];
            self.dyn_designed_db[i] = self.dyn_delta_db[i];
            let band = Band {
                freq_hz: s.log2_freq.value.exp2(),
                gain_db: s.gain_db.value + self.dyn_delta_db[i],
                q: s.log2_q.value.exp2(),
                ..*layout
            }
            .clamped(self.fs);
            let (buf, n) = &mut self.designed[i];
            *n = band.design_into_with(self.fs, buf, &mut self.trig[i]);
            self.dirty[i] = false;
            designed[i] = true;
        }
        if budget {
            self.matched_credit = credit;
        }
        self.sections.clear();
        for (buf, n) in &self.designed {
            // Within capacity: at most MAX_SECTIONS_PER_BAND per band.
            self.sections.extend_from_slice(&buf[..*n]);
        }
        designed
    }

    /// Advances smoothing by one re-design interval. While anything moves the sections
    /// run in SVF form, gliding to each new design over the interval; once everything has
    /// settled they return to the fused cascade.
    fn step_parameters(&mut self) {
        self.idle_synced = false;
        let was_settled = !self.svf_mode;
        // Fades end on interval boundaries (their length is whole intervals).
        if self.svf_mode && self.svf.finish_fades() {
            self.svf.refresh();
        }
        for since in self.since_matched.iter_mut() {
            *since = since.saturating_add(REDESIGN_INTERVAL);
        }
        let mut switched = [false; BANDS];
        for (i, ((l, t), s)) in self.layout.iter_mut().zip(&self.targets).zip(self.smoothing.iter_mut()).enumerate() {
            // A band still fading from its last switch takes the next one after it.
            let busy = self.svf_mode && self.svf.fading(i);
            if !busy && !Self::same_layout(l, t) {
                *l = *t;
                self.dirty[i] = true;
                switched[i] = true;
            }
            s.log2_freq.target = t.freq_hz.log2();
            s.gain_db.target = t.gain_db;
            s.log2_q.target = t.q.log2();
            let moved = s.log2_freq.advance(self.smoothing_step)
                | s.gain_db.advance(self.smoothing_step)
                | s.log2_q.advance(self.smoothing_step);
            let dynamic = (self.dyn_delta_db[i] - self.dyn_designed_db[i]).abs() > 1e-4;
            self.dirty[i] |= moved || dynamic;
        }
        let any_dirty = self.dirty.iter().any(|&d| d);
        // Nothing moved, switched or changed form: the next step would do the same.
        self.quiet = was_settled && !any_dirty;
        if any_dirty {
            if !self.svf_mode {
                let counts = self.counts();
                self.svf.load_from_tdf2(self.cascade.coefficients(), self.cascade.state(), &counts);
                self.svf_mode = true;
            }
            // Bands only re-design when they move (settled bands keep their sections,
            // and a band still fading from a switch goes on fading).
            self.matched_credit = (self.matched_credit + MATCHED_PER_STEP).min(MATCHED_CREDIT_MAX);
            let moving = self.redesign(true, &switched);
            self.redesigns += 1;
            for (i, (buf, n)) in self.designed.iter().enumerate() {
                if !moving[i] {
                    continue;
                }
                let sections = &buf[..*n];
                if switched[i] {
                    self.svf.switch_band(i, sections, self.switch_fade_samples);
                } else {
                    let glide = if self.layout[i].uses_matched() { MATCHED_INTERVAL } else { REDESIGN_INTERVAL };
                    self.svf.glide_band(i, sections, glide);
                }
            }
            self.svf.refresh();
        } else if self.svf_mode && !self.svf.interpolating() {
            let _ = self.cascade.set_sections(&self.sections);
            let counts = self.counts();
            self.svf.store_tdf2_state(self.cascade.coefficients(), &counts, &mut self.state_scratch);
            let _ = self.cascade.set_state(&self.state_scratch);
            self.svf_mode = false;
        }
    }

    /// Jumps every smoothed value to its target and the layout to the targets' layout
    /// (for activation and state loads, when nothing is playing). Filter states are kept
    /// where the sections stay. Allocation-free.
    pub fn snap(&mut self) {
        for (l, t) in self.layout.iter_mut().zip(&self.targets) {
            *l = *t;
        }
        for (s, t) in self.smoothing.iter_mut().zip(&self.targets) {
            s.log2_freq = Smoothed::new(t.freq_hz.log2());
            s.gain_db = Smoothed::new(t.gain_db);
            s.log2_q = Smoothed::new(t.q.log2());
        }
        self.dirty = [true; BANDS];
        // Dynamic gain changes start again from none (the detectors are new).
        self.dyn_delta_db = [0.0; BANDS];
        self.redesign(false, &[true; BANDS]);
        self.svf_mode = false;
        let _ = self.cascade.set_sections(&self.sections);
        self.since_redesign = 0;
        self.quiet = false;
    }

    /// Whether the equaliser has nothing to do: no band acts or is asked to act, and
    /// nothing fades. Then its smoothed values are set to their targets (so a band that
    /// starts acting later fades in at its own settings, not from stale ones) and
    /// [`Equaliser::process`] may be skipped. Allocation-free.
    pub fn settle_if_idle(&mut self) -> bool {
        // Settled idle and nothing changed since (no target set, no step): still idle.
        if self.idle_synced {
            return true;
        }
        let idle = !self.svf_mode
            && self.sections.is_empty()
            && self.targets.iter().all(|t| !t.active())
            && self.layout.iter().all(|l| !l.active());
        if idle {
            // First idle call since a change (`idle_synced` returned above otherwise).
            self.quiet = false;
            for (s, t) in self.smoothing.iter_mut().zip(&self.targets) {
                s.log2_freq = Smoothed::new(t.freq_hz.log2());
                s.gain_db = Smoothed::new(t.gain_db);
                s.log2_q = Smoothed::new(t.q.log2());
            }
            self.idle_synced = true;
            self.since_redesign = 0;
        }
        idle
    }

    /// Clears the filter state (coefficients and smoothing are kept). Allocation-free.
    pub fn reset(&mut self) {
        self.cascade.reset();
        self.svf.reset();
    }

    /// The settled sections (for the editor's curve and tests).
    pub fn sections(&self) -> &[Sos] {
        &self.sections
    }

    /// The settings the filters run at this moment: the layout with the smoothed values
    /// (for tests that compare modulated output with frozen settings).
    pub fn running_bands(&self) -> [Band; BANDS] {
        std::array::from_fn(|i| {
            let s = &self.smoothing[i];
            Band { freq_hz: s.log2_freq.value.exp2(), gain_db: s.gain_db.value, q: s.log2_q.value.exp2(), ..self.layout[i] }
                .clamped(self.fs)
        })
    }

    /// Whether the bands run in the modulation-safe form (something moves, fades or has
    /// not finished gliding); false once everything has settled into the fused cascade.
    pub fn moving(&self) -> bool {
        self.svf_mode
    }

    /// How many times the coefficients were recomputed (they are not while settled).
    pub fn redesigns(&self) -> u64 {
        self.redesigns
    }

    /// Accounts for `count` parameter steps that would have changed nothing (see
    /// `quiet`): only the time since each band's last matched design moves on.
    fn skip_steps(&mut self, count: usize) {
        self.idle_synced = false;
        for since in self.since_matched.iter_mut() {
            *since = since.saturating_add(count * REDESIGN_INTERVAL);
        }
    }

    /// Filters planar channel buffers in place. No allocation, lock or panic.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        let used = buffers.len().min(self.channels);
        let buffers = &mut buffers[..used];
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let mut done = 0;
        while done < frames {
            let stepped = self.since_redesign == 0;
            if stepped {
                if self.quiet {
                    self.skip_steps(1);
                } else {
                    self.step_parameters();
                }
            }
            let mut n = (frames - done).min(REDESIGN_INTERVAL - self.since_redesign).min(self.max_block);
            if stepped && !self.svf_mode {
                // Settled. Targets and dynamic gains change only between calls, so the
                // steps at this call's later intervals would change nothing but the time
                // since each band's last matched design (counted on here as they would):
                // the cascade runs the rest of the call at once, with the same output
                // (its pipeline fills and drains once instead of every interval).
                n = (frames - done).min(self.max_block);
                self.skip_steps((n - 1) / REDESIGN_INTERVAL);
            }
            if self.svf_mode {
                self.svf.process_at(buffers, done, n);
            } else {
                self.cascade.process_at(buffers, done, n);
            }
            done += n;
            self.since_redesign = (self.since_redesign + n) % REDESIGN_INTERVAL;
        }
    }
}
