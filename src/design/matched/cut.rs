//! Analog-matched Butterworth and Linkwitz-Riley cuts: the prototype's pole pairs (and
//! real pole) fitted in pieces of two sections each.

use super::fit::{fit_target, Fixed};
use super::MATCHED_SECTIONS;
use crate::design::Sos;
use std::f64::consts::PI;

/// Highest analog order of a matched cut.
pub const MAX_CUT_ORDER: usize = 24;
/// Highest analog order of a piece fitted as two sections.
const PIECE_ORDER: usize = 2;

/// Sections a matched cut of analog `order` designs to: two per fourth order.
pub fn cut_sections(order: usize) -> usize {
    2 * order.div_ceil(PIECE_ORDER)
}

/// One factor of a Butterworth prototype: a pole pair of quality `q`, or the real pole
/// (`q` 0.5, order 1).
#[derive(Clone, Copy)]
struct Factor {
    order: usize,
    q: f64,
}

impl Factor {
    /// `|H(j omega)|^2` of the low-pass factor, `omega` in units of the cutoff.
    fn lowpass_mag2(self, om: f64) -> f64 {
        if self.order == 1 {
            1.0 / (1.0 + om * om)
        } else {
            let re = 1.0 - om * om;
            1.0 / (re * re + om * om / (self.q * self.q))
        }
    }
}

/// An analog-matched Butterworth (or, with `linkwitz_riley`, Linkwitz-Riley: the
/// Butterworth of `order / 2` twice) low- or high-pass of analog `order`, written to
/// `out`; returns the section count ([`cut_sections`]), 0 when the arguments are out of
/// range (another response, order 0 or above [`MAX_CUT_ORDER`], an odd Linkwitz-Riley
/// order, `cutoff_hz` outside `(0, fs/2)`, `out` too short).
///
/// The prototype's factors (pole pairs and the real pole) are grouped into pieces of at
/// most fourth order, each piece fitted as two sections by the method of the module docs
/// (a high-pass keeps its zeros at DC exactly), so the whole follows the analog
/// `1 / (1 + (f / fc)^(2 order))` (or its high-pass mirror) up to Nyquist instead of
/// cramping toward it. Where a piece cannot be factorised (not seen on the tested grid)
/// the bilinear design of [`crate::design::butterworth_into`] is written instead, so the result is
/// always a stable cut of that order. No allocation.
pub fn cut_matched_into(response: crate::design::Response, order: usize, linkwitz_riley: bool, cutoff_hz: f64, fs: f64, out: &mut [Sos]) -> usize {
    let highpass = match response {
        crate::design::Response::Lowpass => false,
        crate::design::Response::Highpass => true,
        _ => return 0,
    };
    let n_out = cut_sections(order);
    if order == 0 || order > MAX_CUT_ORDER || (linkwitz_riley && !order.is_multiple_of(2)) || out.len() < n_out || !(cutoff_hz > 0.0 && cutoff_hz < fs / 2.0) {
        return 0;
    }
    // The prototype's factors, in order of rising q (the real pole first).
    let mut factors = [Factor { order: 0, q: 0.0 }; MAX_CUT_ORDER];
    let mut nf = 0;
    let butterworth = if linkwitz_riley { order / 2 } else { order };
    for _ in 0..if linkwitz_riley { 2 } else { 1 } {
        if butterworth % 2 == 1 {
            factors[nf] = Factor { order: 1, q: 0.5 };
            nf += 1;
        }
        for m in 0..butterworth / 2 {
            let zeta = (PI * (2 * m + 1) as f64 / (2 * butterworth) as f64).sin();
            factors[nf] = Factor { order: 2, q: 0.5 / zeta };
            nf += 1;
        }
    }
    factors[..nf].sort_by(|a, b| a.q.total_cmp(&b.q));
    // Pieces: the highest q left with the lowest ones that still fit in fourth order.
    let (mut lo, mut hi) = (0, nf);
    let mut written = 0;
    while lo < hi {
        hi -= 1;
        let mut piece = [factors[hi]; 4];
        let mut np = 1;
        let mut piece_order = factors[hi].order;
        while lo < hi && piece_order + factors[lo].order <= PIECE_ORDER {
            piece[np] = factors[lo];
            piece_order += factors[lo].order;
            np += 1;
            lo += 1;
        }
        let piece = &piece[..np];
        let target = |om: f64| {
            let lp = piece.iter().fold(1.0, |acc, f| acc * f.lowpass_mag2(om));
            if highpass {
                lp * om.powi(2 * piece_order as i32)
            } else {
                lp
            }
        };
        let fixed = if highpass { Fixed::Dc(piece_order) } else { Fixed::None };
        match fit_target(&target, fixed, cutoff_hz, factors[hi].q, None, fs) {
            Some(pair) => {
                out[written..written + MATCHED_SECTIONS].copy_from_slice(&pair);
                written += MATCHED_SECTIONS;
            }
            None => return bilinear_cut(response, order, linkwitz_riley, cutoff_hz, fs, out),
        }
    }
    // Pieces of less than fourth order leave sections unused: identities.
    out[written..n_out].fill(Sos::IDENTITY);
    n_out
}

/// The bilinear cut of [`crate::design::butterworth_into`] in the matched cut's section count.
fn bilinear_cut(response: crate::design::Response, order: usize, linkwitz_riley: bool, cutoff_hz: f64, fs: f64, out: &mut [Sos]) -> usize {
    let n_out = cut_sections(order);
    let n = if linkwitz_riley {
        let half = crate::design::butterworth_into(response, order / 2, cutoff_hz, fs, out);
        let (first, second) = out.split_at_mut(half);
        second[..half].copy_from_slice(&first[..half]);
        2 * half
    } else {
        crate::design::butterworth_into(response, order, cutoff_hz, fs, out)
    };
    out[n..n_out].fill(Sos::IDENTITY);
    n_out
}
