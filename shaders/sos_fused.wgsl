// The fused cascade scan in WGSL (FerroFX, src/gpu/wgpu/fused.rs): the design of CUDA's
// kernels/sos_fused.cu, whose header and src/gpu/fused.rs describe it. A group of up to
// 8 sections of a float32 cascade runs as one linear system with a 16-number state (the
// sections' states side by side, zero past the group's); a block is cut into chunks of
// `chunk_len` samples, 256 chunks to a tile (one workgroup, one invocation per chunk).
// Three entry points, dispatched in order:
// - ends_main (tiles x channels workgroups of 256): each chunk through the group from a
//   zero state, then a Hillis-Steele scan of the end states across the tile with the
//   tables M^(L 2^k) - I; each chunk's scanned state (its prefix) into `prefix`;
// - carry_main (channels workgroups of 16, one per state row): the tiles' true start
//   states one after another from the block's state, into `carry`;
// - run_main (tiles x channels workgroups of 256): each chunk's true start state from its
//   tile's and the prefix before it, then the chunk through the group again, in place;
//   the channel's last chunk leaves the sections' states.
// Unlike the CUDA kernels the chunks' samples are read directly, not staged through
// workgroup memory (the end states take the 16 KiB every adapter offers). The operation
// order is the CPU model's (fused.rs's model_fused); an adapter that fuses fma rounds as
// it does, one that does not (lavapipe) lands within a few float32 rounding steps.

struct Section {
    delta: vec4<f32>, // A - I, row-major
    bc: vec4<f32>,    // b0, b1, c0, c1
    d: vec4<f32>,     // d, unused x3
}

struct Params {
    frames: u32,
    chunk_len: u32,
    chunks: u32,       // per channel: ceil(frames / chunk_len)
    tiles: u32,        // per channel: ceil(chunks / 256)
    stride: u32,       // planar channel stride of `work`
    first: u32,        // the group's first section in `sections`
    count: u32,        // sections in the group, 1..8
    state_base: u32,   // the group's first section's state for channel 0
    state_stride: u32, // states per channel (the whole cascade's sections)
    table_base: u32,   // the group's tables in `tables` (floats)
    channels: u32,
    _pad: u32,
}

const W: u32 = 16u;
const TILE: u32 = 256u;
const STEPS: u32 = 9u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> work: array<f32>;
@group(0) @binding(2) var<storage, read> sections: array<Section>;
@group(0) @binding(3) var<storage, read> tables: array<f32>;
@group(0) @binding(4) var<storage, read_write> states: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> prefix: array<f32>;
@group(0) @binding(6) var<storage, read_write> carry: array<f32>;

var<workgroup> ends: array<array<f32, 16>, 256>;
var<workgroup> rows: array<f32, 16>;

// v + (T - I) v, the table at `t`: per row the first product, then fma in column order,
// then the add.
fn advance(t: u32, v_in: array<f32, 16>) -> array<f32, 16> {
    var v = v_in;
    var r: array<f32, 16>;
    for (var i = 0u; i < W; i++) {
        let row = t + i * W;
        var acc = tables[row] * v[0];
        for (var k = 1u; k < W; k++) {
            acc = fma(tables[row + k], v[k], acc);
        }
        r[i] = v[i] + acc;
    }
    return r;
}

// The group's sections, read once per invocation (not once per sample).
fn load_group() -> array<Section, 8> {
    var secs: array<Section, 8>;
    for (var i = 0u; i < 8u; i++) {
        if (i < p.count) {
            secs[i] = sections[p.first + i];
        }
    }
    return secs;
}

// One sample through the group from state s (each section's output the next one's input).
fn group_step(secs: ptr<function, array<Section, 8>>, s: ptr<function, array<f32, 16>>, x: f32) -> f32 {
    var u = x;
    for (var i = 0u; i < 8u; i++) {
        if (i < p.count) {
            let sec = (*secs)[i];
            let sx = (*s)[2u * i];
            let sy = (*s)[2u * i + 1u];
            let y = fma(sec.bc.z, sx, fma(sec.bc.w, sy, sec.d.x * u));
            let i0 = fma(sec.delta.x, sx, fma(sec.delta.y, sy, sec.bc.x * u));
            let i1 = fma(sec.delta.z, sx, fma(sec.delta.w, sy, sec.bc.y * u));
            (*s)[2u * i] = sx + i0;
            (*s)[2u * i + 1u] = sy + i1;
            u = y;
        }
    }
    return u;
}

fn prefix_at(ch: u32, i: u32, c: u32) -> u32 {
    return (ch * W + i) * p.chunks + c;
}

@compute @workgroup_size(256)
fn ends_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.x;
    let ch = wg.y;
    let j = lid.x;
    let c0 = t * TILE;
    let tile_frames = min(p.frames - c0 * p.chunk_len, TILE * p.chunk_len);
    let tile_chunks = (tile_frames + p.chunk_len - 1u) / p.chunk_len;
    let base = ch * p.stride + c0 * p.chunk_len;
    let start = min(j * p.chunk_len, tile_frames);
    let end = min(start + p.chunk_len, tile_frames);
    var secs = load_group();
    var s: array<f32, 16>;
    for (var n = start; n < end; n++) {
        _ = group_step(&secs, &s, work[base + n]);
    }
    ends[j] = s;
    workgroupBarrier();
    var offset = 1u;
    var k = 0u;
    loop {
        if (k + 1u >= STEPS || offset >= tile_chunks) {
            break;
        }
        var v = ends[j];
        if (j >= offset) {
            let carried = advance(p.table_base + k * W * W, ends[j - offset]);
            for (var i = 0u; i < W; i++) {
                v[i] = v[i] + carried[i];
            }
        }
        workgroupBarrier();
        ends[j] = v;
        workgroupBarrier();
        offset = offset * 2u;
        k = k + 1u;
    }
    if (j < tile_chunks) {
        for (var i = 0u; i < W; i++) {
            prefix[prefix_at(ch, i, c0 + j)] = ends[j][i];
        }
    }
}

@compute @workgroup_size(16)
fn carry_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let ch = wg.x;
    let i = lid.x;
    let sec = i / 2u;
    var init = 0.0;
    if (sec < p.count) {
        let st = states[p.state_base + ch * p.state_stride + sec];
        init = select(st.x, st.y, (i & 1u) == 1u);
    }
    rows[i] = init;
    workgroupBarrier();
    let row = p.table_base + (STEPS - 1u) * W * W + i * W;
    for (var t = 0u; t < p.tiles; t++) {
        carry[(ch * p.tiles + t) * W + i] = rows[i];
        if (t + 1u < p.tiles) {
            var acc = tables[row] * rows[0];
            for (var k = 1u; k < W; k++) {
                acc = fma(tables[row + k], rows[k], acc);
            }
            let next = prefix[prefix_at(ch, i, t * TILE + TILE - 1u)] + (rows[i] + acc);
            workgroupBarrier();
            rows[i] = next;
            workgroupBarrier();
        }
    }
}

@compute @workgroup_size(256)
fn run_main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.x;
    let ch = wg.y;
    let j = lid.x;
    let c0 = t * TILE;
    let c = c0 + j;
    let tile_frames = min(p.frames - c0 * p.chunk_len, TILE * p.chunk_len);
    let base = ch * p.stride + c0 * p.chunk_len;
    let start = min(j * p.chunk_len, tile_frames);
    let end = min(start + p.chunk_len, tile_frames);
    var s: array<f32, 16>;
    for (var i = 0u; i < W; i++) {
        s[i] = carry[(ch * p.tiles + t) * W + i];
    }
    for (var k = 0u; k + 1u < STEPS; k++) {
        if (((j >> k) & 1u) == 1u) {
            s = advance(p.table_base + k * W * W, s);
        }
    }
    if (j > 0u && c <= p.chunks) {
        for (var i = 0u; i < W; i++) {
            s[i] = prefix[prefix_at(ch, i, c - 1u)] + s[i];
        }
    }
    var secs = load_group();
    for (var n = start; n < end; n++) {
        work[base + n] = group_step(&secs, &s, work[base + n]);
    }
    if (c + 1u == p.chunks) {
        for (var i = 0u; i < p.count; i++) {
            states[p.state_base + ch * p.state_stride + i] = vec2<f32>(s[2u * i], s[2u * i + 1u]);
        }
    }
}
