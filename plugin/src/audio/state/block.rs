//! One sub-block's signal path, in order: the input sanitised and tapped (analyser,
//! loudness meters), the dry copy, the bands (in 32-sample pieces while dynamic bands
//! act) and a phase switch's incoming stage beside them, the linear-phase FIR and the
//! latency reserve's pad, the GPU path's stream and the chain stages, then the output
//! stage (gain, auto-gain, delta, bypass, solo) and the meters. No allocation, lock or
//! wait.

use std::sync::atomic::Ordering;

use nice_plug::prelude::*;

use crate::audio::output::{self, Measured, Stage};
use crate::control::params::{AutoGainChoice, FerroParams};
use crate::shared::bands::BANDS;
use crate::shared::telemetry::Telemetry;

use super::AudioState;

impl AudioState {
    /// Filters one sub-block (≤ `max_block_frames`) in place.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn process_block(
        &mut self,
        params: &FerroParams,
        telemetry: &Telemetry,
        buffers: &mut [&mut [f32]],
        sidechain: Option<&mut [&mut [f32]]>,
        start: usize,
        frames: usize,
        bypass: bool,
        analyse: bool,
    ) {
        let channels = buffers.len().min(self.dry.len());
        let target = if bypass { 0.0 } else { 1.0 };
        let fading = self.wet_mix != target;
        // The filters keep running while bypassed (their output unused), so un-bypassing
        // crossfades to a settled filter instead of one starting from silence.
        let bypassed = bypass && !fading;
        // A soloed band listens to the dry signal (delayed like the output on the GPU path).
        let solo_band = params.solo.get();
        let soloing = self.solo.as_ref().is_some_and(|s| s.active(solo_band));
        let delta_target = if params.delta.value() { 1.0 } else { 0.0 };
        let delta = self.delta_mix != 0.0 || delta_target != 0.0;
        // The output gain and auto-gain, settled or not (no stage below changes them).
        let auto_on = params.auto_gain.value() != AutoGainChoice::Off;
        // A settled output gain is converted once per block, not per sample.
        let out_smoother = &params.output_gain_db.smoothed;
        let settled_gain = (!out_smoother.is_smoothing()).then(|| util::db_to_gain(out_smoother.next()));
        let auto_settled = self.autogain.as_ref().map_or(Some(0.0), |a| a.settled_db(auto_on));
        // The usual block (no fade, no delta, gains settled): one pass per channel
        // (`output.rs`). Otherwise the general loop below, per sample.
        let fast = match (settled_gain, auto_settled) {
            (Some(g), Some(auto_db)) if !fading && !delta => Some(if auto_db == 0.0 { g } else { g * util::db_to_gain(auto_db as f32) }),
            _ => None,
        };
        // After that pass only bypass and solo change the signal: without them the pass
        // measures the output for the meters too.
        let metered = fast.is_some() && !bypassed && !soloing;
        let dynamic = self.dynamics.as_ref().is_some_and(|d| self.any_dynamic_band || d.any_change());
        // Nothing reads the signal before that pass (every band idle, no chain, no FIR, no
        // GPU path, no dry copy, no analyser): then it sanitises the input as well, else
        // the input is sanitised here.
        let switching = self.switch.as_ref().is_some_and(|sw| sw.running());
        let delaying = switching || self.dry_delay.as_ref().is_some_and(|d| !d.is_empty());
        // The loudness meters read the input too (while the editor shows them).
        let metering = telemetry.loudness.is_wanted();
        let untouched = metered
            && !analyse
            && !metering
            && !dynamic
            && !delaying
            && !self.linear_running()
            && !switching
            && self.realtime.is_none()
            && self.side.engine().is_none()
            && self.eq.as_mut().is_none_or(|eq| eq.idle());
        if !untouched {
            for b in buffers.iter_mut() {
                ferrofx::engine::sanitize_input(&mut b[start..start + frames]);
            }
        }
        // With latency the dry signal runs through a delay as long, which must see every
        // block (also while a phase switch prepares a longer one).
        if fading || bypassed || soloing || delta || delaying {
            for (d, b) in self.dry.iter_mut().zip(buffers.iter()) {
                d[..frames].copy_from_slice(&b[start..start + frames]);
            }
            if let Some(delay) = self.dry_delay.as_mut() {
                delay.process(&mut self.dry, frames);
            }
        }
        // Sub-slices without allocating, as many as the widest layout has channels (a list
        // of 64 cost a kilobyte of stores per block).
        const MAX: usize = crate::shared::MAX_CHANNELS;
        let mut refs: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
        let used = buffers.len().min(MAX);
        for (r, b) in refs.iter_mut().zip(buffers.iter_mut()) {
            *r = &mut b[start..start + frames];
        }
        let refs = &mut refs[..used];
        if analyse {
            self.taps.spectrum.pre(refs, frames);
        }
        let fs_hz = self.config.map_or(0.0, |c| c.sample_rate_hz);
        if metering {
            self.taps.loudness.pre(&telemetry.loudness, refs, frames, fs_hz);
        }
        // A phase switch's new band stage sees the same input (while one runs; `switch`
        // is only that switch, `pad` the switch state either way, for the latency reserve).
        let mut pad = self.switch.as_mut();
        let running = pad.as_ref().is_some_and(|sw| sw.running());
        let mut switch = pad.as_deref_mut().filter(|_| running);
        if let Some(sw) = switch.as_mut() {
            sw.capture(refs, frames);
        }
        // (An idle equaliser, `untouched` found, has nothing to do.)
        if let Some(eq) = self.eq.as_mut().filter(|_| !untouched) {
            match self.dynamics.as_mut() {
                Some(dynamics) if dynamic => {
                    // Dynamic bands: the detectors see each piece of input before the
                    // equaliser does, and the gain changes reach it every re-design
                    // interval.
                    let mut done = 0;
                    while done < frames {
                        let n = (frames - done).min(crate::audio::equaliser::REDESIGN_INTERVAL);
                        let mut piece: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
                        for (p, r) in piece.iter_mut().zip(refs.iter_mut()) {
                            *p = &mut r[done..done + n];
                        }
                        let piece = &mut piece[..used];
                        // The sidechain's matching piece, where there is one.
                        let mut side: [&[f32]; MAX] = [&[][..]; MAX];
                        let sides = sidechain.as_deref().map_or(0, |sc| {
                            for (s, c) in side.iter_mut().zip(sc.iter()) {
                                *s = &c[start + done..start + done + n];
                            }
                            sc.len().min(MAX)
                        });
                        dynamics.process(piece, (sides > 0).then(|| &side[..sides]), &self.band_cache, &self.dyn_cache);
                        for i in 0..BANDS {
                            eq.set_dynamic_gain(i, dynamics.delta_db(i));
                        }
                        eq.process(piece);
                        if let Some(sw) = switch.as_mut() {
                            let (next_eq, mut next) = sw.stage(done + n);
                            for i in 0..BANDS {
                                next_eq.set_dynamic_gain(i, dynamics.delta_db(i));
                            }
                            let mut piece: [&mut [f32]; MAX] = std::array::from_fn(|_| &mut [][..]);
                            // (`next` lists MAX slices, empty past the channels.)
                            for (p, r) in piece.iter_mut().zip(next.iter_mut().take(used)) {
                                *p = &mut r[done..done + n];
                            }
                            next_eq.process(&mut piece[..used]);
                        }
                        done += n;
                    }
                    // Each band's gain change now, for the editor's curve.
                    for (i, bits) in telemetry.dynamic_gain_db_bits.iter().enumerate() {
                        bits.store((dynamics.delta_db(i) as f32).to_bits(), Ordering::Relaxed);
                    }
                    self.dynamic_published = true;
                }
                _ => {
                    if std::mem::take(&mut self.dynamic_published) {
                        for bits in &telemetry.dynamic_gain_db_bits {
                            bits.store(0, Ordering::Relaxed);
                        }
                    }
                    eq.process(refs);
                    if let Some(sw) = switch.as_mut() {
                        let (next_eq, mut next) = sw.stage(frames);
                        next_eq.process(&mut next[..used]);
                    }
                }
            }
        }
        if let Some(linear) = self.linear.as_mut() {
            linear.process(refs);
        }
        // With a latency reserve the running stage's output is delayed to the fixed
        // latency, before a switch's cross-fade joins it.
        let finished = pad.and_then(|sw| {
            sw.pad_running(refs, frames);
            if running {
                sw.finish_block(refs, frames)
            } else {
                None
            }
        });
        if let Some(finished) = finished {
            // The new band stage is the running one from here on.
            if let (Some(sw), Some(eq), Some(linear)) = (self.switch.as_mut(), self.eq.as_mut(), self.linear.as_mut()) {
                std::mem::swap(eq, &mut sw.eq);
                linear.install(finished.fir);
            }
            self.band_cache_linear = Some(self.fir_replaces_bands());
        }
        // On the GPU path the stream delays (and, with an offload, filters) the signal; a
        // chain the offload does not take runs on the CPU engine after the delay, so the
        // stream always holds unfiltered input and a chain change never filters a block
        // twice.
        if let Some(rt) = self.realtime.as_mut() {
            rt.process(self.side.offload(), refs);
        }
        if let Some(engine) = self.side.engine() {
            engine.process(refs);
        }
        // Output gain and auto-gain (smoothed per sample), the delta listen mix, then the
        // bypass crossfade.
        let mut non_finite = false;
        let delta_step = self.wet_step;
        let mut measured = [Measured::default(); MAX];
        if let Some(gain) = fast {
            let stage = Stage { sanitize: untouched, gain };
            for (r, m) in refs.iter_mut().zip(measured.iter_mut()) {
                *m = output::apply_and_measure(r, stage);
                non_finite |= m.non_finite;
            }
        }
        if fast.is_none() {
            for i in 0..frames {
                let out_gain = settled_gain.unwrap_or_else(|| util::db_to_gain(out_smoother.next()));
                let auto_db = self.autogain.as_mut().map_or(0.0, |a| a.next_db(auto_on));
                let gain = if auto_db == 0.0 { out_gain } else { out_gain * util::db_to_gain(auto_db as f32) };
                let wet = self.wet_mix;
                let dm = self.delta_mix;
                for (c, r) in refs.iter_mut().enumerate() {
                    let mut y = r[i] * gain;
                    if delta && c < channels {
                        // What the bands and chain changed, at the output gain (auto-gain
                        // is not part of it).
                        let d = (r[i] - self.dry[c][i]) * out_gain;
                        y = if dm == 1.0 { d } else { dm * d + (1.0 - dm) * y };
                    }
                    non_finite |= !y.is_finite();
                    let out = if fading && c < channels { wet * y + (1.0 - wet) * self.dry[c][i] } else { y };
                    // No subnormal leaves the plugin (hosts and validators count them as
                    // faults; a decaying tail can produce them after the output gain).
                    r[i] = if out.abs() < f32::MIN_POSITIVE { 0.0 } else { out };
                }
                if fading {
                    self.wet_mix = if target > self.wet_mix {
                        (self.wet_mix + self.wet_step).min(1.0)
                    } else {
                        (self.wet_mix - self.wet_step).max(0.0)
                    };
                }
                if dm != delta_target {
                    self.delta_mix = if delta_target > dm { (dm + delta_step).min(1.0) } else { (dm - delta_step).max(0.0) };
                }
            }
        }
        if non_finite {
            // Cannot happen with finite input and stable filters; if it does, the block
            // is silenced and the state cleared so the next block recovers.
            for r in refs.iter_mut() {
                r.fill(0.0);
            }
            self.reset_filters();
        }
        if bypassed {
            for (r, d) in refs.iter_mut().zip(&self.dry) {
                r.copy_from_slice(&d[..frames]);
            }
        }
        if let (true, Some(solo)) = (soloing, self.solo.as_mut()) {
            // Follows the band asked for, or (fading out) the one last listened to.
            let band = params.bands[solo.follows(solo_band).unwrap_or(0).min(BANDS - 1)].band();
            solo.process(solo_band, band.freq_hz, band.q, f64::from(fs_hz), &self.dry, refs, frames);
        }
        // (A silenced block is measured again: the pass measured what it silenced.)
        let clipped = refs.iter().zip(&telemetry.meters).zip(&measured).fold(false, |c, ((r, meter), m)| {
            let peak = if metered && !non_finite { meter.record(m.peak, m.sum_squares, r.len()) } else { output::meter(meter, r) };
            peak >= 1.0 || c
        });
        if clipped {
            telemetry.clipped.store(true, Ordering::Relaxed);
        }
        if analyse {
            self.taps.spectrum.post(refs, frames, fs_hz);
        }
        self.taps.loudness.post(refs, frames, fs_hz);
    }
}
