//! Windowed-sinc FIR design equal to `scipy.signal.firwin` (with `scale=True`).

use super::{Cutoff, Response};
use std::f64::consts::PI;

/// The windows `firwin` accepts in the chain format (symmetric, `fftbins=False`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Window {
    /// SciPy's `boxcar`.
    Rectangular,
    Hann,
    Hamming,
    Blackman,
    Kaiser { beta: f64 },
}

impl Window {
    pub fn name(&self) -> &'static str {
        match self {
            Window::Rectangular => "rectangular",
            Window::Hann => "hann",
            Window::Hamming => "hamming",
            Window::Blackman => "blackman",
            Window::Kaiser { .. } => "kaiser",
        }
    }

    /// The window's `len` samples (SciPy `get_window(w, len, fftbins=False)`).
    pub fn samples(&self, len: usize) -> Vec<f64> {
        if len == 1 {
            return vec![1.0];
        }
        let span = (len - 1) as f64;
        let cosine = |coefs: &[f64]| -> Vec<f64> {
            // SciPy's general_cosine: sum_k a_k cos(k x), x = linspace(-pi, pi, len).
            (0..len)
                .map(|n| {
                    let x = -PI + 2.0 * PI * n as f64 / span;
                    coefs.iter().enumerate().map(|(k, a)| a * (k as f64 * x).cos()).sum()
                })
                .collect()
        };
        match *self {
            Window::Rectangular => vec![1.0; len],
            Window::Hann => cosine(&[0.5, 0.5]),
            Window::Hamming => cosine(&[0.54, 0.46]),
            Window::Blackman => cosine(&[0.42, 0.50, 0.08]),
            Window::Kaiser { beta } => {
                let denom = bessel_i0(beta);
                (0..len)
                    .map(|n| {
                        let r = 2.0 * n as f64 / span - 1.0;
                        bessel_i0(beta * (1.0 - r * r).max(0.0).sqrt()) / denom
                    })
                    .collect()
            }
        }
    }
}

/// Modified Bessel function of the first kind, order 0, by its power series
/// `sum ((x/2)^k / k!)^2` (all terms positive, so no cancellation).
pub fn bessel_i0(x: f64) -> f64 {
    let q = 0.25 * x * x;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..1000 {
        term *= q / (k as f64 * k as f64);
        sum += term;
        if term < 1e-17 * sum {
            break;
        }
    }
    sum
}

/// `sin(pi x) / (pi x)`.
fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let px = PI * x;
        px.sin() / px
    }
}

/// `firwin(taps, cutoff_hz, window=window, pass_zero=response, fs=fs)`, or `None` where
/// it cannot be scaled: its response at the centre of the first passband is zero (a
/// 2-tap Hann window is zero at both taps), where SciPy's `firwin` divides by that zero
/// and gives NaN taps.
///
/// The caller validates (odd `taps` for highpass and bandstop, cutoffs strictly inside
/// `(0, fs/2)`); see `chain::validate`.
pub fn firwin(taps: usize, response: Response, cutoff: Cutoff, window: Window, fs: f64) -> Option<Vec<f64>> {
    let nyq = 0.5 * fs;
    let edges: Vec<f64> = match cutoff {
        Cutoff::Single(f) => vec![f / nyq],
        Cutoff::Band(lo, hi) => vec![lo / nyq, hi / nyq],
    };
    let pass_zero = matches!(response, Response::Lowpass | Response::Bandstop);
    let pass_nyquist = (edges.len() % 2 == 1) ^ pass_zero;
    let mut bounds = Vec::with_capacity(edges.len() + 2);
    if pass_zero {
        bounds.push(0.0);
    }
    bounds.extend_from_slice(&edges);
    if pass_nyquist {
        bounds.push(1.0);
    }
    let bands: Vec<(f64, f64)> = bounds.chunks_exact(2).map(|b| (b[0], b[1])).collect();

    let alpha = 0.5 * (taps as f64 - 1.0);
    let m: Vec<f64> = (0..taps).map(|i| i as f64 - alpha).collect();
    let win = window.samples(taps);
    let mut h: Vec<f64> = m
        .iter()
        .zip(&win)
        .map(|(&mi, &w)| bands.iter().map(|&(l, r)| r * sinc(r * mi) - l * sinc(l * mi)).sum::<f64>() * w)
        .collect();

    // Scale so the response is exactly 1 at the centre of the first passband.
    if let Some(&(left, right)) = bands.first() {
        let scale_frequency = if left == 0.0 {
            0.0
        } else if right == 1.0 {
            1.0
        } else {
            0.5 * (left + right)
        };
        let s: f64 = h.iter().zip(&m).map(|(hi, mi)| hi * (PI * mi * scale_frequency).cos()).sum();
        if !(s != 0.0 && s.is_finite()) {
            return None;
        }
        for v in h.iter_mut() {
            *v /= s;
        }
    }
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i0_known_values() {
        // I0(0) = 1, I0(1) = 1.2660658777520082, I0(8.6) = 761.0186... (A&S table 9.8 scaled).
        assert_eq!(bessel_i0(0.0), 1.0);
        assert!((bessel_i0(1.0) - 1.266_065_877_752_008_2).abs() < 1e-15);
        assert!((bessel_i0(5.0) - 27.239_871_823_604_45).abs() < 1e-11);
    }

    #[test]
    fn windows_are_symmetric_and_peak_at_one() {
        for w in [Window::Hann, Window::Hamming, Window::Blackman, Window::Kaiser { beta: 8.6 }] {
            let s = w.samples(31);
            for i in 0..31 {
                assert!((s[i] - s[30 - i]).abs() < 1e-15);
            }
            assert!((s[15] - 1.0).abs() < 1e-15, "{w:?}");
        }
    }
}
