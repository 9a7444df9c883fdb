
// Shared by fir.wgsl and fft_fir.wgsl (appended to each by src/gpu/wgpu_backend.rs): input
// sample u of channel ch, u in [-(taps-1), frames): this block from `work`, earlier
// samples from the channel's history (the last taps-1 inputs, oldest first); zero outside.
fn input_at(ch: u32, u: i32) -> f32 {
    let hist_len = i32(p.taps) - 1;
    if (u >= i32(p.frames) || u < -hist_len) {
        return 0.0;
    }
    if (u >= 0) {
        return work[ch * p.stride + u32(u)];
    }
    return history[p.hist_base + ch * u32(hist_len) + u32(hist_len + u)];
}
