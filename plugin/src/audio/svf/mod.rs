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
//!
//! Files: this one (the cascade's slots, banks, glides and fades: [`SvfCascade`]),
//! `coefs.rs` (one section's SVF coefficients and the state conversions), `process.rs`
//! (the filtering, in pieces of frames), `tests.rs` (the frame-by-frame order the
//! pieces must equal).

mod coefs;
mod process;
#[cfg(target_arch = "x86_64")]
mod wave;
#[cfg(test)]
mod tests;

pub use coefs::SvfCoefs;

use ferrofx::design::Sos;
use ferrofx::dsp::sos::SosCoefs;
#[cfg(target_arch = "x86_64")]
use ferrofx::dsp::simd::Isa;
use process::{PieceCoefs, PIECE};

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

impl Fade {
    /// Moves the fade on by one frame (before the frame is filtered) and returns the
    /// incoming design's weight for that frame.
    #[inline]
    fn advance(&mut self) -> f64 {
        if self.active && self.left > 0 {
            self.left -= 1;
            // Smoothstep: no corner at either end.
            let t = 1.0 - self.left as f64 / self.length as f64;
            self.weight = t * t * (3.0 - 2.0 * t);
        }
        self.weight
    }
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
    /// per-channel loop needs no division): always `coefs[slot].update_coefs()`, bit for
    /// bit (the wavefronts compute it that way for slots that do not glide).
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
    /// A wavefront's coefficients per step.
    #[cfg(target_arch = "x86_64")]
    wave_coefs: Box<wave::WaveCoefs>,
    /// The wavefront kernel this CPU runs, if any (`wave.rs`; detected at construction).
    #[cfg(target_arch = "x86_64")]
    wave_kernel: Option<wave::WaveKernel>,
    /// The identity section in SVF form.
    identity: SvfCoefs,
    /// Per bank and band (`bank * bands + band`), a bit for each of its slots (bit `k`:
    /// slot `k`) that is not known to be identity at rest with a clear state: `refresh`
    /// and `glide_band` visit only these. Set wherever a slot's coefficients or target
    /// change, cleared where `refresh` finds the slot quiet.
    busy: Vec<u64>,
}

/// A mask of the `n` lowest bits (`n <= 64`).
fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            k
        })
    })
}

impl SvfCascade {
    /// The most slots a band can have (they are bits of a `u64` mask).
    pub const MAX_PER_BAND: usize = 64;

    /// Allocates `bands` bands of `per_band` slots (two banks each; at most
    /// [`SvfCascade::MAX_PER_BAND`]) for `channels` channels, all identity.
    pub fn new(bands: usize, per_band: usize, channels: usize) -> SvfCascade {
        debug_assert!(per_band <= Self::MAX_PER_BAND, "a band's slots are bits of a u64");
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
            piece_coefs: Box::new(PieceCoefs::default()),
            #[cfg(target_arch = "x86_64")]
            wave_coefs: Box::new([[[0.0; wave::WAVE]; 6]; PIECE + wave::WAVE - 1]),
            #[cfg(target_arch = "x86_64")]
            wave_kernel: wave::WaveKernel::for_isa(Isa::detect()),
            identity,
            busy: vec![0; 2 * bands],
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

    /// Marks `slot` known quiet (identity at rest with a clear state) or not.
    fn set_quiet(&mut self, slot: usize, quiet: bool) {
        let (group, bit) = (slot / self.per_band, 1u64 << (slot % self.per_band));
        if quiet {
            self.busy[group] &= !bit;
        } else {
            self.busy[group] |= bit;
        }
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
        self.set_quiet(slot, to == self.identity);
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
        self.busy.fill(0);
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
                self.set_quiet(slot, false);
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
        // The designed slots, then those beyond that are not known quiet (a quiet slot,
        // identity at rest staying identity, has nothing to glide: `refresh` would end
        // its glide at once, the slot not running; most of a band's slots are such).
        let designed = targets.len().min(self.per_band);
        let beyond = self.busy[bank * self.bands + band] & !low_bits(designed);
        for k in (0..designed).chain(bits(beyond)) {
            self.glide_slot(self.slot(bank, band, k), targets.get(k), samples);
        }
    }

    /// Moves `slot` to `target` (identity where `None`) linearly over `samples` samples.
    fn glide_slot(&mut self, slot: usize, target: Option<&Sos>, samples: usize) {
        let to = match target {
            Some(sos) => SvfCoefs::from_sos(sos),
            // Identity at rest staying identity (not yet known quiet): nothing to glide.
            None if self.coefs[slot] == self.identity && self.left[slot] == 0 => return,
            None => self.identity,
        };
        self.target[slot] = to;
        self.step[slot] = SvfCoefs::lerp_step(&self.coefs[slot], &to, samples as f64);
        self.left[slot] = samples;
        self.set_quiet(slot, false);
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
                for k in bits(self.busy[bank * self.bands + band]) {
                    let slot = self.slot(bank, band, k);
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
                        self.set_quiet(slot, true);
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

    /// Clears the state.
    pub fn reset(&mut self) {
        self.state.fill([0.0; 2]);
    }
}
