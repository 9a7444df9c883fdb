//! Linear phase on the audio thread: the running FIR (none in natural phase), a new
//! design of the same length warmed up beside it and cross-faded in, and the designs of
//! another length handed to the phase switch. The designs come from the designer thread
//! (`control/linear.rs`) through `rtrb` rings; nothing here allocates, frees or locks.

use rtrb::{Consumer, Producer};

use crate::control::linear::{AudioEnd, FirMode, LinearFir, Setup, CROSSFADE_MS};

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
    /// The audio side of a hand-over (allocates its scratch; off the audio thread).
    pub fn new(end: AudioEnd, setup: Setup) -> LinearAudio {
        LinearAudio {
            incoming: end.incoming,
            returning: end.returning,
            current: end.first,
            next: None,
            warm: 0,
            fade_at: 0,
            fade_len: ((CROSSFADE_MS * 1e-3 * setup.fs) as usize).max(1),
            scratch: vec![vec![0.0; setup.max_block.max(1)]; setup.channels],
            swaps: 0,
        }
    }

    /// The running FIR's mode: `None` in natural phase.
    pub fn mode(&self) -> Option<FirMode> {
        self.current.as_ref().map(|f| f.mode)
    }

    /// The latency: half the running FIR's length in linear phase, the correction's delay
    /// in analog phase, 0 in natural phase.
    pub fn latency(&self) -> usize {
        self.current.as_ref().map_or(0, |f| f.latency)
    }

    /// Whether the running FIR carries bands in the IIR equaliser's place (linear phase;
    /// not analog phase's correction, nor natural phase).
    pub fn replaces_bands(&self) -> bool {
        self.mode().is_some_and(FirMode::replaces_bands)
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
    pub fn poll(&mut self, wanted: Option<FirMode>) -> Option<Box<LinearFir>> {
        let running = self.mode();
        while self.returning.slots() >= 2 {
            let Ok(front) = self.incoming.peek() else { break };
            let mode = Some(front.mode);
            if mode == running && mode != wanted {
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
            } else if mode == wanted {
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
        let Some(taps) = self.next.as_ref().map(|n| n.length) else { return };
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
