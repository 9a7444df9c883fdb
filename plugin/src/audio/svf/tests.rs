//! The frame-by-frame order that [`SvfCascade::process_at`]'s pieces must equal bit for
//! bit, and the test that holds them to it.

use super::*;
use ferrofx::design::rbj::biquad;
use ferrofx::design::BiquadKind;
use ferrofx::dsp::simd::Isa;
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

impl SvfCascade {
    /// The same over every slot (the tests' reference).
    fn flush_all_states(&mut self) {
        self.state.iter_mut().for_each(super::process::flush);
    }

    /// [`SvfCascade::glide_band`] looking at every slot of the band (the tests' reference
    /// for its passing over quiet ones).
    fn glide_band_every_slot(&mut self, band: usize, targets: &[Sos], samples: usize) {
        let samples = samples.max(1);
        let bank = self.design_bank(band);
        for k in 0..self.per_band {
            self.glide_slot(self.slot(bank, band, k), targets.get(k), samples);
        }
    }

    /// Forgets which slots are quiet, so that the next `refresh` looks at every slot (the
    /// tests' reference for the shortcut).
    fn forget_quiet(&mut self) {
        self.busy.fill(super::low_bits(self.per_band));
    }

    /// The frame-by-frame order [`SvfCascade::process_at`] must equal: per frame, every
    /// glide and fade steps, then each channel runs through every slot in turn.
    fn process_at_frame_by_frame(&mut self, buffers: &mut [&mut [f32]], offset: usize, frames: usize) {
        let slots = self.slots();
        let channels = buffers.len().min(self.channels);
        let chain = |slots_run: &[usize], mut x: f64, st: &mut [[f64; 2]], coefs: &[SvfCoefs], derived: &[(f64, f64, f64)]| {
            for &slot in slots_run {
                let q = &coefs[slot];
                x = super::process::step(derived[slot], [q.m0, q.m1, q.m2], &mut st[slot], x);
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
                    self.fades[run.band].advance();
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
}

/// The piece-wise order equals the frame-by-frame one bit for bit (outputs and
/// states), and `refresh` and `glide_band` passing over quiet slots equal them looking at
/// every slot,
/// through seeded random glides of every length, switches with their
/// cross-fades, fades ending, identity slots, blocks of 1 to 200 frames at any offset,
/// none to three channels (an odd one runs alone; with none, the glides still move on), cascades of 1 to 20 running slots (so
/// wavefronts of every size, and single slots beside them) and every wavefront kernel
/// this CPU runs.
#[test]
fn pieces_equal_the_frame_by_frame_order() {
    // The portable path (a slot at a time) and each wavefront kernel this CPU runs.
    let isas = [Isa::Portable, Isa::Avx2, Isa::Avx512].into_iter().filter(|isa| isa.is_supported());
    for (isa, (bands, per_band), channels) in isas.flat_map(|isa| [(6, 3), (20, 1)].into_iter().flat_map(move |layout| (0..=3).map(move |ch| (isa, layout, ch)))) {
        let mut rng = Rng::new(0x5eed_0000 + channels as u64 + 16 * bands as u64);
        let mut a = SvfCascade::new(bands, per_band, channels);
        #[cfg(target_arch = "x86_64")]
        {
            a.wave_kernel = super::wave::WaveKernel::for_isa(isa);
        }
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
                        b.glide_band_every_slot(band, &d, len);
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
                    assert_eq!(x.to_bits(), y.to_bits(), "{isa:?}, {bands} bands, {channels} ch, round {round}, channel {c}, frame {i}: {x} vs {y}");
                }
            }
            assert!(a.state.iter().zip(&b.state).all(|(s, t)| s[0].to_bits() == t[0].to_bits() && s[1].to_bits() == t[1].to_bits()), "{isa:?}, {bands} bands, {channels} ch, round {round}: states differ");
            assert_eq!((a.gliding, a.fading, a.interpolating()), (b.gliding, b.fading, b.interpolating()), "round {round}");
            let bits = |c: &[SvfCoefs]| c.iter().flat_map(|q| q.to_array().map(f64::to_bits)).collect::<Vec<_>>();
            assert_eq!(bits(&a.coefs), bits(&b.coefs), "{isa:?}, {bands} bands, {channels} ch, round {round}: the glides' positions differ");
            assert_eq!(a.derived.iter().map(|d| [d.0, d.1, d.2].map(f64::to_bits)).collect::<Vec<_>>(), b.derived.iter().map(|d| [d.0, d.1, d.2].map(f64::to_bits)).collect::<Vec<_>>(), "round {round}: update coefficients differ");
            checked += frames * channels;
        }
        if channels > 0 {
            assert!(checked > 5_000);
            assert!(a.state.iter().any(|s| s[0] != 0.0), "the cascade filtered something");
        }
    }
}
