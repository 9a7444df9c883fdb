//! The fused cascade scan (CUDA's throughput kernels, `kernels/sos_fused.cu`): up to
//! [`FUSED_MAX_SECTIONS`] sections of a cascade run together over a block, so the samples
//! are read twice and written once per group of sections instead of three times per
//! section, and a channel's block is spread over many thread blocks (tiles) instead of
//! one. Pure arithmetic, no device code: the transfer tables the kernels read and a CPU
//! model of the kernels' exact operation order, which the kernel-host tests hold the
//! kernels to bit for bit and the error estimate runs.
//!
//! # The algorithm
//! A group of `G` sections is one linear system with a state of `2G` numbers (padded to
//! [`FUSED_WIDTH`]): one sample moves it by a block lower-triangular matrix `M` (each
//! section's `A` on the diagonal, the coupling through the earlier sections' outputs
//! below). A block is cut into chunks of `L` samples, [`FUSED_TILE`] chunks to a tile
//! (one thread block of the kernels, one thread per chunk):
//! 1. `ends`: every chunk runs through the group from a zero state (samples read once)
//!    and its end state is scanned across the tile (Hillis-Steele with `M^(L 2^k)`), giving
//!    each chunk's end state as if the tile had started from zero: the *prefixes*, written
//!    to a scratch buffer (`2G` floats per chunk).
//! 2. `carry`: per channel, the tiles' true start states one after another:
//!    `start(t+1) = prefix(last chunk of t) + M^(L 256) start(t)`, from the block's state.
//! 3. `run`: each chunk's true start state, `prefix(j-1) + M^(L j) start(t)` (`M^(L j)`
//!    as the product of the tables of `j`'s set bits), then the chunk again through the
//!    group from it, written in place (samples read and written once); the last chunk
//!    of the channel leaves the state.
//!
//! The tables are `M^(L 2^k) - I` (k = 0..=8) computed in `f64` and rounded once, applied
//! as `v + (T - I) v` (the per-section scan's delta form, which keeps float32's relative
//! precision for poles near `z = 1`). Whether a cascade may run this way is decided by
//! the same kind of estimate as the float32 form's ([`fused_error_estimate`], within
//! [`GPU_ERROR_BUDGET`]); a cascade that misses it keeps the per-section kernels.

use super::design::StageForm;
use super::realize::{peak_error, step, DeltaSection, GpuFloat, GpuPrecision, Realization, GPU_ERROR_BUDGET};

/// Sections fused into one group at most (the kernels keep `2 x` this many state numbers
/// in registers per thread).
pub const FUSED_MAX_SECTIONS: usize = 8;
/// The group state's width: `2 x FUSED_MAX_SECTIONS` (a smaller group is padded with
/// zeros; the kernels always compute this width).
pub const FUSED_WIDTH: usize = 2 * FUSED_MAX_SECTIONS;
/// Chunks per tile (threads per thread block).
pub const FUSED_TILE: usize = 256;
/// Transfer tables per group: `M^(L 2^k) - I` for k = 0..=8 (the last one a tile's).
pub const FUSED_STEPS: usize = 9;
/// Samples per chunk the CUDA backend uses.
pub const FUSED_CHUNK_FRAMES: usize = 128;
/// Blocks shorter than this keep the per-section kernels (their 256 chunks per channel
/// keep more threads busy there than the fused kernels' chunks of 128 samples). Not
/// measured on a device yet: a guess, documented as one.
pub const FUSED_MIN_FRAMES: usize = 16_384;
/// How far the float64 fused scan may stray from the sequential float64 delta form (a
/// share of the output peak) for a cascade to run fused in float64: the float64 path's
/// own accuracy class (within 1e-12 of SciPy's float64 result on ordinary designs), so
/// the opt-in kernels never cost a float64 caller more than rounding.
pub const FUSED64_ERROR_BUDGET: f64 = 1e-12;
/// Numbers of one group's tables.
pub const FUSED_TABLE_FLOATS: usize = FUSED_STEPS * FUSED_WIDTH * FUSED_WIDTH;

type State<F> = [F; FUSED_WIDTH];
type Table<F> = [F; FUSED_WIDTH * FUSED_WIDTH];

/// One group of sections as the fused kernels run it, in `F` (`f32`: a chain's float32
/// cascades; `f64`: the float64 kernels over a caller's float64 rows): the section records
/// and the transfer tables for chunks of `chunk_len` samples.
#[derive(Clone, Debug)]
pub struct FusedGroup<F = f32> {
    pub sections: Vec<DeltaSection<F>>,
    /// `FUSED_STEPS` tables of `FUSED_WIDTH x FUSED_WIDTH` numbers, row-major.
    pub tables: Vec<Table<F>>,
}

type Mat = Vec<[f64; FUSED_WIDTH]>;

fn mat_mul(a: &Mat, b: &Mat) -> Mat {
    let mut out = vec![[0.0f64; FUSED_WIDTH]; FUSED_WIDTH];
    for (i, row) in out.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = (0..FUSED_WIDTH).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    out
}

fn identity() -> Mat {
    let mut m = vec![[0.0f64; FUSED_WIDTH]; FUSED_WIDTH];
    for (i, row) in m.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    m
}

/// The group's one-sample transfer matrix with zero input, in `f64`: column `k` is the
/// state after one sample from the `k`-th unit state.
fn one_sample(realizations: &[Realization]) -> Mat {
    let mut m = vec![[0.0f64; FUSED_WIDTH]; FUSED_WIDTH];
    for k in 0..2 * realizations.len() {
        let mut s = [0.0f64; FUSED_WIDTH];
        s[k] = 1.0;
        let mut u = 0.0f64;
        for (i, r) in realizations.iter().enumerate() {
            let (x, y) = (s[2 * i], s[2 * i + 1]);
            let out = r.c[0] * x + r.c[1] * y + r.d * u;
            let a = r.a();
            s[2 * i] = a[0][0] * x + a[0][1] * y + r.b[0] * u;
            s[2 * i + 1] = a[1][0] * x + a[1][1] * y + r.b[1] * u;
            u = out;
        }
        for (i, row) in m.iter_mut().enumerate() {
            row[k] = s[i];
        }
    }
    m
}

impl FusedGroup {
    /// The float32 group of `realizations` (1 to [`FUSED_MAX_SECTIONS`]) for chunks of
    /// `chunk_len`.
    pub fn new(realizations: &[Realization], chunk_len: usize) -> FusedGroup {
        FusedGroup::new_as(realizations, chunk_len)
    }
}

impl<F: GpuFloat> FusedGroup<F> {
    /// The group of `realizations` (1 to [`FUSED_MAX_SECTIONS`]) in `F` for chunks of
    /// `chunk_len`: the tables computed in `f64` and rounded to `F` once.
    pub fn new_as(realizations: &[Realization], chunk_len: usize) -> FusedGroup<F> {
        assert!((1..=FUSED_MAX_SECTIONS).contains(&realizations.len()), "a fused group of {} sections", realizations.len());
        let m = one_sample(realizations);
        let mut p = identity();
        let (mut base, mut n) = (m, chunk_len);
        while n > 0 {
            if n & 1 == 1 {
                p = mat_mul(&p, &base);
            }
            base = mat_mul(&base, &base);
            n >>= 1;
        }
        let mut tables = Vec::with_capacity(FUSED_STEPS);
        for _ in 0..FUSED_STEPS {
            let mut t = [F::default(); FUSED_WIDTH * FUSED_WIDTH];
            for i in 0..FUSED_WIDTH {
                for j in 0..FUSED_WIDTH {
                    let v = p[i][j] - if i == j { 1.0 } else { 0.0 };
                    t[i * FUSED_WIDTH + j] = F::from_f64(v);
                }
            }
            tables.push(t);
            p = mat_mul(&p, &p);
        }
        FusedGroup { sections: realizations.iter().map(Realization::to_gpu_as::<F>).collect(), tables }
    }

    /// The tables as the kernels read them (`FUSED_TABLE_FLOATS` numbers).
    pub fn table_words(&self) -> impl Iterator<Item = F> + '_ {
        self.tables.iter().flat_map(|t| t.iter().copied())
    }
}

/// `v + (T - I) v` with `t` holding `T - I`: per row, the first product then fused
/// multiply-adds in column order, then the add (the kernels' `fx_fused_advance`).
fn advance<F: GpuFloat>(t: &Table<F>, v: &State<F>) -> State<F> {
    let mut r = [F::default(); FUSED_WIDTH];
    for (i, out) in r.iter_mut().enumerate() {
        let row = &t[i * FUSED_WIDTH..(i + 1) * FUSED_WIDTH];
        let mut acc = row[0] * v[0];
        for k in 1..FUSED_WIDTH {
            acc = row[k].mul_add(v[k], acc);
        }
        *out = v[i] + acc;
    }
    r
}

fn add<F: GpuFloat>(a: &State<F>, b: &State<F>) -> State<F> {
    std::array::from_fn(|i| a[i] + b[i])
}

/// One sample through the group from state `s` (section by section, each section's
/// output the next one's input); returns the group's output.
fn group_step<F: GpuFloat>(sections: &[DeltaSection<F>], s: &mut State<F>, x: F) -> F {
    let mut u = x;
    for (i, sec) in sections.iter().enumerate() {
        let mut st = [s[2 * i], s[2 * i + 1]];
        u = step(sec, &mut st, u);
        s[2 * i] = st[0];
        s[2 * i + 1] = st[1];
    }
    u
}

/// The CPU model of the fused kernels for one channel's block `x` (in place) through
/// `group` from the sections' delta-form `states` (left at the block's end), chunks of
/// `chunk_len`: the three kernels' arithmetic in their order, in the group's precision.
pub fn model_fused<F: GpuFloat>(group: &FusedGroup<F>, x: &mut [F], states: &mut [[F; 2]], chunk_len: usize) {
    let n = x.len();
    if n == 0 {
        return;
    }
    let l = chunk_len.max(1);
    let chunks = n.div_ceil(l);
    let tiles = chunks.div_ceil(FUSED_TILE);
    let g = &group.sections;
    // 1. ends: zero-state chunk end states, scanned within each tile.
    let mut prefix: Vec<State<F>> = (0..chunks)
        .map(|c| {
            let mut s = [F::default(); FUSED_WIDTH];
            for &v in &x[c * l..((c + 1) * l).min(n)] {
                group_step(g, &mut s, v);
            }
            s
        })
        .collect();
    for t in 0..tiles {
        let tile = &mut prefix[t * FUSED_TILE..((t + 1) * FUSED_TILE).min(chunks)];
        let (mut offset, mut k) = (1, 0);
        while k < FUSED_STEPS - 1 && offset < tile.len() {
            let prev = tile.to_vec();
            for j in offset..tile.len() {
                tile[j] = add(&prev[j], &advance(&group.tables[k], &prev[j - offset]));
            }
            offset *= 2;
            k += 1;
        }
    }
    // 2. carry: the tiles' true start states.
    let mut carry = Vec::with_capacity(tiles);
    let mut v = [F::default(); FUSED_WIDTH];
    for (i, s) in states.iter().enumerate().take(g.len()) {
        v[2 * i] = s[0];
        v[2 * i + 1] = s[1];
    }
    for t in 0..tiles {
        carry.push(v);
        if t + 1 < tiles {
            v = add(&prefix[t * FUSED_TILE + FUSED_TILE - 1], &advance(&group.tables[FUSED_STEPS - 1], &v));
        }
    }
    // 3. run: every chunk from its true start state.
    for c in 0..chunks {
        let (t, j) = (c / FUSED_TILE, c % FUSED_TILE);
        let mut s = carry[t];
        for (k, table) in group.tables.iter().enumerate().take(FUSED_STEPS - 1) {
            if (j >> k) & 1 == 1 {
                s = advance(table, &s);
            }
        }
        if j > 0 {
            s = add(&prefix[c - 1], &s);
        }
        for v in x[c * l..((c + 1) * l).min(n)].iter_mut() {
            *v = group_step(g, &mut s, *v);
        }
        if c == chunks - 1 {
            for (i, st) in states.iter_mut().enumerate().take(g.len()) {
                *st = [s[2 * i], s[2 * i + 1]];
            }
        }
    }
}

/// How a cascade of `count` sections is cut into fused groups of at most `group_max`
/// sections (balanced: 15 sections in groups of 8 are 8 + 7): `(first, count)` pairs.
pub fn fused_groups(count: usize, group_max: usize) -> Vec<(usize, usize)> {
    let group_max = group_max.clamp(1, FUSED_MAX_SECTIONS);
    let groups = count.div_ceil(group_max);
    let mut out = Vec::with_capacity(groups);
    let mut first = 0;
    for g in 0..groups {
        let size = count / groups + usize::from(g < count % groups);
        out.push((first, size));
        first += size;
    }
    out
}

/// A cascade's fused groups for chunks of `chunk_len`, each at most `group_max`
/// sections ([`fused_groups`]).
pub fn fuse_cascade(realizations: &[Realization], group_max: usize, chunk_len: usize) -> Vec<FusedGroup> {
    fuse_cascade_as(realizations, group_max, chunk_len)
}

/// [`fuse_cascade`] in `F`.
pub fn fuse_cascade_as<F: GpuFloat>(realizations: &[Realization], group_max: usize, chunk_len: usize) -> Vec<FusedGroup<F>> {
    fused_groups(realizations.len(), group_max).into_iter().map(|(first, count)| FusedGroup::new_as(&realizations[first..first + count], chunk_len)).collect()
}

/// The error of running a cascade (its sections' delta forms, `realizations`) through
/// the fused kernels in groups of `group_max`, chunks of `chunk_len`: a seeded
/// white-noise probe of a little over two tiles (so the carry between tiles and a
/// partial tile are both in it) through [`model_fused`], group after group, against the
/// cascade in `f64` (the same delta forms unrounded: a similarity transform of TDF-II),
/// as a share of the output peak (infinite where not finite). Within
/// [`GPU_ERROR_BUDGET`]: the cascade may run fused.
pub fn fused_error_estimate(realizations: &[Realization], group_max: usize, chunk_len: usize) -> f64 {
    fused_error_estimate_as::<f32>(realizations, group_max, chunk_len)
}

/// [`fused_error_estimate`] with the kernels in `F` (the probe is rounded to `F` first,
/// and the reference runs on the rounded probe). In `f64` it measures what the fused
/// order of operations costs against the sequential delta form in the same precision.
pub fn fused_error_estimate_as<F: GpuFloat>(realizations: &[Realization], group_max: usize, chunk_len: usize) -> f64 {
    let len = 2 * FUSED_TILE * chunk_len.max(1) + 100 * chunk_len.max(1) + 37;
    let probe: Vec<F> = crate::design::probe_noise(len).iter().map(|&v| F::from_f64(v)).collect();
    let mut exact: Vec<f64> = probe.iter().map(|&v| v.to_f64()).collect();
    for r in realizations {
        let mut s = [0.0f64; 2];
        for v in exact.iter_mut() {
            let x = *v;
            *v = r.c[0] * s[0] + r.c[1] * s[1] + r.d * x;
            let d = r.delta;
            s = [s[0] + d[0][0] * s[0] + d[0][1] * s[1] + r.b[0] * x, s[1] + d[1][0] * s[0] + d[1][1] * s[1] + r.b[1] * x];
        }
    }
    let mut y = probe;
    for group in fuse_cascade_as::<F>(realizations, group_max, chunk_len) {
        let mut states = vec![[F::default(); 2]; group.sections.len()];
        model_fused(&group, &mut y, &mut states, chunk_len);
    }
    let peak = exact.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    peak_error(&y, &exact, peak)
}

/// Whether a cascade may run fused: its estimate within the GPU error budget.
pub fn fusable(realizations: &[Realization], group_max: usize, chunk_len: usize) -> bool {
    fused_error_estimate(realizations, group_max, chunk_len) <= GPU_ERROR_BUDGET
}

/// Whether a cascade may run fused in float64: its float64 estimate within
/// [`FUSED64_ERROR_BUDGET`].
pub fn fusable64(realizations: &[Realization], group_max: usize, chunk_len: usize) -> bool {
    fused_error_estimate_as::<f64>(realizations, group_max, chunk_len) <= FUSED64_ERROR_BUDGET
}

/// One fused group's place: its first section within its cascade, its size, its tables'
/// offset (floats) in the tables a backend uploads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedPlace {
    pub first: usize,
    pub count: usize,
    pub table_base: usize,
}

/// Which cascades of a chain run fused and where their groups' tables lie: what both
/// GPU backends upload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FusedPlan {
    /// Per stage of the chain: its groups where it runs fused.
    pub stages: Vec<Option<Vec<FusedPlace>>>,
    /// Every fused group's tables, one after another ([`FUSED_TABLE_FLOATS`] each).
    pub tables: Vec<f32>,
}

impl FusedPlan {
    /// The plan for a chain of `stages` (a design's, over its `realizations`) for blocks
    /// of up to `max_frames` frames, in groups of up to `group_max` sections (0: none
    /// fused): a float32 cascade runs fused where [`fusable`] says so, in chunks of
    /// [`FUSED_CHUNK_FRAMES`]; float64 cascades and FIR stages do not, and nothing does
    /// in a chain whose blocks are all shorter than [`FUSED_MIN_FRAMES`] (no estimate is
    /// made for it: a realtime chain's new coefficients cost nothing here).
    pub fn new(stages: &[StageForm], realizations: &[Realization], group_max: usize, max_frames: usize) -> FusedPlan {
        let group_max = if max_frames < FUSED_MIN_FRAMES { 0 } else { group_max.min(FUSED_MAX_SECTIONS) };
        let mut tables = Vec::new();
        let stages = stages
            .iter()
            .map(|s| {
                let StageForm::Sos { first, count, precision: GpuPrecision::F32 } = *s else { return None };
                let forms = &realizations[first..first + count];
                if count == 0 || group_max == 0 || !fusable(forms, group_max, FUSED_CHUNK_FRAMES) {
                    return None;
                }
                let groups = fused_groups(count, group_max).into_iter().zip(fuse_cascade(forms, group_max, FUSED_CHUNK_FRAMES));
                Some(
                    groups
                        .map(|((g0, size), group)| {
                            let place = FusedPlace { first: g0, count: size, table_base: tables.len() };
                            tables.extend(group.table_words());
                            place
                        })
                        .collect(),
                )
            })
            .collect();
        FusedPlan { stages, tables }
    }

    /// Whether any stage runs fused.
    pub fn any(&self) -> bool {
        self.stages.iter().any(Option::is_some)
    }
}

/// Per cascade (SOS stage) of `stages`, whether stage index `runs` says it runs fused:
/// what the backends' `fused_status` report.
pub fn cascade_status(stages: &[StageForm], runs: impl Fn(usize) -> bool) -> Vec<bool> {
    stages.iter().enumerate().filter(|(_, s)| matches!(s, StageForm::Sos { .. })).map(|(i, _)| runs(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::sos::SosCoefs;
    use crate::gpu::realize::run_cascade;

    fn cascade(chain: crate::chain::Chain, fs: f64) -> Vec<SosCoefs> {
        match chain.design(fs).unwrap().stages.remove(0) {
            crate::chain::DesignedStage::Sos(v) => v.iter().map(SosCoefs::from).collect(),
            crate::chain::DesignedStage::Fir(_) => unreachable!(),
        }
    }

    #[test]
    fn groups_are_balanced_and_cover_the_cascade() {
        for count in 0..40 {
            for max in 1..=10 {
                let groups = fused_groups(count, max);
                let sizes: Vec<usize> = groups.iter().map(|g| g.1).collect();
                assert_eq!(sizes.iter().sum::<usize>(), count);
                assert!(sizes.iter().all(|&s| (1..=max.min(FUSED_MAX_SECTIONS)).contains(&s)), "{count} in {max}: {sizes:?}");
                if let (Some(lo), Some(hi)) = (sizes.iter().min(), sizes.iter().max()) {
                    assert!(hi - lo <= 1, "{count} in {max}: {sizes:?}");
                }
                let mut next = 0;
                for (first, size) in groups {
                    assert_eq!(first, next);
                    next += size;
                }
            }
        }
    }

    /// The tables are the group's chunk transfer: `M^L - I` against `L` samples of
    /// silence through the sections one after another (realize.rs's `step` in `f64`) from
    /// each unit state, and each later table against `M^(L 2^k)` the same way.
    #[test]
    fn tables_are_the_groups_chunk_transfer_matrices() {
        let coefs = cascade(crate::chain::Butterworth::lowpass(300.0, 8).into(), 48_000.0);
        let r: Vec<Realization> = coefs.iter().map(Realization::new).collect();
        let sections: Vec<DeltaSection<f64>> = r.iter().map(|x| x.to_gpu_as::<f64>()).collect();
        let l = 48;
        let g = FusedGroup::new(&r, l);
        for (k_table, samples) in [(0usize, l), (1, 2 * l), (3, 8 * l)] {
            for k in 0..2 * r.len() {
                let mut s = vec![[0.0f64; 2]; r.len()];
                s[k / 2][k % 2] = 1.0;
                for _ in 0..samples {
                    let mut u = 0.0;
                    for (sec, st) in sections.iter().zip(s.iter_mut()) {
                        u = step(sec, st, u);
                    }
                }
                for (i, want) in s.iter().flatten().enumerate() {
                    let want = want - if i == k { 1.0 } else { 0.0 };
                    let got = f64::from(g.tables[k_table][i * FUSED_WIDTH + k]);
                    assert!((got - want).abs() <= 1e-5 * want.abs().max(1e-3), "table {k_table} ({i}, {k}): {got} vs {want}");
                }
            }
        }
    }

    /// The fused model is the cascade: against the per-section model run sequentially
    /// (the float32 GPU path's arithmetic), over blocks of one chunk to several tiles,
    /// with a state carried from block to block, for every IIR family.
    #[test]
    fn fused_model_matches_the_sequential_cascade_across_tiles_and_blocks() {
        use crate::chain::{Bessel, Butterworth, Chebyshev1, Chebyshev2, Elliptic};
        let cascades = [
            cascade(Butterworth::lowpass(1000.0, 8).into(), 48_000.0),
            cascade(Chebyshev1::highpass(200.0, 6, 0.5).into(), 48_000.0),
            cascade(Chebyshev2::bandpass(400.0, 4000.0, 6, 40.0).into(), 48_000.0),
            cascade(Elliptic::lowpass(8000.0, 8, 0.1, 60.0).into(), 48_000.0),
            cascade(Bessel::highpass(50.0, 4).into(), 48_000.0),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for (ci, coefs) in cascades.iter().enumerate() {
            let r: Vec<Realization> = coefs.iter().map(Realization::new).collect();
            for group_max in [1, 3, 8] {
                let l = [16usize, 40, 128][ci % 3];
                let groups = fuse_cascade(&r, group_max, l);
                let x: Vec<f32> = (0..3 * FUSED_TILE * l + 77).map(|_| (rand() * 2.0 - 1.0) as f32).collect();
                let mut want = x.clone();
                let mut seq = vec![[0.0f32; 2]; r.len()];
                run_cascade(&r, &mut want, &mut seq, usize::MAX);
                let mut got = x.clone();
                let mut states: Vec<Vec<[f32; 2]>> = groups.iter().map(|g| vec![[0.0; 2]; g.sections.len()]).collect();
                // Blocks of uneven lengths, the state carried between them.
                let mut at = 0;
                while at < got.len() {
                    let len = ((rand() * 1.5 * (FUSED_TILE * l) as f64) as usize + 1).min(got.len() - at);
                    for (g, s) in groups.iter().zip(states.iter_mut()) {
                        model_fused(g, &mut got[at..at + len], s, l);
                    }
                    at += len;
                }
                let peak = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let err = want.iter().zip(&got).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                assert!(err <= 2e-5 * peak, "cascade {ci}, groups of {group_max}, chunks of {l}: {err} of {peak}");
                let end: Vec<[f32; 2]> = states.concat();
                for (a, b) in end.iter().zip(&seq) {
                    for k in 0..2 {
                        assert!((a[k] - b[k]).abs() <= 1e-4 * peak.max(b[k].abs()), "cascade {ci}: state {a:?} vs {b:?}");
                    }
                }
            }
        }
    }

    /// The plan both backends upload: per stage its groups (balanced, in the cascade's
    /// order) where the cascade is float32 and fusable, none for FIR stages, float64
    /// cascades, a cascade the estimate refuses and a chain of short blocks; each group's
    /// tables one after another and equal to the group's own.
    #[test]
    fn the_plan_places_every_fusable_cascades_groups_and_their_tables() {
        let forms = |c: Vec<SosCoefs>| c.iter().map(Realization::new).collect::<Vec<_>>();
        let mut all = forms(cascade(crate::chain::Butterworth::highpass(40.0, 6).into(), 48_000.0)); // 3 sections
        all.extend(forms(cascade(crate::chain::Butterworth::lowpass(5000.0, 20).into(), 48_000.0))); // 10 sections
        all.extend(forms(vec![SosCoefs::from(&crate::design::Sos { b: [1.0, 0.0, 0.0], a: [1.0, f64::NAN, 0.5] })])); // refused
        all.extend(forms(cascade(crate::chain::Butterworth::lowpass(300.0, 4).into(), 48_000.0))); // 2 sections
        let sos = |first, count, precision| StageForm::Sos { first, count, precision };
        let fir = StageForm::Fir { tap_base: 0, taps: 3, hist_base: 0, fft: None };
        let stages = [sos(0, 3, GpuPrecision::F32), fir, sos(3, 10, GpuPrecision::F32), sos(13, 1, GpuPrecision::F32), sos(14, 2, GpuPrecision::F64)];
        let plan = FusedPlan::new(&stages, &all, 4, FUSED_MIN_FRAMES);
        let place = |first, count, g: usize| FusedPlace { first, count, table_base: g * FUSED_TABLE_FLOATS };
        assert_eq!(plan.stages, vec![Some(vec![place(0, 3, 0)]), None, Some(vec![place(0, 4, 1), place(4, 3, 2), place(7, 3, 3)]), None, None]);
        assert_eq!(cascade_status(&stages, |i| plan.stages[i].is_some()), vec![true, true, false, false]);
        assert!(plan.any());
        assert_eq!(plan.tables.len(), 4 * FUSED_TABLE_FLOATS);
        let want: Vec<f32> = FusedGroup::new(&all[3 + 4..3 + 7], FUSED_CHUNK_FRAMES).table_words().collect();
        assert_eq!(plan.tables[2 * FUSED_TABLE_FLOATS..3 * FUSED_TABLE_FLOATS], want[..]);
        // Off: nothing fused, no tables.
        let off = FusedPlan::new(&stages, &all, 0, FUSED_MIN_FRAMES);
        assert!(!off.any() && off.tables.is_empty());
        // Blocks too short for the fused kernels: nothing planned.
        let short = FusedPlan::new(&stages, &all, 4, FUSED_MIN_FRAMES - 1);
        assert!(!short.any() && short.tables.is_empty());
    }

    /// The estimate accepts ordinary cascades and refuses a broken one; it is the model's
    /// error, so a cascade it accepts meets the budget on another signal too.
    #[test]
    fn the_estimate_accepts_ordinary_cascades_and_refuses_broken_ones() {
        let forms = |c: &[SosCoefs]| c.iter().map(Realization::new).collect::<Vec<_>>();
        let easy = forms(&cascade(crate::chain::Butterworth::lowpass(1000.0, 8).into(), 48_000.0));
        let e = fused_error_estimate(&easy, 8, FUSED_CHUNK_FRAMES);
        assert!(e <= GPU_ERROR_BUDGET, "{e}");
        assert!(fusable(&easy, 4, 64));
        let broken = forms(&[SosCoefs::from(&crate::design::Sos { b: [1.0, 0.0, 0.0], a: [1.0, f64::NAN, 0.5] })]);
        assert!(!fusable(&broken, 8, FUSED_CHUNK_FRAMES));
        assert_eq!(fused_error_estimate(&broken, 8, FUSED_CHUNK_FRAMES), f64::INFINITY);
    }
}
