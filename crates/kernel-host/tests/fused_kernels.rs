//! The fused cascade scan's kernels (sos_fused.cu, in float and in double), compiled for
//! the host, against their CPU model (`ferrofx::gpu::fused::model_fused`) bit for bit.
//! Split from `kernels.rs` (the per-section SOS kernels).

use ferrofx::dsp::sos::SosCoefs;
use ferrofx::gpu::realize::Realization;
use ferrofx_kernel_host::{Section, Section64};
use ferrofx_testkit::{noise_amp, Rng};

mod common;
use common::{design_sos, random_iir, words};

/// One precision of the fused kernels for [`fused_kernels_match_the_model`]: the section
/// record, the kernels' host mirror, the bits compared.
trait FusedPrecision: ferrofx::gpu::realize::GpuFloat {
    type Sec;
    fn section(r: &Realization) -> Self::Sec;
    fn filler() -> Self::Sec;
    fn run(p: ferrofx_kernel_host::FusedParams, work: &mut [Self], sections: &[Self::Sec], tables: &[Self], states: &mut [[Self; 2]]);
    fn bits(self) -> u64;
}

impl FusedPrecision for f32 {
    type Sec = Section;
    fn section(r: &Realization) -> Section {
        words(&r.to_gpu())
    }
    fn filler() -> Section {
        Section([0.25; 12])
    }
    fn run(p: ferrofx_kernel_host::FusedParams, work: &mut [f32], sections: &[Section], tables: &[f32], states: &mut [[f32; 2]]) {
        ferrofx_kernel_host::sos_fused(p, work, sections, tables, states)
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl FusedPrecision for f64 {
    type Sec = Section64;
    fn section(r: &Realization) -> Section64 {
        Section64(r.to_gpu_as::<f64>().words())
    }
    fn filler() -> Section64 {
        Section64([0.25; 12])
    }
    fn run(p: ferrofx_kernel_host::FusedParams, work: &mut [f64], sections: &[Section64], tables: &[f64], states: &mut [[f64; 2]]) {
        ferrofx_kernel_host::sos64d_fused(p, work, sections, tables, states)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The fused cascade scan (sos_fused.cu's three kernels, in `F`) against its CPU model
/// (`ferrofx::gpu::fused::model_fused` in `F`) bit for bit: seeded random cascades of every
/// IIR family cut into groups of 1 to 8 sections, 1 to 3 channels at an odd stride, blocks
/// from one sample to three tiles and a part, chunk lengths that are and are not
/// multiples of the staging segment, random start states, the group's sections, tables
/// and states at offsets in shared buffers as the backend packs them; two blocks in a row
/// (the state carried on the device's layout). That the model is the cascade (within the
/// tolerance) is `ferrofx::gpu::fused`'s and `tests/gpu_model.rs`'s business.
fn fused_kernels_match_the_model<F: FusedPrecision>(seed0: u64) {
    use ferrofx::gpu::fused::{fuse_cascade_as, fused_groups, model_fused, FUSED_TABLE_FLOATS, FUSED_TILE};
    use ferrofx_kernel_host::FusedParams;
    let mut rng = Rng::new(seed0);
    for seed in 0..24u64 {
        let mut cascade: Vec<SosCoefs> = Vec::new();
        while cascade.len() < 1 + rng.below(12) {
            cascade.extend(design_sos(&random_iir(&mut rng)));
        }
        let group_max = 1 + rng.below(8);
        let chunk_len = [16usize, 24, 37, 128][rng.below(4)];
        let frames = [1usize, 15, 16, 17, 300, chunk_len * FUSED_TILE, chunk_len * FUSED_TILE + 1, 3 * chunk_len * FUSED_TILE + 555][rng.below(8)];
        let channels = 1 + rng.below(3);
        let stride = frames + 5;
        let reals: Vec<Realization> = cascade.iter().map(Realization::new).collect();
        let groups = fuse_cascade_as::<F>(&reals, group_max, chunk_len);
        let count = cascade.len();
        // One unrelated section first and one table block first: nonzero offsets.
        let mut sections = vec![F::filler()];
        sections.extend(reals.iter().map(F::section));
        let mut tables = vec![F::from_f64(f64::NAN); 7];
        for g in &groups {
            tables.extend(g.table_words());
        }
        let mut states: Vec<[F; 2]> = (0..channels * count).map(|_| [F::from_f64(rng.unit() - 0.5), F::from_f64(rng.unit() - 0.5)]).collect();
        let mut work = vec![F::default(); channels * stride];
        for ch in 0..channels {
            for (w, v) in work[ch * stride..ch * stride + frames].iter_mut().zip(noise_amp(frames, seed * 17 + ch as u64, 0.7)) {
                *w = F::from_f64(f64::from(v));
            }
        }
        let mut model = work.clone();
        let mut model_states = states.clone();
        let input = work.clone();
        let what = format!("seed {seed}: {count} sections in groups of {group_max}, {channels} x {frames} frames, chunks of {chunk_len}");
        for round in 0..2 {
            if round == 1 {
                work.copy_from_slice(&input);
                model.copy_from_slice(&input);
            }
            for (g, ((g0, size), group)) in fused_groups(count, group_max).into_iter().zip(&groups).enumerate() {
                let chunks = frames.div_ceil(chunk_len);
                let p = FusedParams {
                    frames: frames as u32,
                    chunk_len: chunk_len as u32,
                    chunks: chunks as u32,
                    tiles: chunks.div_ceil(FUSED_TILE) as u32,
                    stride: stride as u32,
                    first: (1 + g0) as u32,
                    count: size as u32,
                    state_base: g0 as u32,
                    state_stride: count as u32,
                    table_base: (7 + g * FUSED_TABLE_FLOATS) as u32,
                    channels: channels as u32,
                    pad: 0,
                };
                F::run(p, &mut work, &sections, &tables, &mut states);
                for ch in 0..channels {
                    let st = &mut model_states[ch * count + g0..ch * count + g0 + size];
                    model_fused(group, &mut model[ch * stride..ch * stride + frames], st, chunk_len);
                }
            }
            let differ = work.iter().zip(&model).position(|(a, b)| a.bits() != b.bits());
            assert_eq!(differ, None, "{what}, block {round}: the kernels' output differs from the model's");
            let differ = states.iter().zip(&model_states).position(|(a, b)| a[0].bits() != b[0].bits() || a[1].bits() != b[1].bits());
            assert_eq!(differ, None, "{what}, block {round}: the kernels' end states differ from the model's");
            // Nothing outside the channels' frames was touched.
            for ch in 0..channels {
                assert!(work[ch * stride + frames..(ch + 1) * stride].iter().all(|&v| v == F::default()), "{what}: past the frames");
            }
        }
    }
}

#[test]
fn fused_scan_kernels_equal_their_cpu_model_bit_for_bit() {
    fused_kernels_match_the_model::<f32>(4311);
}

/// The float64 kernels (ferrofx_sos64d_fused_*: the PyTorch operator's rows, opt-in) the
/// same way, in double.
#[test]
fn fused_scan_kernels_in_double_equal_their_cpu_model_bit_for_bit() {
    fused_kernels_match_the_model::<f64>(5077);
}
