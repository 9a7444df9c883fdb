//! The latency policy: how a latency change may reach the host while active, and what
//! each host block tells the host about it (see the parent module's docs).

use super::AudioState;
use crate::control::chain::AudioConfig;
use crate::control::params::FerroParams;

/// How a latency change may reach the host while the plugin is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyPolicy {
    /// The latency may change between blocks (VST3's `restartComponent(kLatencyChanged)`,
    /// the standalone app): the phase mode switches inside processing.
    InProcess,
    /// Only during `activate` (CLAP): a change asks the host for a restart.
    Restart,
    /// One latency for the whole activation (a latency reserve, on any format): the
    /// phase mode switches inside processing within it, every mode delayed to it; a
    /// mode that needs more asks the host for a restart.
    Fixed(u32),
}

/// What a block asks of the host about latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyNews {
    /// The latency of the audio from this block on, where it changed.
    pub report: Option<u32>,
    /// The settings want a latency this activation cannot switch to: ask for a restart
    /// (once per wanted value).
    pub restart: bool,
}

impl AudioState {
    /// Follows the latency the settings ask for (once per host block, before its audio):
    /// drives a phase switch (`LatencyPolicy::InProcess`; the new latency is reported at
    /// the block its cross-fade starts), and asks for a restart, once, for a change this
    /// activation cannot make (the GPU path; any change under `LatencyPolicy::Restart`).
    pub(super) fn follow_latency(&mut self, params: &FerroParams, config: AudioConfig) -> LatencyNews {
        let mut news = LatencyNews::default();
        let wanted = params.phase.value().fir_mode();
        let stereo = config.channels == 2;
        let gpu = self.gpu_latency;
        match (self.switch.as_mut(), self.linear.as_mut()) {
            (Some(sw), Some(linear)) => {
                // A mode beyond a latency reserve is not switched to (it waits for a
                // restart, below): the running mode stays.
                let target = if sw.reachable(wanted) { wanted } else { linear.mode() };
                sw.follow(target, linear.mode(), &self.band_cache, stereo, linear);
                let fir = linear.poll(sw.wanted_fir());
                sw.offer(fir, linear);
                let fixed = sw.fixed().is_some();
                if let (Some(linear_latency), false) = (sw.begin_fade(linear.latency()), fixed) {
                    let total = gpu + linear_latency as u32;
                    if let Some(d) = self.dry_delay.as_mut() {
                        d.set_len(total as usize);
                    }
                    self.reported_latency = total;
                    news.report = Some(total);
                }
            }
            (None, Some(linear)) => {
                // (Only redesigns of the running length are taken.)
                let _ = linear.poll(None);
            }
            _ => {}
        }
        let wanted_gpu = self.wanted_gpu_latency(params, config.max_block_frames, self.side.has_stages());
        // What the phase mode adds that this activation cannot switch to by itself.
        let wanted_mode = crate::control::linear::latency_of(wanted, f64::from(config.sample_rate_hz)) as u32;
        let reserve_now = params.latency_reserve.value().latency_samples() as u32;
        let reserve_then = if let LatencyPolicy::Fixed(l) = self.latency_policy { l } else { 0 };
        let phase_part = match self.latency_policy {
            // A new latency reserve takes effect at the next activation.
            _ if reserve_now != reserve_then => reserve_now.max(wanted_mode),
            LatencyPolicy::InProcess => self.reported_latency - gpu,
            LatencyPolicy::Restart => wanted_mode,
            // Within the reserve the latency stays; beyond it the mode's is wanted.
            LatencyPolicy::Fixed(_) => (self.reported_latency - gpu).max(wanted_mode),
        };
        let wanted = wanted_gpu + phase_part;
        if wanted == self.reported_latency {
            self.restart_asked = None;
        } else if self.restart_asked != Some(wanted) {
            self.restart_asked = Some(wanted);
            news.restart = true;
        }
        news
    }

    /// The GPU path's latency the current settings ask for: the host's largest block
    /// when the GPU path should run (a GPU or Auto backend, host blocks of at least the
    /// GPU minimum, chain stages to offload, and no failed search for an adapter), else 0.
    pub fn wanted_gpu_latency(&self, params: &FerroParams, max_block: usize, has_stages: bool) -> u32 {
        let wants = params.backend.value().policy().is_some()
            && max_block >= params.gpu_min_block.value().max(1) as usize
            && has_stages
            && self.gpu_found != Some(false);
        if wants {
            max_block as u32
        } else {
            0
        }
    }
}
