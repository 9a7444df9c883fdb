//! The cost-model router behind `Backend::Auto`: CPU or GPU for the current chain.
//!
//! It keeps the latest measurements of the CPU's time per block and of the GPU's round
//! trip per block (start-up probes, then whatever the running path reports), and decides:
//! - the GPU only when its **median** beats the CPU's by [`RouterConfig::margin`] *and*
//!   its **tail** (the `tail_quantile` of recent round trips) fits
//!   [`RouterConfig::deadline_share`] of the block's deadline;
//! - with **hysteresis**: a change of route needs its condition to hold for
//!   [`RouterConfig::hold`] consecutive decisions, and leaving the GPU needs it to be
//!   really worse (slower than the CPU, or a tail past the deadline), not merely short of
//!   the margin; so a GPU hovering near the threshold never makes the route flap.
//!
//! Every [`Decision`] carries its figures and a [`Reason`] the editor and the renderer
//! print. No allocation after [`Router::new`]; the windows are fixed arrays.

/// Measurements kept per path.
pub const WINDOW: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouterConfig {
    /// The GPU must be this many times faster (median) than the CPU to be chosen.
    pub margin: f64,
    /// Share of the block deadline the GPU's tail may use.
    pub deadline_share: f64,
    /// Quantile of the GPU round trips taken as its tail.
    pub tail_quantile: f64,
    /// Consecutive decisions a new route's condition must hold before switching.
    pub hold: u32,
    /// Measurements each path needs before the router trusts it.
    pub min_samples: usize,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig { margin: 1.5, deadline_share: 0.5, tail_quantile: 0.99, hold: 8, min_samples: 8 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Cpu,
    Gpu,
}

/// Why the router chose what it chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No GPU worker (no adapter, unsupported chain, device lost).
    GpuUnavailable,
    /// Not enough measurements yet; the current route stays.
    Measuring,
    /// The GPU is faster by the margin and its tail fits the deadline.
    GpuFaster,
    /// The GPU's median does not beat the CPU's by the margin.
    GpuNotFastEnough,
    /// The GPU's tail does not fit the deadline share.
    GpuTailTooLong,
    /// The other route's condition holds but not yet for `hold` decisions.
    Holding,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::GpuUnavailable => "no GPU worker",
            Reason::Measuring => "measuring",
            Reason::GpuFaster => "GPU faster by the margin, tail within the deadline",
            Reason::GpuNotFastEnough => "GPU not faster by the margin",
            Reason::GpuTailTooLong => "GPU tail exceeds its share of the deadline",
            Reason::Holding => "holding the current route (hysteresis)",
        })
    }
}

/// A decision with the figures behind it (seconds per block; `NaN` where unmeasured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub route: Route,
    pub reason: Reason,
    pub cpu_median_s: f64,
    pub gpu_median_s: f64,
    pub gpu_tail_s: f64,
    pub deadline_s: f64,
}

#[derive(Clone, Copy)]
struct Window {
    values: [f64; WINDOW],
    len: usize,
    next: usize,
}

impl Window {
    const EMPTY: Window = Window { values: [0.0; WINDOW], len: 0, next: 0 };

    fn push(&mut self, v: f64) {
        if !v.is_finite() || v < 0.0 {
            return;
        }
        self.values[self.next] = v;
        self.next = (self.next + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
    }

    /// The `q` quantile (nearest rank), `NaN` when empty.
    fn quantile(&self, q: f64) -> f64 {
        if self.len == 0 {
            return f64::NAN;
        }
        let mut sorted = [0.0f64; WINDOW];
        sorted[..self.len].copy_from_slice(&self.values[..self.len]);
        let s = &mut sorted[..self.len];
        s.sort_unstable_by(f64::total_cmp);
        let rank = ((q * self.len as f64).ceil() as usize).clamp(1, self.len);
        s[rank - 1]
    }
}

/// The router's state. Feed it measurements, ask it for decisions.
pub struct Router {
    config: RouterConfig,
    cpu: Window,
    gpu: Window,
    route: Route,
    /// Consecutive decisions in which the other route's condition held.
    streak: u32,
    gpu_available: bool,
}

impl Router {
    pub fn new(config: RouterConfig) -> Router {
        Router { config, cpu: Window::EMPTY, gpu: Window::EMPTY, route: Route::Cpu, streak: 0, gpu_available: true }
    }

    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// The CPU took `seconds` for one block of the current chain.
    pub fn record_cpu(&mut self, seconds: f64) {
        self.cpu.push(seconds);
    }

    /// A GPU job's round trip (submit to result back) took `seconds`.
    pub fn record_gpu(&mut self, seconds: f64) {
        self.gpu.push(seconds);
    }

    /// Marks the GPU (un)available; unavailable forces the CPU at once.
    pub fn set_gpu_available(&mut self, available: bool) {
        self.gpu_available = available;
    }

    /// Forgets all measurements (the chain changed); the route stays until re-measured.
    pub fn clear(&mut self) {
        self.cpu = Window::EMPTY;
        self.gpu = Window::EMPTY;
        self.streak = 0;
    }

    pub fn route(&self) -> Route {
        self.route
    }

    /// Decides for blocks whose deadline is `deadline_s` seconds (the block's duration
    /// for a realtime stream, `f64::INFINITY` offline).
    pub fn decide(&mut self, deadline_s: f64) -> Decision {
        let c = &self.config;
        let cpu_median_s = self.cpu.quantile(0.5);
        let gpu_median_s = self.gpu.quantile(0.5);
        let gpu_tail_s = self.gpu.quantile(c.tail_quantile);
        let mut decision = Decision { route: self.route, reason: Reason::Measuring, cpu_median_s, gpu_median_s, gpu_tail_s, deadline_s };
        if !self.gpu_available {
            self.route = Route::Cpu;
            self.streak = 0;
            decision.route = Route::Cpu;
            decision.reason = Reason::GpuUnavailable;
            return decision;
        }
        if self.cpu.len < c.min_samples || self.gpu.len < c.min_samples {
            self.streak = 0;
            return decision;
        }
        let tail_fits = gpu_tail_s <= c.deadline_share * deadline_s;
        let wins = gpu_median_s * c.margin <= cpu_median_s;
        let loses = gpu_median_s >= cpu_median_s;
        // What the figures alone say, and whether they argue for leaving the route.
        let (reason, switch) = match self.route {
            Route::Cpu if wins && tail_fits => (Reason::GpuFaster, true),
            Route::Cpu if !tail_fits => (Reason::GpuTailTooLong, false),
            Route::Cpu => (Reason::GpuNotFastEnough, false),
            Route::Gpu if !tail_fits => (Reason::GpuTailTooLong, true),
            Route::Gpu if loses => (Reason::GpuNotFastEnough, true),
            // Between the thresholds the GPU keeps the route.
            Route::Gpu => (if wins { Reason::GpuFaster } else { Reason::Holding }, false),
        };
        if switch {
            self.streak += 1;
            if self.streak >= c.hold {
                self.route = if self.route == Route::Cpu { Route::Gpu } else { Route::Cpu };
                self.streak = 0;
                decision.reason = reason;
            } else {
                decision.reason = Reason::Holding;
            }
        } else {
            self.streak = 0;
            decision.reason = reason;
        }
        decision.route = self.route;
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut w = Window::EMPTY;
        for v in 1..=100 {
            w.push(v as f64);
        }
        // The window keeps the last 64: 37..=100.
        assert_eq!(w.quantile(0.5), 68.0);
        assert_eq!(w.quantile(1.0), 100.0);
        assert_eq!(w.quantile(0.0), 37.0);
        w.push(f64::NAN);
        assert_eq!(w.quantile(1.0), 100.0);
    }
}
