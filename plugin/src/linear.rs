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
//! - **Audio thread** ([`LinearAudio`]): a new design of the running length first runs
//!   beside the current one for `n` samples (so its history is full), then the output
//!   cross-fades from the old to the new over [`CROSSFADE_MS`]. A design of another
//!   length is a change of phase mode, and of latency: [`LinearAudio::poll`] hands it to
//!   the mode switch (`phase_switch.rs`), which runs the whole band stage of the new
//!   mode beside the old one and installs it ([`LinearAudio::install`]). Nothing is
//!   allocated, freed or locked there.
//! - **Latency**: `n / 2` samples while a linear mode runs, 0 in natural phase.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ferrofx::chain::{Chain, Fir};
use ferrofx::design::Sos;
use ferrofx::Engine;
use rtrb::{Consumer, Producer, RingBuffer};

use crate::bands::{Band, Route, BANDS, MAX_SECTIONS_PER_BAND};
use crate::params::FerroParams;

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

/// A linear-phase FIR ready to run: its length (the phase mode it belongs to) and the
/// engine that runs it on every channel.
pub struct LinearFir {
    pub taps: usize,
    engine: Engine,
}

impl LinearFir {
    /// Builds the engine that runs `coefficients` (an `n`-tap design) on `channels`
    /// channels. Allocates; `None` when the taps do not design (never for [`design`]'s).
    pub fn build(taps: usize, coefficients: Vec<f64>, fs: f64, channels: usize, max_block: usize) -> Option<Box<LinearFir>> {
        let chain: Chain = Fir::coefficients(coefficients).into();
        let engine = Engine::new(&chain.design(fs).ok()?, channels, max_block);
        Some(Box::new(LinearFir { taps, engine }))
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
    pub fn send(&mut self, n: usize, taps: Vec<f64>) -> bool {
        self.collect();
        if self.to_audio.is_full() {
            return false;
        }
        match LinearFir::build(n, taps, self.setup.fs, self.setup.channels, self.setup.max_block) {
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

/// The two ends of a hand-over, the audio side starting in the mode of `first`: an
/// `(n, taps)` design (linear phase) or `None` (natural phase). Allocates.
pub fn link(setup: Setup, first: Option<(usize, Vec<f64>)>) -> (Sender, LinearAudio) {
    let (to_audio, incoming) = RingBuffer::<Box<LinearFir>>::new(4);
    let (returning, from_audio) = RingBuffer::<Box<LinearFir>>::new(8);
    let fade = ((CROSSFADE_MS * 1e-3 * setup.fs) as usize).max(1);
    let audio = LinearAudio {
        incoming,
        returning,
        current: first.and_then(|(n, taps)| LinearFir::build(n, taps, setup.fs, setup.channels, setup.max_block)),
        next: None,
        warm: 0,
        fade_at: 0,
        fade_len: fade,
        scratch: vec![vec![0.0; setup.max_block.max(1)]; setup.channels],
        swaps: 0,
    };
    (Sender { to_audio, from_audio, setup }, audio)
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
    pub fn start(params: Arc<FerroParams>, setup: Setup) -> (Designer, LinearAudio) {
        let stereo = setup.channels == 2;
        // What a design depends on: the length and the bands it carries.
        let key = move |p: &FerroParams| -> (Option<usize>, [Band; BANDS]) {
            let bands = p.bands();
            let taps = p.phase.value().taps();
            (taps, std::array::from_fn(move |i| if in_fir(&bands[i], stereo) { bands[i].clamped(setup.fs) } else { Band::default() }))
        };
        let mut last = key(&params);
        let first = last.0.map(|n| (n, design(&last.1, setup.fs, n, stereo)));
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
                    if let Some(n) = now.0 {
                        if !sender.send(n, design(&now.1, setup.fs, n, stereo)) {
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

/// The audio thread's side: the running FIR (none in natural phase), a new design of
/// the same length while it warms up and fades in, and the rings.
pub struct LinearAudio {
    incoming: Consumer<Box<LinearFir>>,
    returning: Producer<Box<LinearFir>>,
    current: Option<Box<LinearFir>>,
    next: Option<Box<LinearFir>>,
    /// Samples the incoming engine has run.
    warm: usize,
    /// Samples into the cross-fade.
    fade_at: usize,
    fade_len: usize,
    /// The incoming engine's output, one buffer per channel of `max_block`.
    scratch: Vec<Vec<f32>>,
    swaps: u64,
}

impl LinearAudio {
    /// The running FIR's length: `None` in natural phase.
    pub fn taps(&self) -> Option<usize> {
        self.current.as_ref().map(|f| f.taps)
    }

    /// The latency: half the running FIR's length, 0 in natural phase.
    pub fn latency(&self) -> usize {
        self.taps().map_or(0, |n| n / 2)
    }

    /// How many designs have been swapped in (for tests and the editor).
    pub fn swaps(&self) -> u64 {
        self.swaps
    }

    /// Whether a new design is on its way in (warming up or fading).
    pub fn switching(&self) -> bool {
        self.next.is_some()
    }

    /// Clears the filters' history (the host's reset). Allocation-free.
    pub fn reset(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.reset();
        }
        if let Some(n) = self.next.as_mut() {
            n.reset();
        }
        self.warm = 0;
        self.fade_at = 0;
    }

    /// Takes the designs that have arrived, in order: one of the running length starts
    /// its warm-up and cross-fade (the newest of those waiting, when none is warming up
    /// already); the first one of length
    /// `wanted` (a phase mode the switch is waiting for, `None` when it waits for none)
    /// is returned to the caller; any other goes back. Stops early rather than drop
    /// anything: a design is taken only while the return ring has room. No allocation,
    /// lock or free.
    pub fn poll(&mut self, wanted: Option<usize>) -> Option<Box<LinearFir>> {
        let running = self.taps();
        while self.returning.slots() >= 2 {
            let Ok(front) = self.incoming.peek() else { break };
            let taps = Some(front.taps);
            if taps == running && taps != wanted {
                if self.next.is_some() && self.warm > 0 {
                    // A redesign is warming up or fading: the newer one waits for it.
                    break;
                }
                // (Of the designs waiting now, the newest wins.)
                let Ok(fir) = self.incoming.pop() else { break };
                if let Some(older) = self.next.replace(fir) {
                    let _ = self.returning.push(older);
                }
                self.warm = 0;
                self.fade_at = 0;
            } else if taps == wanted {
                return self.incoming.pop().ok();
            } else if let Ok(stale) = self.incoming.pop() {
                let _ = self.returning.push(stale);
            }
        }
        None
    }

    /// Makes `fir` the running FIR (`None`: natural phase), dropping any redesign on its
    /// way in; the replaced ones go back to the designer. The phase switch calls this
    /// when its cross-fade ends. No allocation, lock or free.
    pub fn install(&mut self, fir: Option<Box<LinearFir>>) {
        for old in [std::mem::replace(&mut self.current, fir), self.next.take()].into_iter().flatten() {
            self.give_back(old);
        }
        self.warm = 0;
        self.fade_at = 0;
    }

    /// Sends a FIR back to the designer's thread to be dropped there (the return ring
    /// has room: designs are only taken while it does). No allocation, lock or free.
    pub fn give_back(&mut self, fir: Box<LinearFir>) {
        let _ = self.returning.push(fir);
    }

    /// Filters planar buffers (at most `max_block` frames) in place with the running
    /// FIR, cross-fading to a new design of the same length once it is warm. Does
    /// nothing in natural phase. No allocation, lock or free.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        let frames = buffers.iter().map(|b| b.len()).min().unwrap_or(0);
        let channels = buffers.len().min(self.scratch.len());
        if let Some(next) = self.next.as_mut() {
            for (s, b) in self.scratch.iter_mut().zip(buffers.iter()) {
                s[..frames].copy_from_slice(&b[..frames]);
            }
            let mut refs: [&mut [f32]; 8] = Default::default();
            for (r, s) in refs.iter_mut().zip(self.scratch.iter_mut()) {
                *r = &mut s[..frames];
            }
            next.process(&mut refs[..channels.min(8)]);
        }
        if let Some(current) = self.current.as_mut() {
            current.process(buffers);
        }
        let Some(taps) = self.next.as_ref().map(|n| n.taps) else { return };
        // Warm-up: the incoming FIR's history fills; the output stays the current one's.
        let mut start = 0;
        if self.warm < taps {
            let n = (taps - self.warm).min(frames);
            self.warm += n;
            start = n;
        }
        for i in start..frames {
            let w = (self.fade_at as f32 + 0.5) / self.fade_len as f32;
            for (b, s) in buffers.iter_mut().zip(&self.scratch).take(channels) {
                b[i] = (1.0 - w) * b[i] + w * s[i];
            }
            self.fade_at += 1;
            if self.fade_at >= self.fade_len {
                // The rest of the block is the new FIR's alone.
                for (b, s) in buffers.iter_mut().zip(&self.scratch).take(channels) {
                    b[i + 1..frames].copy_from_slice(&s[i + 1..frames]);
                }
                if let Some(old) = self.current.take() {
                    let _ = self.returning.push(old);
                }
                self.current = self.next.take();
                self.swaps += 1;
                break;
            }
        }
    }
}
