//! The pipeline's plan (the GPU kernels for short blocks, CUDA's `kernels/sos_pipe.cu`
//! and wgpu's `shaders/sos_pipe.wgsl`): which sections run in which launch. The default
//! kernels run a cascade's sections one after another over the block (sequentially: one
//! thread per channel, sections x frames steps; or the scan: three passes per section
//! with block-wide barriers). The pipeline runs them at the same time: one warp (one
//! workgroup of 32) per channel, lane `s` filtering section `s` one sample behind lane
//! `s - 1`, so a block takes frames + sections - 1 steps; runs of consecutive float32
//! cascades share a launch, up to [`PIPE_LANES`] sections each. Each section still sees
//! its samples in order through the sequential kernel's arithmetic, so the output and
//! the states are the sequential kernel's bit for bit (kernel-host tests, lavapipe);
//! only blocks the backend runs sequentially (one chunk) take it.
//!
//! Pure bookkeeping, no device code: the lane table the kernel reads (each lane's section
//! and state index) and the launches per group of stages.

use super::design::StageForm;
use super::realize::GpuPrecision;
use std::ops::Range;

/// Sections one launch runs at most: the lanes of a warp.
pub const PIPE_LANES: usize = 32;

/// One lane's section (`fx_pipe_lane` of kernels/sos_pipe_math.h): its record in the
/// sections buffer, and its state for channel `ch` at `state + ch * count` (the stage's
/// `[channel][section]` layout from the stage's state base).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeLane {
    pub section: u32,
    pub state: u32,
    pub count: u32,
}

impl PipeLane {
    /// The kernel's record: `[section, state, count, 0]`.
    pub fn words(&self) -> [u32; 4] {
        [self.section, self.state, self.count, 0]
    }
}

/// One launch: lanes `lane_base..lane_base + lanes` of [`PipePlan::lanes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeRun {
    pub lane_base: usize,
    pub lanes: usize,
}

/// Consecutive float32 cascades run by the pipeline: stages `stages` of the chain (the
/// first and last with sections) and their launches in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipeGroup {
    pub stages: Range<usize>,
    pub runs: Vec<PipeRun>,
}

/// The lane table and the groups of a chain's stages for `channels` channels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipePlan {
    pub lanes: Vec<PipeLane>,
    pub groups: Vec<PipeGroup>,
}

impl PipePlan {
    /// The plan for `stages`: every maximal run of consecutive float32 cascades with
    /// sections (an empty cascade between them neither breaks nor joins a run; a FIR or
    /// a float64 cascade breaks it) becomes a group, its sections in order cut into
    /// launches of at most [`PIPE_LANES`]. State indices follow the backends' layout: the
    /// cascades' states one stage after another, `channels x count` each.
    pub fn new(stages: &[StageForm], channels: usize) -> PipePlan {
        let mut plan = PipePlan::default();
        let mut state_base = 0usize;
        let mut open: Option<(usize, usize, usize)> = None; // (first stage, last stage with sections, first lane)
        let close = |plan: &mut PipePlan, open: &mut Option<(usize, usize, usize)>| {
            if let Some((first, last, lane0)) = open.take() {
                let runs = (lane0..plan.lanes.len()).step_by(PIPE_LANES).map(|b| PipeRun { lane_base: b, lanes: PIPE_LANES.min(plan.lanes.len() - b) }).collect();
                plan.groups.push(PipeGroup { stages: first..last + 1, runs });
            }
        };
        for (index, stage) in stages.iter().enumerate() {
            match *stage {
                StageForm::Sos { count: 0, .. } => {}
                StageForm::Sos { first, count, precision: GpuPrecision::F32 } => {
                    let lane0 = plan.lanes.len();
                    for i in 0..count {
                        plan.lanes.push(PipeLane { section: (first + i) as u32, state: (state_base + i) as u32, count: count as u32 });
                    }
                    open = Some(match open {
                        Some((f, _, l)) => (f, index, l),
                        None => (index, index, lane0),
                    });
                    state_base += channels * count;
                }
                StageForm::Sos { count, precision: GpuPrecision::F64, .. } => {
                    close(&mut plan, &mut open);
                    state_base += channels * count;
                }
                StageForm::Fir { .. } => close(&mut plan, &mut open),
            }
        }
        close(&mut plan, &mut open);
        plan
    }

    /// The group whose first stage is `stage`.
    pub fn group_at(&self, stage: usize) -> Option<&PipeGroup> {
        self.groups.iter().find(|g| g.stages.start == stage)
    }

    /// The lane table as the kernel reads it (at least one record: a device buffer is
    /// never empty).
    pub fn words(&self) -> Vec<[u32; 4]> {
        let mut w: Vec<[u32; 4]> = self.lanes.iter().map(PipeLane::words).collect();
        if w.is_empty() {
            w.push([0; 4]);
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sos(first: usize, count: usize, precision: GpuPrecision) -> StageForm {
        StageForm::Sos { first, count, precision }
    }

    fn fir() -> StageForm {
        StageForm::Fir { tap_base: 0, taps: 3, hist_base: 0, fft: None }
    }

    /// Every lane of every launch, as (section, state index for channel `ch`).
    fn lanes_of(plan: &PipePlan, ch: usize) -> Vec<(u32, usize)> {
        plan.groups.iter().flat_map(|g| &g.runs).flat_map(|r| &plan.lanes[r.lane_base..r.lane_base + r.lanes]).map(|l| (l.section, l.state as usize + ch * l.count as usize)).collect()
    }

    #[test]
    fn groups_break_at_firs_and_float64_cascades_and_cover_every_float32_section_once() {
        use GpuPrecision::{F32, F64};
        let channels = 3;
        let stages = vec![sos(0, 2, F32), sos(2, 0, F32), sos(2, 3, F32), fir(), sos(5, 1, F64), sos(6, 4, F32), sos(10, 40, F32), sos(50, 0, F32)];
        let plan = PipePlan::new(&stages, channels);
        let ranges: Vec<_> = plan.groups.iter().map(|g| g.stages.clone()).collect();
        assert_eq!(ranges, vec![0..3, 5..7]);
        assert!(plan.group_at(0).is_some() && plan.group_at(5).is_some() && plan.group_at(2).is_none());
        // The second group's 44 sections: 32, then 12.
        let runs: Vec<_> = plan.groups[1].runs.iter().map(|r| r.lanes).collect();
        assert_eq!(runs, vec![32, 12]);
        // The state layout the backends use: stage by stage, [channel][section], float64
        // cascades counted in it.
        let mut expect = Vec::new();
        for ch in 0..channels {
            expect.clear();
            let mut base = 0;
            for st in &stages {
                if let StageForm::Sos { first, count, precision } = *st {
                    if precision == F32 {
                        for i in 0..count {
                            expect.push(((first + i) as u32, base + ch * count + i));
                        }
                    }
                    base += channels * count;
                }
            }
            assert_eq!(lanes_of(&plan, ch), expect, "channel {ch}");
        }
    }

    #[test]
    fn a_chain_without_float32_cascades_plans_nothing() {
        let plan = PipePlan::new(&[fir(), sos(0, 2, GpuPrecision::F64), sos(2, 0, GpuPrecision::F32)], 2);
        assert!(plan.groups.is_empty() && plan.lanes.is_empty());
        assert_eq!(plan.words(), vec![[0; 4]]);
    }
}
