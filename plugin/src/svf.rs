//! The modulation-safe form of a cascade of second-order sections: each section as a
//! trapezoidal state-variable filter (the "TPT SVF" of Zavalishin and Simper), with the
//! same transfer function as the section and per-sample linear interpolation of its
//! coefficients.
//!
//! Why: the equaliser runs its bands as one fused transposed-direct-form-II cascade
//! (fast, and exactly the core chain), but a TDF-II state only means something for the
//! coefficients it was computed with. Changing coefficients under it (automation) re-
//! scales whatever the states hold and clicks, and fast changes of resonant sections can
//! even grow without bound. An SVF's states are integrator states that stay meaningful
//! when its frequency, damping or mix change, so while any band moves the equaliser runs
//! this form, and converts the states exactly (same future output for zero input) when
//! switching between the two. Discrete switches (a band enabled, disabled, or given
//! another shape or slope) are not glides but per-band cross-fades of two designs'
//! outputs (see [`SvfCascade`]).
//!
//! A stable section `(b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2)` maps to an SVF
//! with `g^2 = (1+a1+a2)/(1-a1+a2)`, `g k = 2(1-a2)/(1-a1+a2)` and output
//! `m0 v0 + m1 v1 + m2 v2` (input, band pass, low pass), the `m` solved from the zeros.
//! No allocation outside [`SvfCascade::new`].

use ferrofx::design::Sos;
use ferrofx::dsp::sos::SosCoefs;

/// One section in SVF form: `g = tan(pi f / fs)`-like frequency warp, damping `k`, and
/// the output mix.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SvfCoefs {
    pub g: f64,
    pub k: f64,
    pub m0: f64,
    pub m1: f64,
    pub m2: f64,
}

impl SvfCoefs {
    /// The SVF with the same transfer function as `sos` (which must be stable with no
    /// pole at z = +-1; the equaliser's designs are, with frequencies inside 20 Hz..0.45 fs).
    pub fn from_sos(sos: &Sos) -> SvfCoefs {
        let n = sos.normalized();
        let (b0, b1, b2) = (n.b[0], n.b[1], n.b[2]);
        let (a1, a2) = (n.a[1], n.a[2]);
        let den_minus = (1.0 - a1 + a2).max(1e-300);
        let g = ((1.0 + a1 + a2) / den_minus).max(1e-24).sqrt();
        let gk = 2.0 * (1.0 - a2) / den_minus;
        let k = gk / g;
        let d0 = 1.0 + gk + g * g;
        let m0 = (b0 - b1 + b2) / den_minus;
        let q = (b1 - m0 * a1) / 2.0;
        let p = b0 - m0 - q;
        SvfCoefs { g, k, m0, m1: p * d0 / g, m2: q * d0 / (g * g) }
    }

    fn lerp_step(from: &SvfCoefs, to: &SvfCoefs, steps: f64) -> SvfCoefs {
        SvfCoefs {
            g: (to.g - from.g) / steps,
            k: (to.k - from.k) / steps,
            m0: (to.m0 - from.m0) / steps,
            m1: (to.m1 - from.m1) / steps,
            m2: (to.m2 - from.m2) / steps,
        }
    }

    fn add(&mut self, d: &SvfCoefs) {
        self.g += d.g;
        self.k += d.k;
        self.m0 += d.m0;
        self.m1 += d.m1;
        self.m2 += d.m2;
    }

    /// `(a1, a2, a3)` of the per-sample update.
    #[inline]
    fn update_coefs(&self) -> (f64, f64, f64) {
        let a1 = 1.0 / (1.0 + self.g * (self.g + self.k));
        let a2 = self.g * a1;
        (a1, a2, self.g * a2)
    }

    /// Output row `r` (for zero input, `y = r . state`) and state transition `t`.
    fn zero_input(&self) -> ([f64; 2], [[f64; 2]; 2]) {
        let (a1, a2, a3) = self.update_coefs();
        // v1 = a1 ic1 - a2 ic2; v2 = a2 ic1 + (1 - a3) ic2 (with v0 = 0).
        let v1 = [a1, -a2];
        let v2 = [a2, 1.0 - a3];
        let r = [self.m1 * v1[0] + self.m2 * v2[0], self.m1 * v1[1] + self.m2 * v2[1]];
        // ic1' = 2 v1 - ic1; ic2' = 2 v2 - ic2.
        let t = [[2.0 * v1[0] - 1.0, 2.0 * v1[1]], [2.0 * v2[0], 2.0 * v2[1] - 1.0]];
        (r, t)
    }

    /// The next two outputs for zero input from SVF state `ic`.
    fn ring(&self, ic: [f64; 2]) -> (f64, f64) {
        let (r, t) = self.zero_input();
        let y0 = r[0] * ic[0] + r[1] * ic[1];
        let ic1 = [t[0][0] * ic[0] + t[0][1] * ic[1], t[1][0] * ic[0] + t[1][1] * ic[1]];
        (y0, r[0] * ic1[0] + r[1] * ic1[1])
    }

    /// The TDF-II state of section `q` that continues exactly like SVF state `ic` would.
    pub fn to_tdf2_state(&self, q: &SosCoefs, ic: [f64; 2]) -> [f64; 2] {
        let (y0, y1) = self.ring(ic);
        // TDF-II with zero input: y0 = s1, y1 = -a1 s1 + s2.
        [y0, y1 + q.a1 * y0]
    }

    /// The SVF state that continues like TDF-II state `s` of section `q`. Where the
    /// section does not show part of its state in its output (a 0 dB bell: `H = 1`),
    /// that part is unknowable and set to zero (least-norm solution).
    pub fn from_tdf2_state(&self, q: &SosCoefs, s: [f64; 2]) -> [f64; 2] {
        let y = [s[0], -q.a1 * s[0] + s[1]];
        let (r, t) = self.zero_input();
        let r2 = [r[0] * t[0][0] + r[1] * t[1][0], r[0] * t[0][1] + r[1] * t[1][1]];
        let c = [r, r2];
        // x = C^T (C C^T + lambda I)^-1 y: the inverse when C is well conditioned, the
        // least-norm solution when it is (nearly) singular.
        let cct = [
            [c[0][0] * c[0][0] + c[0][1] * c[0][1], c[0][0] * c[1][0] + c[0][1] * c[1][1]],
            [c[1][0] * c[0][0] + c[1][1] * c[0][1], c[1][0] * c[1][0] + c[1][1] * c[1][1]],
        ];
        let lambda = 1e-9 * (cct[0][0] + cct[1][1]) + 1e-300;
        let (p, qq, rr, ss) = (cct[0][0] + lambda, cct[0][1], cct[1][0], cct[1][1] + lambda);
        let det = p * ss - qq * rr;
        if det == 0.0 || !det.is_finite() {
            return [0.0; 2];
        }
        let w = [(ss * y[0] - qq * y[1]) / det, (-rr * y[0] + p * y[1]) / det];
        [c[0][0] * w[0] + c[1][0] * w[1], c[0][1] * w[0] + c[1][1] * w[1]]
    }
}

/// One band's place in the processing order: its live slots that run, and while it
/// switches, the slots of the design it fades to.
#[derive(Clone, Copy, Debug)]
struct Run {
    band: usize,
    /// `run_slots[live.0..live.1]`: the band's live slots that are not identity.
    live: (usize, usize),
    /// `run_slots[a..b]`: the incoming design's slots, while the band cross-fades.
    incoming: Option<(usize, usize)>,
}

/// A band's cross-fade from its live sections to an incoming design.
#[derive(Clone, Copy, Debug, Default)]
struct Fade {
    active: bool,
    /// Samples left; at 0 the incoming design carries the whole output and the fade
    /// waits for [`SvfCascade::finish_fades`].
    left: usize,
    length: usize,
    /// Weight of the incoming design's output at the current sample (0 to 1, smooth).
    weight: f64,
}

/// The equaliser's bands as a cascade of SVF slots for several channels: per-sample
/// coefficient glides for continuous moves, and per-band cross-fades for discrete
/// switches (enable, shape, slope).
///
/// Each band owns two banks of `per_band` slots. The live bank is what the band runs;
/// slots holding the identity section are skipped. A switch designs the new layout into
/// the other bank from rest and fades the band's output from the live bank's to the
/// incoming bank's (both fed the band's input), then makes the incoming bank live. A
/// fade never sums filters that both boost (the output is a weighted mean of the two
/// designs' outputs), and no coefficient passes through the arbitrary intermediate
/// designs that a glide between unrelated shapes would.
pub struct SvfCascade {
    bands: usize,
    per_band: usize,
    coefs: Vec<SvfCoefs>,
    step: Vec<SvfCoefs>,
    target: Vec<SvfCoefs>,
    /// `(a1, a2, a3)` of each slot's current coefficients (kept up to date, so the
    /// per-channel loop needs no division).
    derived: Vec<(f64, f64, f64)>,
    /// Samples left in each slot's glide.
    left: Vec<usize>,
    /// Slots still gliding.
    gliding: usize,
    /// Which bank (0 or 1) each band runs.
    live: Vec<usize>,
    fades: Vec<Fade>,
    /// Bands fading or waiting for their fade to be finished.
    fading: usize,
    /// The bands that run, in order, and the slots they run.
    runs: Vec<Run>,
    run_slots: Vec<usize>,
    /// `[channel][slot]` -> `[ic1eq, ic2eq]`.
    state: Vec<[f64; 2]>,
    channels: usize,
    /// The piece being filtered, `[channel][frame]` (a band's input while it fades).
    work: Vec<[f64; PIECE]>,
    /// A fading band's incoming design's output, `[channel][frame]`.
    incoming_work: Vec<[f64; PIECE]>,
    /// The slot being filtered's coefficients per frame.
    piece_coefs: Box<PieceCoefs>,
    /// The identity section in SVF form.
    identity: SvfCoefs,
    /// Slots known to be identity at rest with a clear state (so `refresh` passes them
    /// over); cleared wherever a slot's coefficients or target change.
    quiet: Vec<bool>,
}

/// Frames filtered at a time: each slot runs the whole piece before the next slot (see
/// [`SvfCascade::process_at`]).
const PIECE: usize = 32;

/// One slot's coefficients for each frame of a piece: the update's `a1, a2, a3` and the
/// output mix `m0, m1, m2`, and the glide's `g, k` they come from.
#[derive(Clone)]
struct PieceCoefs {
    g: [f64; PIECE],
    k: [f64; PIECE],
    a: [[f64; PIECE]; 3],
    m: [[f64; PIECE]; 3],
}

impl SvfCascade {
    /// Allocates `bands` bands of `per_band` slots (two banks each) for `channels`
    /// channels, all identity.
    pub fn new(bands: usize, per_band: usize, channels: usize) -> SvfCascade {
        let slots = 2 * bands * per_band;
        let identity = SvfCoefs::from_sos(&Sos::IDENTITY);
        SvfCascade {
            bands,
            per_band,
            coefs: vec![identity; slots],
            step: vec![SvfCoefs::default(); slots],
            target: vec![identity; slots],
            derived: vec![identity.update_coefs(); slots],
            left: vec![0; slots],
            gliding: 0,
            live: vec![0; bands],
            fades: vec![Fade::default(); bands],
            fading: 0,
            runs: Vec::with_capacity(bands),
            run_slots: Vec::with_capacity(slots),
            state: vec![[0.0; 2]; slots * channels],
            channels,
            work: vec![[0.0; PIECE]; channels],
            incoming_work: vec![[0.0; PIECE]; channels],
            piece_coefs: Box::new(PieceCoefs { g: [0.0; PIECE], k: [0.0; PIECE], a: [[0.0; PIECE]; 3], m: [[0.0; PIECE]; 3] }),
            identity,
            quiet: vec![true; slots],
        }
    }

    /// Whether coefficients are still gliding or a band is still switching.
    pub fn interpolating(&self) -> bool {
        self.gliding > 0 || self.fading > 0
    }

    /// Whether band `band` is cross-fading to a new layout (a further switch of it must
    /// wait until [`SvfCascade::finish_fades`] has ended this one).
    pub fn fading(&self, band: usize) -> bool {
        self.fades.get(band).is_some_and(|f| f.active)
    }

    fn slots(&self) -> usize {
        self.coefs.len()
    }

    fn slot(&self, bank: usize, band: usize, k: usize) -> usize {
        (bank * self.bands + band) * self.per_band + k
    }

    /// The bank that continuous moves of `band` glide: the incoming one while it fades.
    fn design_bank(&self, band: usize) -> usize {
        if self.fades[band].active {
            1 - self.live[band]
        } else {
            self.live[band]
        }
    }

    /// Sets `slot` to `to` at once, from rest.
    fn set_at_rest(&mut self, slot: usize, to: SvfCoefs) {
        let slots = self.slots();
        self.coefs[slot] = to;
        self.target[slot] = to;
        self.derived[slot] = to.update_coefs();
        self.left[slot] = 0;
        for c in 0..self.channels {
            self.state[c * slots + slot] = [0.0; 2];
        }
        self.quiet[slot] = to == self.identity;
    }

    /// Takes over a TDF-II cascade (coefficients and state) whose sections are band
    /// `i`'s `counts[i]` sections in turn; the output continues exactly. Every other
    /// slot becomes identity at rest, and nothing glides or fades.
    pub fn load_from_tdf2(&mut self, coefs: &[SosCoefs], state: &[[f64; 2]], counts: &[usize]) {
        let identity = self.identity;
        let slots = self.slots();
        self.coefs.fill(identity);
        self.target.fill(identity);
        self.state.fill([0.0; 2]);
        self.left.fill(0);
        self.quiet.fill(true);
        self.live.fill(0);
        self.fades.fill(Fade::default());
        self.gliding = 0;
        self.fading = 0;
        let n = coefs.len();
        let mut j = 0;
        for (band, &count) in counts.iter().enumerate().take(self.bands) {
            for k in 0..count.min(self.per_band) {
                let Some(q) = coefs.get(j) else { break };
                let slot = self.slot(0, band, k);
                let svf = SvfCoefs::from_sos(&Sos { b: [q.b0, q.b1, q.b2], a: [1.0, q.a1, q.a2] });
                self.coefs[slot] = svf;
                self.quiet[slot] = false;
                self.target[slot] = svf;
                for c in 0..self.channels {
                    let st = state.get(c * n + j).copied().unwrap_or([0.0; 2]);
                    self.state[c * slots + slot] = svf.from_tdf2_state(q, st);
                }
                j += 1;
            }
        }
        for (d, q) in self.derived.iter_mut().zip(&self.coefs) {
            *d = q.update_coefs();
        }
    }

    /// Moves band `band`'s design (`targets`, one section per slot, identity beyond)
    /// linearly over the next `samples` samples, keeping the state: the live slots, or
    /// the incoming ones while the band fades. Call [`SvfCascade::refresh`] after a round
    /// of these.
    pub fn glide_band(&mut self, band: usize, targets: &[Sos], samples: usize) {
        if band >= self.bands {
            return;
        }
        let samples = samples.max(1);
        let bank = self.design_bank(band);
        for k in 0..self.per_band {
            let slot = self.slot(bank, band, k);
            let Some(to) = targets.get(k) else {
                if self.coefs[slot] == self.identity && self.left[slot] == 0 {
                    // Identity at rest staying identity: `refresh` would end its glide
                    // at once (the slot does not run).
                    self.target[slot] = self.identity;
                    continue;
                }
                let to = self.identity;
                self.target[slot] = to;
                self.step[slot] = SvfCoefs::lerp_step(&self.coefs[slot], &to, samples as f64);
                self.left[slot] = samples;
                self.quiet[slot] = false;
                continue;
            };
            let to = SvfCoefs::from_sos(to);
            self.quiet[slot] = false;
            self.target[slot] = to;
            self.step[slot] = SvfCoefs::lerp_step(&self.coefs[slot], &to, samples as f64);
            self.left[slot] = samples;
        }
    }

    /// Starts band `band`'s cross-fade to a new layout designed as `targets` (identity
    /// beyond), over `samples` samples; the new sections start from rest. Returns false
    /// (and changes nothing) while the band is still fading. Call
    /// [`SvfCascade::refresh`] after a round of these.
    pub fn switch_band(&mut self, band: usize, targets: &[Sos], samples: usize) -> bool {
        if band >= self.bands || self.fades[band].active {
            return false;
        }
        let incoming = 1 - self.live[band];
        for k in 0..self.per_band {
            let slot = self.slot(incoming, band, k);
            self.set_at_rest(slot, SvfCoefs::from_sos(targets.get(k).unwrap_or(&Sos::IDENTITY)));
        }
        let length = samples.max(1);
        self.fades[band] = Fade { active: true, left: length, length, weight: 0.0 };
        self.fading += 1;
        true
    }

    /// Ends the cross-fades that have run their length: their incoming banks become
    /// live and the banks they replace return to identity at rest. Returns whether any
    /// ended (then call [`SvfCascade::refresh`]).
    pub fn finish_fades(&mut self) -> bool {
        let identity = self.identity;
        let mut ended = false;
        for band in 0..self.bands {
            let fade = self.fades[band];
            if !fade.active || fade.left > 0 {
                continue;
            }
            let old = self.live[band];
            self.live[band] = 1 - old;
            for k in 0..self.per_band {
                let slot = self.slot(old, band, k);
                self.set_at_rest(slot, identity);
            }
            self.fades[band] = Fade::default();
            self.fading -= 1;
            ended = true;
        }
        ended
    }

    /// Rebuilds the processing order after glides, switches or finished fades; an
    /// identity slot that stays identity is skipped and its state cleared (it does not
    /// reach the output; when the slot comes back it starts from rest).
    pub fn refresh(&mut self) {
        let identity = self.identity;
        let slots = self.slots();
        self.runs.clear();
        self.run_slots.clear();
        self.gliding = 0;
        for band in 0..self.bands {
            let live = self.live[band];
            let banks = if self.fades[band].active { [Some(live), Some(1 - live)] } else { [Some(live), None] };
            let mut ranges = [None; 2];
            for (range, bank) in ranges.iter_mut().zip(banks) {
                let Some(bank) = bank else { continue };
                let start = self.run_slots.len();
                for k in 0..self.per_band {
                    let slot = self.slot(bank, band, k);
                    if self.quiet[slot] {
                        continue;
                    }
                    if self.coefs[slot] != identity || self.target[slot] != identity {
                        self.run_slots.push(slot);
                        // Only running slots count: the per-sample loop ends only their
                        // glides.
                        if self.left[slot] > 0 {
                            self.gliding += 1;
                        }
                    } else {
                        self.left[slot] = 0;
                        for c in 0..self.channels {
                            self.state[c * slots + slot] = [0.0; 2];
                        }
                        self.quiet[slot] = true;
                    }
                }
                *range = Some((start, self.run_slots.len()));
            }
            let live_range = ranges[0].unwrap_or((0, 0));
            if live_range.0 != live_range.1 || ranges[1].is_some() {
                self.runs.push(Run { band, live: live_range, incoming: ranges[1] });
            }
        }
    }

    /// Writes the TDF-II state that continues this cascade exactly for a cascade running
    /// `coefs`: band `i`'s first `counts[i]` live slots in turn (the other slots must be
    /// identity and no band fading, which holds once [`SvfCascade::interpolating`] is
    /// false).
    pub fn store_tdf2_state(&self, coefs: &[SosCoefs], counts: &[usize], out: &mut Vec<[f64; 2]>) {
        out.clear();
        let slots = self.slots();
        for c in 0..self.channels {
            let mut j = 0;
            for (band, &count) in counts.iter().enumerate().take(self.bands) {
                for k in 0..count.min(self.per_band) {
                    let slot = self.slot(self.live[band], band, k);
                    let q = coefs.get(j).copied().unwrap_or_default();
                    out.push(self.coefs[slot].to_tdf2_state(&q, self.state[c * slots + slot]));
                    j += 1;
                }
            }
        }
    }

    /// Filters `frames` samples at `offset` of each channel in place.
    ///
    /// In pieces of [`PIECE`] frames, each slot in turn filters the whole piece (all
    /// channels) before the next slot, its coefficients for every frame of the piece
    /// computed first: the recurrence of one slot is then the only chain of dependent
    /// operations, and the slots' work overlaps where a frame-by-frame walk through all
    /// slots waited on each one in turn. Per frame and slot the arithmetic (the glide's
    /// steps, the update coefficients, the fades' weights, the filter) is the
    /// frame-by-frame order's, so the output is the same bit for bit (tested against it).
    pub fn process_at(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        let channels = buffers.len().min(self.channels);
        let mut done = 0;
        while done < frames {
            let n = (frames - done).min(PIECE);
            for (w, buf) in self.work.iter_mut().zip(buffers.iter()).take(channels) {
                for (v, &x) in w[..n].iter_mut().zip(&buf[offset + done..offset + done + n]) {
                    *v = f64::from(x);
                }
            }
            self.piece(channels, n);
            for (w, buf) in self.work.iter().zip(buffers.iter_mut()).take(channels) {
                for (y, &v) in buf[offset + done..offset + done + n].iter_mut().zip(&w[..n]) {
                    *y = v as f32;
                }
            }
            done += n;
        }
        self.flush_states();
    }

    /// Filters `self.work[..channels][..n]` in place (`n <= PIECE`).
    fn piece(&mut self, channels: usize, n: usize) {
        for r in 0..self.runs.len() {
            let run = self.runs[r];
            // The band's fade weights for each frame of the piece (a fade moves on one
            // step per frame, before the frame is filtered).
            let mut weight = [0.0f64; PIECE];
            if let Some(fade) = self.fades.get_mut(run.band) {
                for w in weight[..n].iter_mut() {
                    if fade.active && fade.left > 0 {
                        fade.left -= 1;
                        // Smoothstep: no corner at either end.
                        let t = 1.0 - fade.left as f64 / fade.length as f64;
                        fade.weight = t * t * (3.0 - 2.0 * t);
                    }
                    *w = fade.weight;
                }
            }
            if let Some(range) = run.incoming {
                for (inc, w) in self.incoming_work.iter_mut().zip(&self.work).take(channels) {
                    inc[..n].copy_from_slice(&w[..n]);
                }
                self.run_range(range, true, channels, n);
            }
            self.run_range(run.live, false, channels, n);
            if run.incoming.is_some() {
                for (y, y_new) in self.work.iter_mut().zip(&self.incoming_work).take(channels) {
                    for i in 0..n {
                        y[i] += weight[i] * (y_new[i] - y[i]);
                    }
                }
            }
        }
    }

    /// Runs `run_slots[range]` in turn over `n` frames of `work` (or `incoming_work`).
    fn run_range(&mut self, range: (usize, usize), incoming: bool, channels: usize, n: usize) {
        let slots = self.slots();
        for k in range.0..range.1 {
            let slot = self.run_slots[k];
            self.frame_coefs(slot, n);
            let work = if incoming { &mut self.incoming_work[..channels] } else { &mut self.work[..channels] };
            for (p, chunk) in work.chunks_mut(2).enumerate() {
                let at = |c: usize| (2 * p + c) * slots + slot;
                match chunk {
                    [w0, w1] => filter(&self.piece_coefs, [w0, w1], &mut self.state, [at(0), at(1)], n),
                    [w0] => filter(&self.piece_coefs, [w0], &mut self.state, [at(0)], n),
                    _ => {}
                }
            }
        }
    }

    /// Writes slot `slot`'s coefficients for each of the next `n` frames into
    /// `piece_coefs`, its glide moved on by `n` steps (one before each frame, as the
    /// glide is defined: `left - 1` steps of `step`, then the target): first the glide's
    /// values frame by frame, then the update coefficients of all frames at once
    /// (independent of each other, so they vectorise; the same operations as
    /// [`SvfCoefs::update_coefs`]).
    fn frame_coefs(&mut self, slot: usize, n: usize) {
        let c = &mut *self.piece_coefs;
        if self.left[slot] == 0 {
            let (q, d) = (self.coefs[slot], self.derived[slot]);
            for (row, v) in c.a.iter_mut().zip([d.0, d.1, d.2]).chain(c.m.iter_mut().zip([q.m0, q.m1, q.m2])) {
                row[..n].fill(v);
            }
            return;
        }
        let steps = n.min(self.left[slot] - 1);
        let d = self.step[slot];
        let q = &mut self.coefs[slot];
        for i in 0..steps {
            q.add(&d);
            (c.g[i], c.k[i], c.m[0][i], c.m[1][i], c.m[2][i]) = (q.g, q.k, q.m0, q.m1, q.m2);
        }
        self.left[slot] -= steps;
        if steps < n {
            // The glide's last frame lands on the target exactly.
            self.left[slot] = 0;
            self.gliding -= 1;
            *q = self.target[slot];
            for i in steps..n {
                (c.g[i], c.k[i], c.m[0][i], c.m[1][i], c.m[2][i]) = (q.g, q.k, q.m0, q.m1, q.m2);
            }
        }
        let [a1, a2, a3] = &mut c.a;
        for i in 0..n {
            let g = c.g[i];
            a1[i] = 1.0 / (1.0 + g * (g + c.k[i]));
            a2[i] = g * a1[i];
            a3[i] = g * a2[i];
        }
        self.derived[slot] = self.coefs[slot].update_coefs();
    }

    /// Contains non-finite states; flushes what would linger as subnormals. Only the
    /// running slots' states can hold anything: every other slot's state is cleared when
    /// it stops running (`refresh`, `set_at_rest`, `load_from_tdf2`) and no filtering
    /// touches it.
    fn flush_states(&mut self) {
        let slots = self.slots();
        for ch in 0..self.channels {
            let state = &mut self.state[ch * slots..(ch + 1) * slots];
            for &slot in &self.run_slots {
                for v in state[slot].iter_mut() {
                    if !v.is_finite() || v.abs() < ferrofx::dsp::sos::FLUSH_BELOW {
                        *v = 0.0;
                    }
                }
            }
        }
    }

    /// The same over every slot (the tests' reference).
    #[cfg(test)]
    fn flush_all_states(&mut self) {
        for s in self.state.iter_mut() {
            for v in s.iter_mut() {
                if !v.is_finite() || v.abs() < ferrofx::dsp::sos::FLUSH_BELOW {
                    *v = 0.0;
                }
            }
        }
    }

    /// Forgets which slots are quiet, so that the next `refresh` looks at every slot (the
    /// tests' reference for the shortcut).
    #[cfg(test)]
    fn forget_quiet(&mut self) {
        self.quiet.fill(false);
    }

    /// The frame-by-frame order [`SvfCascade::process_at`] must equal: per frame, every
    /// glide and fade steps, then each channel runs through every slot in turn.
    #[cfg(test)]
    fn process_at_frame_by_frame(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        let slots = self.slots();
        let channels = buffers.len().min(self.channels);
        let chain = |slots_run: &[usize], mut x: f64, st: &mut [[f64; 2]], coefs: &[SvfCoefs], derived: &[(f64, f64, f64)]| {
            for &slot in slots_run {
                let q = &coefs[slot];
                let s = &mut st[slot];
                let (a1, a2, a3) = derived[slot];
                let v3 = x - s[1];
                let v1 = a1 * s[0] + a2 * v3;
                let v2 = s[1] + a2 * s[0] + a3 * v3;
                *s = [2.0 * v1 - s[0], 2.0 * v2 - s[1]];
                x = q.m0 * x + q.m1 * v1 + q.m2 * v2;
            }
            x
        };
        for i in offset..offset + frames {
            if self.gliding > 0 {
                for &slot in &self.run_slots {
                    match self.left[slot] {
                        0 => continue,
                        1 => {
                            self.left[slot] = 0;
                            self.coefs[slot] = self.target[slot];
                            self.gliding -= 1;
                        }
                        _ => {
                            self.left[slot] -= 1;
                            let d = self.step[slot];
                            self.coefs[slot].add(&d);
                        }
                    }
                    self.derived[slot] = self.coefs[slot].update_coefs();
                }
            }
            if self.fading > 0 {
                for run in &self.runs {
                    let fade = &mut self.fades[run.band];
                    if fade.active && fade.left > 0 {
                        fade.left -= 1;
                        let t = 1.0 - fade.left as f64 / fade.length as f64;
                        fade.weight = t * t * (3.0 - 2.0 * t);
                    }
                }
            }
            for (ch, buf) in buffers.iter_mut().enumerate().take(channels) {
                let st = &mut self.state[ch * slots..(ch + 1) * slots];
                let mut x = f64::from(buf[i]);
                for run in &self.runs {
                    let y = chain(&self.run_slots[run.live.0..run.live.1], x, st, &self.coefs, &self.derived);
                    x = match run.incoming {
                        None => y,
                        Some((a, b)) => {
                            let y_new = chain(&self.run_slots[a..b], x, st, &self.coefs, &self.derived);
                            y + self.fades[run.band].weight * (y_new - y)
                        }
                    };
                }
                buf[i] = x as f32;
            }
        }
        self.flush_all_states();
    }

    /// Clears the state.
    pub fn reset(&mut self) {
        self.state.fill([0.0; 2]);
    }
}

/// One frame of one slot: the SVF update and output with frame `i`'s coefficients.
#[inline(always)]
fn tick(c: &PieceCoefs, i: usize, s: &mut [f64; 2], x: f64) -> f64 {
    let (a1, a2, a3) = (c.a[0][i], c.a[1][i], c.a[2][i]);
    let v3 = x - s[1];
    let v1 = a1 * s[0] + a2 * v3;
    let v2 = s[1] + a2 * s[0] + a3 * v3;
    *s = [2.0 * v1 - s[0], 2.0 * v2 - s[1]];
    c.m[0][i] * x + c.m[1][i] * v1 + c.m[2][i] * v2
}

/// One slot over `n` frames of `M` channels (`states`: their state indices); the
/// channels' recurrences are independent and overlap.
#[inline(always)]
fn filter<const M: usize>(c: &PieceCoefs, mut work: [&mut [f64; PIECE]; M], state: &mut [[f64; 2]], states: [usize; M], n: usize) {
    let mut s: [[f64; 2]; M] = states.map(|at| state[at]);
    for i in 0..n {
        for (w, s) in work.iter_mut().zip(s.iter_mut()) {
            w[i] = tick(c, i, s, w[i]);
        }
    }
    for (at, s) in states.into_iter().zip(s) {
        state[at] = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofx::design::rbj::biquad;
    use ferrofx::design::BiquadKind;
    use ferrofx_testkit::Rng;

    /// A random stable section of the kinds the equaliser designs (or identity).
    fn section(rng: &mut Rng) -> Sos {
        let kinds = [BiquadKind::Peaking, BiquadKind::LowShelf, BiquadKind::HighShelf, BiquadKind::Lowpass, BiquadKind::Highpass, BiquadKind::Notch];
        if rng.below(8) == 0 {
            return Sos::IDENTITY;
        }
        let freq_hz = 20.0 * 1000f64.powf(rng.unit());
        let q = 0.3 + 4.0 * rng.unit();
        let gain_db = 24.0 * (2.0 * rng.unit() - 1.0);
        biquad(kinds[rng.below(kinds.len())], freq_hz, q, gain_db, 48_000.0)
    }

    fn design(rng: &mut Rng, per_band: usize) -> Vec<Sos> {
        (0..1 + rng.below(per_band)).map(|_| section(rng)).collect()
    }

    /// The piece-wise order equals the frame-by-frame one bit for bit (outputs and
    /// states), and `refresh` passing over quiet slots equals it looking at every slot,
    /// through seeded random glides of every length, switches with their
    /// cross-fades, fades ending, identity slots, blocks of 1 to 200 frames at any offset,
    /// and one to three channels (an odd one runs alone).
    #[test]
    fn pieces_equal_the_frame_by_frame_order() {
        let (bands, per_band) = (6, 3);
        for channels in 1..=3 {
            let mut rng = Rng::new(0x5eed_0000 + channels as u64);
            let mut a = SvfCascade::new(bands, per_band, channels);
            let mut b = SvfCascade::new(bands, per_band, channels);
            for band in 0..bands {
                let d = design(&mut rng, per_band);
                a.switch_band(band, &d, 1);
                b.switch_band(band, &d, 1);
            }
            let mut checked = 0usize;
            for round in 0..120 {
                // Events between blocks, the same on both.
                if a.finish_fades() | b.finish_fades() {
                    a.refresh();
                    b.forget_quiet();
                    b.refresh();
                }
                for band in 0..bands {
                    match rng.below(6) {
                        0 | 1 => {
                            let (d, len) = (design(&mut rng, per_band), 1 + rng.below(300));
                            a.glide_band(band, &d, len);
                            b.glide_band(band, &d, len);
                        }
                        2 => {
                            let (d, len) = (design(&mut rng, per_band), 1 + rng.below(400));
                            assert_eq!(a.switch_band(band, &d, len), b.switch_band(band, &d, len));
                        }
                        _ => {}
                    }
                }
                a.refresh();
                b.forget_quiet();
                b.refresh();
                let frames = 1 + rng.below(200);
                let offset = rng.below(5);
                let input: Vec<Vec<f32>> = (0..channels).map(|_| (0..offset + frames).map(|_| (rng.unit() - 0.5) as f32).collect()).collect();
                let (mut ya, mut yb) = (input.clone(), input.clone());
                a.process_at(&mut ya.iter_mut().map(|v| &mut v[..]).collect::<Vec<_>>(), offset, frames);
                b.process_at_frame_by_frame(&mut yb.iter_mut().map(|v| &mut v[..]).collect::<Vec<_>>(), offset, frames);
                for (c, (p, q)) in ya.iter().zip(&yb).enumerate() {
                    for (i, (x, y)) in p.iter().zip(q).enumerate() {
                        assert_eq!(x.to_bits(), y.to_bits(), "{channels} ch, round {round}, channel {c}, frame {i}: {x} vs {y}");
                    }
                }
                assert!(a.state.iter().zip(&b.state).all(|(s, t)| s[0].to_bits() == t[0].to_bits() && s[1].to_bits() == t[1].to_bits()), "{channels} ch, round {round}: states differ");
                assert_eq!((a.gliding, a.fading, a.interpolating()), (b.gliding, b.fading, b.interpolating()), "round {round}");
                checked += frames * channels;
            }
            assert!(checked > 5_000);
            assert!(a.state.iter().any(|s| s[0] != 0.0), "the cascade filtered something");
        }
    }
}
