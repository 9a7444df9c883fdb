//! Automation torture on the equaliser alone, with a fair reference: the largest steps of
//! the modulated output against the output of an equaliser frozen at the settings the
//! modulated one was actually running (smoothed values) at that moment. Two measures:
//! steps relative to the signal's RMS (which also counts short bright bursts that the
//! automation opens) and steps relative to the RMS of the steps around them (the host
//! test's click measure). `ONLY=k` keeps shape `k` on six bands, `QMAX` caps Q, `DUMP`
//! writes the output as raw f32.
use ferrofx_plugin::shared::bands::{Band, Shape, Slope, BANDS};
use ferrofx_plugin::audio::equaliser::{Equaliser, REDESIGN_INTERVAL};

/// Low-passed noise (one pole at 1 kHz), as the host tests' torture uses.
fn noise(frames: usize, seed: u64) -> Vec<f32> {
    let a = (-2.0 * std::f64::consts::PI * 1000.0 / 48_000.0f64).exp();
    let mut y = 0.0f64;
    ferrofx_testkit::noise_amp(frames, seed, 1.0)
        .into_iter()
        .map(|x| {
            y = a * y + (1.0 - a) * f64::from(x) * 4.0;
            y as f32
        })
        .collect()
}

fn main() {
    let fs = 48_000.0;
    let frames = (10.0 * fs) as usize;
    let block = 64;
    let x = noise(frames, 71);
    let mut eq = Equaliser::new(fs, 1, block);
    let mut rng = ferrofx_testkit::Rng::new(0x1234_5678_9abc_def0);
    let mut next = move || rng.unit();
    let shapes = [Shape::Peak, Shape::LowShelf, Shape::HighShelf, Shape::LowCut, Shape::HighCut, Shape::Notch, Shape::BandPass, Shape::AllPass, Shape::TiltShelf];
    let only: Option<usize> = std::env::var("ONLY").ok().and_then(|v| v.parse().ok());
    let qmax: f64 = std::env::var("QMAX").ok().and_then(|v| v.parse().ok()).unwrap_or(18.0);
    let mut bands = [Band::default(); BANDS];
    let mut y = Vec::with_capacity(frames);
    let mut snaps: Vec<[Band; BANDS]> = Vec::new();
    let mut start = 0;
    while start < frames {
        let t = start as f64 / fs;
        for (i, b) in bands.iter_mut().enumerate() {
            let ph = |k: usize| 0.5 + 0.5 * (2.0 * std::f64::consts::PI * (0.1 + 0.37 * ((i * 7 + k) % 13) as f64) * t + (i + k) as f64).sin();
            b.freq_hz = 20.0 * 1000f64.powf(ph(0));
            b.gain_db = -24.0 + 48.0 * ph(1);
            b.q = 0.1 * (qmax / 0.1f64).powf(ph(2));
            if next() < 2.0 * block as f64 / fs { b.freq_hz = 20.0 * 1000f64.powf(next()); }
            if next() < 2.0 * block as f64 / fs { b.shape = shapes[(next() * 9.0) as usize % 9]; }
            if next() < 2.0 * block as f64 / fs { b.enabled = next() < 0.5; }
            if next() < 2.0 * block as f64 / fs { b.slope = Slope { db_per_oct: 6 * (1 + (next() * 16.0) as u32).min(16), linkwitz_riley: next() < 0.5 }; }
            if let Some(o) = only { b.shape = shapes[o]; b.enabled = i < 6; }
            eq.set_band(i, *b);
        }
        let mut buf = x[start..start + block].to_vec();
        for j in (0..block).step_by(REDESIGN_INTERVAL) {
            eq.process(&mut [&mut buf[j..j + REDESIGN_INTERVAL]]);
            snaps.push(eq.running_bands());
        }
        y.extend_from_slice(&buf);
        start += block;
    }
    // Click measure: the largest step in each 10 ms relative to the RMS over the 50 ms
    // around it; the worst over the run.
    let measure = |y: &[f32]| -> (f64, usize) {
        let w = 480;
        let mut worst = (0.0, 0);
        let mut k = 1200;
        while k + 1200 < y.len() {
            let step = y[k..k + w].windows(2).map(|p| (p[1] - p[0]).abs()).fold(0.0f32, f32::max) as f64;
            let rms = (y[k - 960..k + 1440].iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / 2400.0).sqrt();
            let floor: f64 = std::env::var("FLOOR").ok().and_then(|v| v.parse().ok()).unwrap_or(1e-4);
            let rms = rms.max(floor);
            if rms > 1e-6 {
                let r = step / rms;
                if r > worst.0 { worst = (r, k); }
            }
            k += w;
        }
        worst
    };
    // Step measure: the largest step in each 10 ms relative to the RMS of the steps over
    // the 20 ms around it.
    let dx_rms = (x.windows(2).map(|p| ((p[1] - p[0]) as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
    let step_measure = |y: &[f32]| -> (f64, usize) {
        let w = 480;
        let mut worst = (0.0, 0);
        let mut k = 1200;
        while k + 1200 < y.len() {
            let d: Vec<f64> = y[k - 240..k + w + 240].windows(2).map(|p| (p[1] - p[0]).abs() as f64).collect();
            let step = d[240..240 + w].iter().fold(0.0f64, |m, v| m.max(*v));
            let rms = (d.iter().map(|v| v * v).sum::<f64>() / d.len() as f64).sqrt().max(1e-3 * dx_rms);
            let r = step / rms;
            if r > worst.0 { worst = (r, k); }
            k += w;
        }
        worst
    };
    let (sm, sat) = step_measure(&y);
    if let Ok(path) = std::env::var("DUMP") {
        std::fs::write(path, y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    }
    let mut frozen_sm: f64 = 0.0;
    let (m, at) = measure(&y);
    let peak = y.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let mut frozen_worst: f64 = 0.0;
    let mut frozen_step: f32 = 0.0;
    let mod_step = y.windows(2).map(|p| (p[1] - p[0]).abs()).fold(0.0f32, f32::max);
    let instants: usize = std::env::var("INSTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    for j in 1..=instants {
        let idx = (j * snaps.len() / (instants + 1)).max(24_000 / REDESIGN_INTERVAL + 1);
        let n = idx * REDESIGN_INTERVAL;
        let mut fr = Equaliser::new(fs, 1, 4096);
        for (i, b) in snaps[idx].iter().enumerate() { fr.set_band(i, *b); }
        fr.snap();
        let from = n.saturating_sub(24_000);
        let mut seg = x[from..n].to_vec();
        for c in seg.chunks_mut(4096) { fr.process(&mut [c]); }
        let (r, _) = measure(&seg[12_000..]);
        frozen_step = frozen_step.max(seg[12_000..].windows(2).map(|p| (p[1] - p[0]).abs()).fold(0.0f32, f32::max));
        frozen_worst = frozen_worst.max(r);
        frozen_sm = frozen_sm.max(step_measure(&seg[12_000..]).0);
    }
    let i0 = at / REDESIGN_INTERVAL;
    for k in [i0 - 60, i0 - 30, i0, i0 + 15] {
        let d: Vec<String> = snaps[k].iter().enumerate().filter(|(_, b)| b.enabled).map(|(i, b)| format!("{i}:{:?}/{:.0}Hz/{:.0}dB/q{:.1}", b.shape, b.freq_hz, b.gain_db, b.q)).collect();
        println!("t={:.4}: {}", (k * REDESIGN_INTERVAL) as f64 / fs, d.join(" "));
    }
    let env: Vec<String> = (0..12).map(|j| { let a = at - 2400 + j * 480; format!("{:.1}", y[a..a+480].iter().fold(0.0f32, |m, v| m.max(v.abs()))) }).collect();
    println!("envelope (10 ms from -50 ms): {}", env.join(" "));
    println!("max step: modulated {mod_step:.3e}, frozen {frozen_step:.3e}, ratio {:.2}", mod_step / frozen_step);
    println!("peak {peak:.1}; modulated click measure {m:.2} at {:.3} s; frozen settings (40 instants) up to {frozen_worst:.2}", at as f64 / fs);
    println!("step measure: modulated {sm:.2} at {:.3} s; frozen up to {frozen_sm:.2}", sat as f64 / fs);
}
