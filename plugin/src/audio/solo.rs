//! Band solo: listen to what one band acts on. While a band is soloed the plugin's output
//! cross-fades (10 ms) to its input through a band-pass at the band's frequency and Q
//! (the cookbook's constant-0-dB-peak band-pass, as a state-variable filter so the band
//! can be moved while listening); switching to another band fades out, then in.
//!
//! A monitoring aid, not part of the sound: not a host parameter, not saved, cleared when
//! the editor closes. The editor sets [`SoloControl`]; the audio thread reads it once a
//! block. Nothing here allocates after `new`.


/// Cross-fade time.
pub const SOLO_FADE_MS: f32 = 10.0;

/// The audio side: the band-pass state per channel and the fade.
pub struct Solo {
    /// Per channel (ic1eq, ic2eq) of the state-variable filter.
    state: Vec<[f32; 2]>,
    /// The band the filter follows, and how much of the output is the band-pass (0..=1).
    band: Option<usize>,
    mix: f32,
    step: f32,
}

impl Solo {
    pub fn new(channels: usize, sample_rate_hz: f32) -> Solo {
        Solo { state: vec![[0.0; 2]; channels], band: None, mix: 0.0, step: 1.0 / (SOLO_FADE_MS * 1e-3 * sample_rate_hz).max(1.0) }
    }

    /// Whether this block needs the input kept (a band is or was being listened to).
    pub fn active(&self, wanted: Option<usize>) -> bool {
        wanted.is_some() || self.mix > 0.0
    }

    /// Mixes the band-pass of `input` into `output` (both `frames` long per channel) for
    /// the soloed band at `freq_hz`/`q`. `wanted` is the band asked for now.
    #[allow(clippy::too_many_arguments)]
    pub fn process(&mut self, wanted: Option<usize>, freq_hz: f64, q: f64, fs: f64, input: &[Vec<f32>], output: &mut [&mut [f32]], frames: usize) {
        // Another band: fade out first, then follow the new one from rest.
        if self.mix == 0.0 && self.band != wanted {
            self.band = wanted;
            for s in self.state.iter_mut() {
                *s = [0.0; 2];
            }
        }
        let target = if wanted.is_some() && wanted == self.band { 1.0 } else { 0.0 };
        let g = (std::f64::consts::PI * freq_hz.clamp(1.0, 0.49 * fs) / fs).tan();
        let k = 1.0 / q.clamp(0.1, 40.0);
        let a1 = 1.0 / (1.0 + g * (g + k));
        let (a2, a3) = (g * a1, g * g * a1);
        let (a1, a2, a3, k) = (a1 as f32, a2 as f32, a3 as f32, k as f32);
        let start_mix = self.mix;
        for (c, out) in output.iter_mut().enumerate().take(self.state.len().min(input.len())) {
            let [mut ic1, mut ic2] = self.state[c];
            let mut mix = start_mix;
            for i in 0..frames {
                let v0 = input[c][i];
                let v3 = v0 - ic2;
                let v1 = a1 * ic1 + a2 * v3;
                let v2 = ic2 + a2 * ic1 + a3 * v3;
                ic1 = 2.0 * v1 - ic1;
                ic2 = 2.0 * v2 - ic2;
                let band_pass = k * v1;
                out[i] = (1.0 - mix) * out[i] + mix * band_pass;
                if target > mix {
                    mix = (mix + self.step).min(1.0);
                } else if target < mix {
                    mix = (mix - self.step).max(0.0);
                }
            }
            self.state[c] = [ic1, ic2];
            self.mix = mix;
        }
    }

    /// The band whose frequency and Q the next block must be given: the one faded in or
    /// out, or (when silent) the one asked for.
    pub fn follows(&self, wanted: Option<usize>) -> Option<usize> {
        if self.mix == 0.0 {
            wanted
        } else {
            self.band
        }
    }

    pub fn reset(&mut self) {
        for s in self.state.iter_mut() {
            *s = [0.0; 2];
        }
    }
}
