//! The one-pole smoothing of a band's continuous parameters, advanced one re-design
//! interval at a time.

/// One-pole smoothing toward a target, per sample (`coef` per sample at the rate set).
#[derive(Clone, Copy, Debug)]
pub(super) struct Smoothed {
    pub(super) value: f64,
    pub(super) target: f64,
}

impl Smoothed {
    pub(super) fn new(v: f64) -> Smoothed {
        Smoothed { value: v, target: v }
    }
    /// Advances one re-design interval (`a_pow` is the per-sample coefficient raised to
    /// the interval, exact for a one-pole); returns whether the value moved.
    pub(super) fn advance(&mut self, a_pow: f64) -> bool {
        let before = self.value;
        self.value = self.target + (self.value - self.target) * a_pow;
        if (self.value - self.target).abs() <= 1e-9 * self.target.abs().max(1e-9) {
            self.value = self.target;
        }
        self.value != before
    }
}

/// Per-band smoothing of the continuous parameters (frequency smoothed in log2 Hz).
#[derive(Clone, Copy, Debug)]
pub(super) struct BandSmoothing {
    pub(super) log2_freq: Smoothed,
    pub(super) gain_db: Smoothed,
    pub(super) log2_q: Smoothed,
}
