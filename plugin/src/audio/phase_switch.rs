//! Changing the phase mode while playing (natural to linear, linear to natural, one FIR
//! length to another) inside processing, so that the latency the host is told is at
//! every moment the latency of the audio produced, with no restart of the plugin.
//!
//! A mode's *band stage* is the equaliser (the bands that mode runs as IIR filters)
//! followed by its linear-phase FIR (none in natural phase). A switch runs the new mode's
//! band stage beside the running one, on the same input:
//! 1. **waiting** (linear targets): for the designer thread's FIR of the new length;
//! 2. **warming**: the new stage runs until its history is full (the FIR's length plus
//!    its equaliser's ring-down; for natural phase the equaliser's, at least
//!    [`NATURAL_WARM_MS`]) while the output is still the old stage's;
//!    the old stage's output is written into a delay line meanwhile;
//! 3. **fading**: at the start of the next host block the new latency is reported
//!    ([`PhaseSwitch::begin_fade`]) and the output cross-fades over
//!    [`crate::control::linear::CROSSFADE_MS`] from the old stage's output, delayed by the latency
//!    difference (the delay line already holds it), to the new stage's;
//! 4. the new stage becomes the running one: the caller swaps the equalisers and
//!    installs the FIR ([`Finished`]).
//!
//! A latency decrease cannot delay the new output into the old one's time: the
//! cross-fade then joins the two as they are, as a host's own compensation jump does.
//!
//! **Fixed latency** (a latency reserve, [`PhaseSwitch::new`]'s `fixed`): the plugin
//! reports one latency `L` for the whole activation, and every mode's output is delayed
//! to it by a pad of `L` minus its own latency (the running stage's [`PhaseSwitch::pad`],
//! the incoming one's filled while it warms). Both outputs then line up at `L`, the
//! cross-fade joins aligned signals in both directions, nothing is reported, and at the
//! end the incoming pad becomes the running one. A mode whose latency exceeds `L` is not
//! switched to here ([`PhaseSwitch::reachable`]): it waits for a restart.
//! Only the phase mode switches this way; everything here is allocated in
//! [`PhaseSwitch::new`] (from `activate`), and nothing allocates, locks or blocks after.

use crate::shared::bands::{Band, BANDS};
use crate::audio::delay::DelayLine;
use crate::audio::linear::LinearAudio;
use crate::control::linear::{latency_of, FirMode, LinearFir, CROSSFADE_MS};
use crate::audio::routing::RoutedEqualiser;

/// How long a natural-phase band stage runs before it is faded in, at least: its IIR
/// filters' start-up transient from silence must have decayed by 120 dB, which takes
/// longer for low, narrow bands (up to [`MAX_WARM_MS`]).
pub const NATURAL_WARM_MS: f64 = 20.0;

/// The longest warm-up a natural-phase stage gets (a band whose transient rings longer
/// is faded in with the rest of it).
pub const MAX_WARM_MS: f64 = 2000.0;

/// The longest latency the linear modes have (half the longest FIR).
pub const MAX_LINEAR_LATENCY: usize = 65_536 / 2;

/// Where a switch stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    Waiting,
    Warming { done: usize, need: usize },
    Fading { at: usize },
}

/// The mode switch's audio-side state (see the module docs).
pub struct PhaseSwitch {
    /// The equaliser of the incoming mode.
    pub eq: RoutedEqualiser,
    /// The incoming mode's FIR (linear targets, once designed).
    fir: Option<Box<LinearFir>>,
    /// The incoming mode's FIR, `None` for natural phase.
    target: Option<FirMode>,
    step: Step,
    /// The incoming stage's signal, one buffer per channel of `max_block`.
    scratch: Vec<Vec<f32>>,
    /// The outgoing stage's output, delayed by the latency difference while fading.
    delay: DelayLine,
    fade_len: usize,
    /// The sample rate (a mode's latency depends on it in analog phase).
    fs: f64,
    /// Warm-up bounds in frames ([`NATURAL_WARM_MS`], [`MAX_WARM_MS`]).
    min_warm: usize,
    max_warm: usize,
    /// The fixed latency of a latency reserve (`None`: the latency follows the mode).
    fixed: Option<usize>,
    /// With a fixed latency: the running stage's output delayed to it, and the incoming
    /// stage's (see the module docs).
    pad: DelayLine,
    next_pad: DelayLine,
}

/// A switch's end: what the caller installs (the equaliser in [`PhaseSwitch::eq`] is
/// already the new mode's; the caller swaps it with its own).
pub struct Finished {
    /// The new mode's FIR (`None`: natural phase), for [`LinearAudio::install`].
    pub fir: Option<Box<LinearFir>>,
}

impl PhaseSwitch {
    /// Allocates everything a switch needs at this configuration; `fixed`: the latency
    /// of a latency reserve, held whatever the mode.
    pub fn new(fs: f64, channels: usize, max_block: usize, fixed: Option<usize>) -> PhaseSwitch {
        let pad_frames = fixed.unwrap_or(0);
        PhaseSwitch {
            eq: RoutedEqualiser::new(fs, channels, max_block),
            fir: None,
            target: None,
            step: Step::Idle,
            scratch: vec![vec![0.0; max_block.max(1)]; channels],
            delay: DelayLine::new(channels, MAX_LINEAR_LATENCY),
            fade_len: ((CROSSFADE_MS * 1e-3 * fs) as usize).max(1),
            fs,
            min_warm: ((NATURAL_WARM_MS * 1e-3 * fs) as usize).max(1),
            max_warm: ((MAX_WARM_MS * 1e-3 * fs) as usize).max(1),
            fixed,
            pad: DelayLine::new(channels, pad_frames),
            next_pad: DelayLine::new(channels, pad_frames),
        }
    }

    /// Whether it was allocated for this configuration.
    pub fn allocated_for(&self, fs: f64, channels: usize, max_block: usize, fixed: Option<usize>) -> bool {
        self.eq.allocated_for(fs, channels, max_block) && self.fixed == fixed
    }

    /// At activation, with a fixed latency: the running mode's latency, so its output is
    /// padded to the fixed one (history silent).
    pub fn start_running(&mut self, running_latency: usize) {
        if let Some(fixed) = self.fixed {
            self.pad.set_len(fixed.saturating_sub(running_latency));
            self.pad.clear();
        }
    }

    /// Whether the mode of FIR length `taps` (`None`: natural phase) can be switched to
    /// while active: always where the latency follows the mode, within the reserve with
    /// a fixed latency.
    pub fn reachable(&self, mode: Option<FirMode>) -> bool {
        self.fixed.is_none_or(|l| latency_of(mode, self.fs) <= l)
    }

    /// Whether the latency is fixed for this activation.
    pub fn fixed(&self) -> Option<usize> {
        self.fixed
    }

    /// The running stage's output delayed to the fixed latency (nothing without one).
    /// Every block, after the running stage and before [`PhaseSwitch::finish_block`].
    pub fn pad_running(&mut self, out: &mut [&mut [f32]], frames: usize) {
        if self.fixed.is_some() && !self.pad.is_empty() {
            self.pad.process(out, frames);
        }
    }

    /// Clears the pads' history (a host reset).
    pub fn clear(&mut self) {
        self.pad.clear();
        self.next_pad.clear();
    }

    /// Whether the new stage is running beside the old one (warming or fading): then
    /// [`PhaseSwitch::capture`] and [`PhaseSwitch::finish_block`] bracket each block.
    pub fn running(&self) -> bool {
        matches!(self.step, Step::Warming { .. } | Step::Fading { .. })
    }

    /// Whether a switch is under way at all.
    pub fn busy(&self) -> bool {
        self.step != Step::Idle
    }

    /// Whether the output is cross-fading (the new latency already reported).
    pub fn fading(&self) -> bool {
        matches!(self.step, Step::Fading { .. })
    }

    /// The FIR length the switch waits for from the designer (for
    /// [`LinearAudio::poll`]), if any.
    pub fn wanted_fir(&self) -> Option<FirMode> {
        match self.step {
            Step::Waiting | Step::Warming { .. } => self.target,
            _ => None,
        }
    }

    /// The incoming mode's FIR length while a switch is under way.
    pub fn target(&self) -> Option<Option<FirMode>> {
        self.busy().then_some(self.target)
    }

    /// Follows the mode the parameters ask for (`wanted`, a FIR length or `None` for
    /// natural phase) against the one running: starts, redirects or drops a switch.
    /// A switch that is fading finishes first. `bands` are the current band settings,
    /// set on the incoming equaliser as the new mode runs them. Once per host block.
    pub fn follow(&mut self, wanted: Option<FirMode>, running: Option<FirMode>, bands: &[Band; BANDS], stereo: bool, linear: &mut LinearAudio) {
        if self.fading() || (self.busy() && self.target == wanted) {
            return;
        }
        self.abort(linear);
        if wanted == running {
            return;
        }
        self.target = wanted;
        if let Some(fixed) = self.fixed {
            self.next_pad.set_len(fixed.saturating_sub(latency_of(wanted, self.fs)));
            self.next_pad.clear();
        }
        for (i, band) in bands.iter().enumerate() {
            self.eq.set_band(i, stage_band(band, wanted.is_some_and(FirMode::replaces_bands), stereo));
        }
        self.eq.snap();
        self.eq.reset();
        self.step = match wanted {
            Some(_) => Step::Waiting,
            None => Step::Warming { done: 0, need: self.warm_frames(0) },
        };
    }

    /// A FIR of the wanted length from [`LinearAudio::poll`]: it starts (or, when a newer
    /// design arrives while warming, restarts) the warm-up.
    pub fn offer(&mut self, fir: Option<Box<LinearFir>>, linear: &mut LinearAudio) {
        let Some(mut fir) = fir else { return };
        if self.wanted_fir() != Some(fir.mode) {
            linear.give_back(fir);
            return;
        }
        fir.reset();
        self.step = Step::Warming { done: 0, need: self.warm_frames(fir.length) };
        if let Some(old) = self.fir.replace(fir) {
            linear.give_back(old);
        }
        self.eq.reset();
    }

    /// How long the incoming stage runs before it is faded in: its FIR's length (`taps`)
    /// plus its equaliser's ring-down, at least the minimum; with a fixed latency also its
    /// pad's length (the pad's history must be the stage's own output).
    fn warm_frames(&self, taps: usize) -> usize {
        let pad = if self.fixed.is_some() { self.next_pad.len() } else { 0 };
        (taps + pad + self.eq.ring_frames(self.max_warm)).max(self.min_warm)
    }

    /// At a host block's start: when the new stage is warm, the cross-fade begins with
    /// this block and the new mode's latency (half its FIR, 0 for natural phase) is
    /// returned, to be reported from this block on. `old_latency` is the running mode's.
    pub fn begin_fade(&mut self, old_latency: usize) -> Option<usize> {
        let Step::Warming { done, need } = self.step else { return None };
        if done < need {
            return None;
        }
        let new_latency = latency_of(self.target, self.fs);
        // With a fixed latency both outputs are padded to it: no delay between them.
        let grow = if self.fixed.is_some() { 0 } else { new_latency.saturating_sub(old_latency) };
        self.delay.set_len(grow);
        self.step = Step::Fading { at: 0 };
        Some(new_latency)
    }

    /// Drops a switch under way (a reset, or another mode asked for), its FIR back to
    /// the designer.
    pub fn abort(&mut self, linear: &mut LinearAudio) {
        if let Some(fir) = self.fir.take() {
            linear.give_back(fir);
        }
        self.step = Step::Idle;
    }

    /// Before the band stage: keeps a copy of the block's input (planar, `frames`) for
    /// the incoming stage. Only while [`PhaseSwitch::running`].
    pub fn capture(&mut self, input: &[&mut [f32]], frames: usize) {
        for (s, x) in self.scratch.iter_mut().zip(input) {
            s[..frames].copy_from_slice(&x[..frames]);
        }
    }

    /// The incoming stage's equaliser and its block (the first `frames` of each
    /// channel's scratch), for the band stage to run beside the running one.
    pub fn stage(&mut self, frames: usize) -> (&mut RoutedEqualiser, [&mut [f32]; crate::shared::MAX_CHANNELS]) {
        let mut refs: [&mut [f32]; crate::shared::MAX_CHANNELS] = std::array::from_fn(|_| &mut [][..]);
        for (r, s) in refs.iter_mut().zip(self.scratch.iter_mut()) {
            *r = &mut s[..frames];
        }
        (&mut self.eq, refs)
    }

    /// After the old stage has filtered `out` (its output): runs the new stage's FIR on
    /// the scratch, then warms up (the old output written into the delay line) or
    /// cross-fades `out` from the delayed old output to the new. Returns the switch's
    /// end when the cross-fade is over, this block. Only while [`PhaseSwitch::running`].
    pub fn finish_block(&mut self, out: &mut [&mut [f32]], frames: usize) -> Option<Finished> {
        const MAX: usize = crate::shared::MAX_CHANNELS;
        let channels = out.len().min(self.scratch.len()).min(MAX);
        if let Some(fir) = self.fir.as_mut() {
            let mut refs: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
            for (r, s) in refs.iter_mut().zip(self.scratch.iter_mut()) {
                *r = &mut s[..frames];
            }
            fir.process(&mut refs[..channels]);
        }
        if self.fixed.is_some() && !self.next_pad.is_empty() {
            self.next_pad.process(&mut self.scratch[..channels], frames);
        }
        match self.step {
            Step::Warming { done, need } => {
                self.delay.write(&out[..channels], frames);
                self.step = Step::Warming { done: done + frames, need };
                None
            }
            Step::Fading { at } => {
                self.delay.process(&mut out[..channels], frames);
                let mut at = at;
                for i in 0..frames {
                    let w = (at as f32 + 0.5) / self.fade_len as f32;
                    for (o, s) in out.iter_mut().zip(&self.scratch).take(channels) {
                        o[i] = (1.0 - w) * o[i] + w * s[i];
                    }
                    at += 1;
                    if at >= self.fade_len {
                        // The rest of the block is the new stage's alone.
                        for (o, s) in out.iter_mut().zip(&self.scratch).take(channels) {
                            o[i + 1..frames].copy_from_slice(&s[i + 1..frames]);
                        }
                        self.step = Step::Idle;
                        // The incoming stage's pad goes with it.
                        std::mem::swap(&mut self.pad, &mut self.next_pad);
                        return Some(Finished { fir: self.fir.take() });
                    }
                }
                self.step = Step::Fading { at };
                None
            }
            Step::Idle | Step::Waiting => None,
        }
    }
}

/// What the IIR equaliser of a mode runs of `band`: in linear phase the FIR carries the
/// bands it can (see [`crate::control::linear::in_fir`]), so they are off in the equaliser.
pub fn stage_band(band: &Band, linear: bool, stereo: bool) -> Band {
    if linear && crate::control::linear::in_fir(band, stereo) {
        Band { enabled: false, ..*band }
    } else {
        *band
    }
}
