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
//!   polls the band parameters every 10 ms; when they change it designs, builds a core
//!   [`Engine`] and sends it to the audio thread through an `rtrb` ring; replaced engines
//!   come back through a second ring and are dropped there.
//! - **Audio thread** ([`LinearAudio`]): a new engine first runs beside the current one
//!   for `n` samples (so its history is full), then the output cross-fades from the old
//!   to the new over [`CROSSFADE_MS`]. Nothing is allocated, freed or locked there.
//! - **Latency**: `n / 2` samples, reported to the host; the length is fixed per
//!   activation, so changing it (or the mode) asks the host for a restart, like the GPU
//!   path.

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

/// Builds the engine that runs `taps` on `channels` channels.
fn engine(taps: Vec<f64>, fs: f64, channels: usize, max_block: usize) -> Option<Engine> {
    let chain: Chain = Fir::coefficients(taps).into();
    chain.design(fs).ok().map(|d| Engine::new(&d, channels, max_block))
}

/// What [`Designer`] needs to know about the audio configuration.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub fs: f64,
    pub taps: usize,
    pub channels: usize,
    pub max_block: usize,
}

/// The designer's end of the hand-over: builds engines from taps and sends them to the
/// audio thread; drops the ones that come back.
pub struct Sender {
    to_audio: Producer<Box<Engine>>,
    from_audio: Consumer<Box<Engine>>,
    setup: Setup,
}

impl Sender {
    /// Builds the engine of `taps` and sends it; false when the ring is full (the audio
    /// thread has not taken the last ones yet) or the taps do not design. Allocates.
    pub fn send(&mut self, taps: Vec<f64>) -> bool {
        self.collect();
        if self.to_audio.is_full() {
            return false;
        }
        match engine(taps, self.setup.fs, self.setup.channels, self.setup.max_block) {
            Some(e) => self.to_audio.push(Box::new(e)).is_ok(),
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

/// The two ends of a hand-over, the audio side starting with the FIR `first`. Allocates.
pub fn link(setup: Setup, first: Vec<f64>) -> (Sender, LinearAudio) {
    let (to_audio, incoming) = RingBuffer::<Box<Engine>>::new(4);
    let (returning, from_audio) = RingBuffer::<Box<Engine>>::new(8);
    let fade = ((CROSSFADE_MS * 1e-3 * setup.fs) as usize).max(1);
    let audio = LinearAudio {
        incoming,
        returning,
        current: engine(first, setup.fs, setup.channels, setup.max_block).map(Box::new),
        next: None,
        warm: 0,
        fade_at: 0,
        fade_len: fade,
        taps: setup.taps,
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
    /// Designs the FIR of the current bands at once (the audio side starts with it) and
    /// starts the thread that follows the bands. Allocates; not on the audio thread.
    pub fn start(params: Arc<FerroParams>, setup: Setup) -> (Designer, LinearAudio) {
        let stereo = setup.channels == 2;
        let key = move |p: &FerroParams| -> [Band; BANDS] {
            let bands = p.bands();
            std::array::from_fn(move |i| if in_fir(&bands[i], stereo) { bands[i].clamped(setup.fs) } else { Band::default() })
        };
        let mut last = key(&params);
        let (mut sender, audio) = link(setup, design(&last, setup.fs, setup.taps, stereo));
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
                    last = now;
                    sender.send(design(&now, setup.fs, setup.taps, stereo));
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

/// The audio thread's side: the running FIR, the incoming one while it warms up and
/// fades in, and the rings.
pub struct LinearAudio {
    incoming: Consumer<Box<Engine>>,
    returning: Producer<Box<Engine>>,
    current: Option<Box<Engine>>,
    next: Option<Box<Engine>>,
    /// Samples the incoming engine has run.
    warm: usize,
    /// Samples into the cross-fade.
    fade_at: usize,
    fade_len: usize,
    taps: usize,
    /// The incoming engine's output, one buffer per channel of `max_block`.
    scratch: Vec<Vec<f32>>,
    swaps: u64,
}

impl LinearAudio {
    /// The latency: half the FIR length.
    pub fn latency(&self) -> usize {
        self.taps / 2
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

    /// Filters planar buffers (at most `max_block` frames) in place. No allocation,
    /// lock or free.
    pub fn process(&mut self, buffers: &mut [&mut [f32]]) {
        if self.next.is_none() && self.returning.slots() >= 2 {
            // The newest design waiting; older ones go straight back.
            while let Ok(e) = self.incoming.pop() {
                if let Some(older) = self.next.replace(e) {
                    let _ = self.returning.push(older);
                }
                if self.returning.slots() < 2 {
                    break;
                }
            }
            self.warm = 0;
            self.fade_at = 0;
        }
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
        let Some(_) = self.next.as_ref() else { return };
        // Warm-up: the incoming FIR's history fills; the output stays the current one's.
        let mut start = 0;
        if self.warm < self.taps {
            let n = (self.taps - self.warm).min(frames);
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
