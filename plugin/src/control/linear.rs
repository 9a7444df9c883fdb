//! Linear-phase mode: the bands' total magnitude response realised as one linear-phase
//! FIR, designed off the audio thread whenever the bands change and swapped in with a
//! cross-fade, run by the core's partitioned convolution.
//!
//! - **Design** ([`design`]): the magnitude of the bands on every channel (the bands
//!   routed to one channel, mid or side keep their natural phase and run as before) is
//!   sampled on the FIR's own FFT grid, given the phase of a pure delay of `n / 2`, and
//!   inverse-transformed; a short taper (the outer 10 % on each side) keeps the ends
//!   quiet. Tap 0 is zero and the taps are symmetric about tap `n / 2` to the bit, so the
//!   latency is exactly `n / 2` samples.
//! - **Threads**: a [`Designer`] thread (started in `activate`, stopped on deactivation)
//!   polls the phase mode and the band parameters every 10 ms; while a linear mode is
//!   chosen and they change, it designs, builds a core [`Engine`] of that length and
//!   sends it ([`LinearFir`], tagged with its length) to the audio thread through an
//!   `rtrb` ring; replaced engines come back through a second ring and are dropped there.
//! - **Audio thread** (`audio/linear.rs`, `LinearAudio`): a new design of the running length first runs
//!   beside the current one for `n` samples (so its history is full), then the output
//!   cross-fades from the old to the new over [`CROSSFADE_MS`]. A design of another
//!   length is a change of phase mode, and of latency: `LinearAudio::poll` hands it to
//!   the mode switch (`audio/phase_switch.rs`), which runs the whole band stage of the
//!   new mode beside the old one and installs it (`LinearAudio::install`). Nothing is
//!   allocated, freed or locked there.
//! - **Analog phase** ([`design_analog`]): the same hand-over carries a short correction
//!   FIR that runs after the IIR equaliser (which keeps its bands) so the bands follow
//!   their analog prototypes in magnitude and phase ([`FirMode::Analog`]).
//! - **Latency**: `n / 2` samples while a linear mode runs, the correction's delay in
//!   analog phase (4 ms), 0 in natural phase ([`FirMode::latency`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ferrofx::chain::{Chain, Fir};
use ferrofx::design::Sos;
use ferrofx::Engine;
use rtrb::{Consumer, Producer, RingBuffer};

use crate::shared::bands::{Band, Route, BANDS, MAX_SECTIONS_PER_BAND};
use crate::control::params::FerroParams;

/// A phase mode's FIR, the name of the mode wherever a FIR is handed over: linear phase
/// (the bands' magnitude as one FIR of this many taps, in the IIR equaliser's place), or
/// analog phase (a correction after the equaliser, which keeps its bands). Natural phase
/// has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirMode {
    Linear { taps: usize },
    Analog,
}

impl FirMode {
    /// Whether the FIR carries its bands in place of the IIR equaliser.
    pub fn replaces_bands(self) -> bool {
        matches!(self, FirMode::Linear { .. })
    }

    /// The latency at `fs`: half a linear FIR, analog phase's correction delay.
    pub fn latency(self, fs: f64) -> usize {
        match self {
            FirMode::Linear { taps } => taps / 2,
            FirMode::Analog => ferrofx::design::natural::natural_length(fs).1,
        }
    }

    /// The FIR for `bands` at `fs`: [`design`] or [`design_analog`]. Allocates.
    pub fn design(self, bands: &[Band; BANDS], fs: f64, stereo: bool) -> Vec<f64> {
        match self {
            FirMode::Linear { taps } => design(bands, fs, taps, stereo),
            FirMode::Analog => design_analog(bands, fs, stereo),
        }
    }
}

/// The latency of `mode` at `fs` (`None`, natural phase: 0).
pub fn latency_of(mode: Option<FirMode>, fs: f64) -> usize {
    mode.map_or(0, |m| m.latency(fs))
}

/// Analog phase's correction FIR: after the IIR equaliser (which keeps every band), the
/// bands it carries ([`in_fir`]) follow their analog prototypes in magnitude and phase up
/// to 0.9 of Nyquist, behind [`FirMode::latency`]'s delay (`ferrofx::design::natural`; within
/// 0.1 dB and 5 degrees where the bands are analog-matched, the default: the cookbook's
/// band-pass and notch vanish at Nyquist and cannot be corrected close to it). Allocates.
pub fn design_analog(bands: &[Band; BANDS], fs: f64, stereo: bool) -> Vec<f64> {
    use ferrofx::design::natural::{correction_fir, natural_length};
    let mut sections = Vec::new();
    let mut carried = Vec::new();
    for b in bands.iter().filter(|b| in_fir(b, stereo)) {
        let b = b.clamped(fs);
        let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
        let k = b.design_into(fs, &mut buf);
        sections.extend_from_slice(&buf[..k]);
        carried.push(b);
    }
    let target = |f: f64| carried.iter().map(|b| b.analog_response(f)).product();
    let (taps, delay) = natural_length(fs);
    correction_fir(&target, &sections, fs, taps, delay)
}

/// Cross-fade between two designs.
pub const CROSSFADE_MS: f64 = 20.0;
/// How often the designer looks at the bands.
pub const POLL_MS: u64 = 10;

/// Whether band `b` is part of the linear-phase FIR on a layout (`stereo`: two channels,
/// where routed bands stay minimum-phase). Dynamic bands stay minimum-phase too (their
/// gain moves every 32 samples).
pub fn in_fir(b: &Band, stereo: bool) -> bool {
    b.active() && !b.dynamic && (!stereo || b.route == Route::Stereo)
}

/// The linear-phase FIR of `bands`' magnitude at `fs`, `n` taps (`n` even, at least 16):
/// see the module docs. Allocates (off the audio thread).
pub fn design(bands: &[Band; BANDS], fs: f64, n: usize, stereo: bool) -> Vec<f64> {
    use realfft::RealFftPlanner;
    let n = n.max(16) & !1;
    let half = n / 2;
    let mut designed: Vec<([Sos; MAX_SECTIONS_PER_BAND], usize)> = Vec::new();
    for b in bands.iter().filter(|b| in_fir(b, stereo)) {
        let mut buf = [Sos::IDENTITY; MAX_SECTIONS_PER_BAND];
        let k = b.clamped(fs).design_into(fs, &mut buf);
        designed.push((buf, k));
    }
    // Zero-phase spectrum on the FFT grid.
    let mut spectrum: Vec<num_complex::Complex64> = (0..=half)
        .map(|k| {
            let w = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            let mag: f64 = designed.iter().map(|(buf, m)| buf[..*m].iter().map(|s| s.response(w).norm()).product::<f64>()).product();
            num_complex::Complex64::new(mag, 0.0)
        })
        .collect();
    let mut planner = RealFftPlanner::<f64>::new();
    let inverse = planner.plan_fft_inverse(n);
    let mut zero_phase = inverse.make_output_vec();
    // The spectrum is real and even: its inverse is real and even. (process can only fail
    // on wrong lengths, which these are not.)
    let _ = inverse.process(&mut spectrum, &mut zero_phase);
    let scale = 1.0 / n as f64;
    // Delayed by n/2 and tapered, symmetric by construction.
    let taper = (n / 10).max(1);
    let mut taps = vec![0.0f64; n];
    for k in 0..half {
        // Distance from the centre k; the taper acts on the outer `taper` taps.
        let from_end = half - k;
        let w = if from_end < taper { 0.5 - 0.5 * (std::f64::consts::PI * from_end as f64 / taper as f64).cos() } else { 1.0 };
        let v = zero_phase[k] * scale * w;
        taps[half + k] = v;
        if k > 0 {
            taps[half - k] = v;
        }
    }
    taps
}

/// A phase mode's FIR ready to run: its mode, its length and latency, and the engine
/// that runs it on every channel.
pub struct LinearFir {
    pub mode: FirMode,
    /// Taps of the FIR (a new design warms up for this many samples).
    pub length: usize,
    /// The latency the mode reports ([`FirMode::latency`]).
    pub latency: usize,
    engine: Engine,
}

impl LinearFir {
    /// Builds the engine that runs `coefficients` (a design of `mode`) on `channels`
    /// channels. Allocates; `None` when the taps do not design (never for
    /// [`FirMode::design`]'s).
    pub fn build(mode: FirMode, coefficients: Vec<f64>, fs: f64, channels: usize, max_block: usize) -> Option<Box<LinearFir>> {
        let length = coefficients.len();
        let chain: Chain = Fir::coefficients(coefficients).into();
        let engine = Engine::new(&chain.design(fs).ok()?, channels, max_block);
        Some(Box::new(LinearFir { mode, length, latency: mode.latency(fs), engine }))
    }

    /// Filters planar buffers in place (at most the `max_block` it was built for). No
    /// allocation, lock or free.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        self.engine.process(buffers);
    }

    /// Clears the FIR's history. Allocation-free.
    pub fn reset(&mut self) {
        self.engine.reset();
    }
}

/// What [`Designer`] needs to know about the audio configuration.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub fs: f64,
    pub channels: usize,
    pub max_block: usize,
}

/// The designer's end of the hand-over: builds engines from taps and sends them to the
/// audio thread; drops the ones that come back.
pub struct Sender {
    to_audio: Producer<Box<LinearFir>>,
    from_audio: Consumer<Box<LinearFir>>,
    setup: Setup,
}

impl Sender {
    /// Builds the engine of the `n`-tap design `taps` and sends it; false when the ring
    /// is full (the audio thread has not taken the last ones yet) or the taps do not
    /// design. Allocates.
    pub fn send(&mut self, mode: FirMode, taps: Vec<f64>) -> bool {
        self.collect();
        if self.to_audio.is_full() {
            return false;
        }
        match LinearFir::build(mode, taps, self.setup.fs, self.setup.channels, self.setup.max_block) {
            Some(fir) => self.to_audio.push(fir).is_ok(),
            None => false,
        }
    }

    /// Drops the engines the audio thread has given back.
    pub fn collect(&mut self) {
        while let Ok(old) = self.from_audio.pop() {
            drop(old);
        }
    }

    /// Whether the audio thread has room for another design.
    pub fn has_room(&self) -> bool {
        !self.to_audio.is_full()
    }
}

/// The audio thread's ends of the hand-over, and the FIR it starts with (`None`:
/// natural phase), for `audio::linear::LinearAudio`.
pub struct AudioEnd {
    pub incoming: Consumer<Box<LinearFir>>,
    pub returning: Producer<Box<LinearFir>>,
    pub first: Option<Box<LinearFir>>,
}

/// The two ends of a hand-over, the audio side starting in the mode of `first`: an
/// `(n, taps)` design (linear phase) or `None` (natural phase). Allocates.
pub fn link(setup: Setup, first: Option<(FirMode, Vec<f64>)>) -> (Sender, AudioEnd) {
    let (to_audio, incoming) = RingBuffer::<Box<LinearFir>>::new(4);
    let (returning, from_audio) = RingBuffer::<Box<LinearFir>>::new(8);
    let first = first.and_then(|(mode, taps)| LinearFir::build(mode, taps, setup.fs, setup.channels, setup.max_block));
    (Sender { to_audio, from_audio, setup }, AudioEnd { incoming, returning, first })
}

/// The designing thread.
pub struct Designer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Designer {
    /// Designs the FIR of the current bands at once when a linear mode is chosen (the
    /// audio side starts with it) and starts the thread that follows the phase mode and
    /// the bands. Allocates; not on the audio thread.
    pub fn start(params: Arc<FerroParams>, setup: Setup) -> (Designer, AudioEnd) {
        let stereo = setup.channels == 2;
        // What a design depends on: the mode and the bands it carries.
        let key = move |p: &FerroParams| -> (Option<FirMode>, [Band; BANDS]) {
            let bands = p.bands();
            let mode = p.phase.value().fir_mode();
            (mode, std::array::from_fn(move |i| if in_fir(&bands[i], stereo) { bands[i].clamped(setup.fs) } else { Band::default() }))
        };
        let mut last = key(&params);
        let first = last.0.map(|m| (m, m.design(&last.1, setup.fs, stereo)));
        let (mut sender, audio) = link(setup, first);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ferrofx linear-phase designer".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(POLL_MS));
                    sender.collect();
                    let now = key(&params);
                    if now == last || !sender.has_room() {
                        continue;
                    }
                    // Natural phase needs no design; the next linear choice designs anew.
                    if let Some(m) = now.0 {
                        if !sender.send(m, m.design(&now.1, setup.fs, stereo)) {
                            continue;
                        }
                    }
                    last = now;
                }
            })
            .ok();
        (Designer { stop, thread }, audio)
    }
}

impl Drop for Designer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

