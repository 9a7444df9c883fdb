//! [`SvfCoefs`]: one second-order section in state-variable form, converted from its
//! transposed-direct-form-II coefficients, and the exact state hand-over between the two
//! forms.

use ferrofx::design::Sos;
use ferrofx::dsp::sos::SosCoefs;

/// One section in SVF form: `g = tan(pi f / fs)`-like frequency warp, damping `k`, and
/// the output mix.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SvfCoefs {
    pub g: f64,
    pub k: f64,
    pub m0: f64,
    pub m1: f64,
    pub m2: f64,
}

impl SvfCoefs {
    /// The SVF with the same transfer function as `sos` (which must be stable with no
    /// pole at z = +-1; the equaliser's designs are, with frequencies inside 20 Hz..0.45 fs).
    pub fn from_sos(sos: &Sos) -> SvfCoefs {
        let n = sos.normalized();
        let (b0, b1, b2) = (n.b[0], n.b[1], n.b[2]);
        let (a1, a2) = (n.a[1], n.a[2]);
        let den_minus = (1.0 - a1 + a2).max(1e-300);
        let g = ((1.0 + a1 + a2) / den_minus).max(1e-24).sqrt();
        let gk = 2.0 * (1.0 - a2) / den_minus;
        let k = gk / g;
        let d0 = 1.0 + gk + g * g;
        let m0 = (b0 - b1 + b2) / den_minus;
        let q = (b1 - m0 * a1) / 2.0;
        let p = b0 - m0 - q;
        SvfCoefs { g, k, m0, m1: p * d0 / g, m2: q * d0 / (g * g) }
    }

    /// `[g, k, m0, m1, m2]` (for the x86-64 wavefront kernels).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn to_array(self) -> [f64; 5] {
        [self.g, self.k, self.m0, self.m1, self.m2]
    }

    /// From `[g, k, m0, m1, m2]`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn from_array([g, k, m0, m1, m2]: [f64; 5]) -> SvfCoefs {
        SvfCoefs { g, k, m0, m1, m2 }
    }

    pub(super) fn lerp_step(from: &SvfCoefs, to: &SvfCoefs, steps: f64) -> SvfCoefs {
        SvfCoefs {
            g: (to.g - from.g) / steps,
            k: (to.k - from.k) / steps,
            m0: (to.m0 - from.m0) / steps,
            m1: (to.m1 - from.m1) / steps,
            m2: (to.m2 - from.m2) / steps,
        }
    }

    pub(super) fn add(&mut self, d: &SvfCoefs) {
        self.g += d.g;
        self.k += d.k;
        self.m0 += d.m0;
        self.m1 += d.m1;
        self.m2 += d.m2;
    }

    /// `(a1, a2, a3)` of the per-sample update.
    #[inline]
    pub(super) fn update_coefs(&self) -> (f64, f64, f64) {
        let a1 = 1.0 / (1.0 + self.g * (self.g + self.k));
        let a2 = self.g * a1;
        (a1, a2, self.g * a2)
    }

    /// Output row `r` (for zero input, `y = r . state`) and state transition `t`.
    fn zero_input(&self) -> ([f64; 2], [[f64; 2]; 2]) {
        let (a1, a2, a3) = self.update_coefs();
        // v1 = a1 ic1 - a2 ic2; v2 = a2 ic1 + (1 - a3) ic2 (with v0 = 0).
        let v1 = [a1, -a2];
        let v2 = [a2, 1.0 - a3];
        let r = [self.m1 * v1[0] + self.m2 * v2[0], self.m1 * v1[1] + self.m2 * v2[1]];
        // ic1' = 2 v1 - ic1; ic2' = 2 v2 - ic2.
        let t = [[2.0 * v1[0] - 1.0, 2.0 * v1[1]], [2.0 * v2[0], 2.0 * v2[1] - 1.0]];
        (r, t)
    }

    /// The next two outputs for zero input from SVF state `ic`.
    fn ring(&self, ic: [f64; 2]) -> (f64, f64) {
        let (r, t) = self.zero_input();
        let y0 = r[0] * ic[0] + r[1] * ic[1];
        let ic1 = [t[0][0] * ic[0] + t[0][1] * ic[1], t[1][0] * ic[0] + t[1][1] * ic[1]];
        (y0, r[0] * ic1[0] + r[1] * ic1[1])
    }

    /// The TDF-II state of section `q` that continues exactly like SVF state `ic` would.
    pub fn to_tdf2_state(&self, q: &SosCoefs, ic: [f64; 2]) -> [f64; 2] {
        let (y0, y1) = self.ring(ic);
        // TDF-II with zero input: y0 = s1, y1 = -a1 s1 + s2.
        [y0, y1 + q.a1 * y0]
    }

    /// The SVF state that continues like TDF-II state `s` of section `q`. Where the
    /// section does not show part of its state in its output (a 0 dB bell: `H = 1`),
    /// that part is unknowable and set to zero (least-norm solution).
    pub fn from_tdf2_state(&self, q: &SosCoefs, s: [f64; 2]) -> [f64; 2] {
        let y = [s[0], -q.a1 * s[0] + s[1]];
        let (r, t) = self.zero_input();
        let r2 = [r[0] * t[0][0] + r[1] * t[1][0], r[0] * t[0][1] + r[1] * t[1][1]];
        let c = [r, r2];
        // x = C^T (C C^T + lambda I)^-1 y: the inverse when C is well conditioned, the
        // least-norm solution when it is (nearly) singular.
        let cct = [
            [c[0][0] * c[0][0] + c[0][1] * c[0][1], c[0][0] * c[1][0] + c[0][1] * c[1][1]],
            [c[1][0] * c[0][0] + c[1][1] * c[0][1], c[1][0] * c[1][0] + c[1][1] * c[1][1]],
        ];
        let lambda = 1e-9 * (cct[0][0] + cct[1][1]) + 1e-300;
        let (p, qq, rr, ss) = (cct[0][0] + lambda, cct[0][1], cct[1][0], cct[1][1] + lambda);
        let det = p * ss - qq * rr;
        if det == 0.0 || !det.is_finite() {
            return [0.0; 2];
        }
        let w = [(ss * y[0] - qq * y[1]) / det, (-rr * y[0] + p * y[1]) / det];
        [c[0][0] * w[0] + c[1][0] * w[1], c[0][1] * w[0] + c[1][1] * w[1]]
    }
}
