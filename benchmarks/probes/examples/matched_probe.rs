//! Time per analog-matched design (`design::matched::biquad_matched`): the plugin's
//! automated case, bells at 24 frequencies from 40 Hz to 16 kHz with gains stepping
//! through +-12 dB, Q 1, 48 kHz, and shelves; median and fastest microseconds per design
//! over 5 batches, one thread. Prints one line per shape, and a checksum of the designs
//! (equal before and after a change that must keep the bits). Then the sections the
//! plugin benchmark's 24 bells design to (Q 0.707, +-3 dB, 40 Hz to 16 kHz) at 44.1, 48
//! and 96 kHz.
//!
//!     cargo run --release -p ferrofx-probes --example matched_probe
use ferrofx::design::matched::{biquad_matched, biquad_matched_into};
use ferrofx::design::rbj::BiquadKind;
use std::time::Instant;

fn main() {
    let fs = 48_000.0;
    for (name, kind) in [("bell", BiquadKind::Peaking), ("low shelf", BiquadKind::LowShelf), ("notch", BiquadKind::Notch)] {
        let mut batches = Vec::new();
        let mut checksum = 0u64;
        for _ in 0..5 {
            let t = Instant::now();
            let mut n = 0;
            for step in 0..40 {
                for band in 0..24 {
                    let f = 40.0 * (16_000.0f64 / 40.0).powf(band as f64 / 23.0);
                    let gain_db = -12.0 + 24.0 * ((step * 7 + band * 3) % 40) as f64 / 39.0;
                    let sos = std::hint::black_box(biquad_matched(kind, f, 1.0, gain_db, fs));
                    for s in &sos {
                        for v in s.b.iter().chain(&s.a) {
                            checksum = (checksum ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3);
                        }
                    }
                    n += 1;
                }
            }
            batches.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
        batches.sort_by(f64::total_cmp);
        println!("{name}: median {:.1} us, fastest {:.1} us per design (checksum {checksum:016x})", batches[2], batches[0]);
    }
    for fs in [44_100.0, 48_000.0, 96_000.0] {
        let sections: usize = (0..24)
            .map(|band| {
                let f = 40.0 * (16_000.0f64 / 40.0).powf(band as f64 / 23.0);
                let gain_db = if band % 2 == 0 { 3.0 } else { -3.0 };
                let mut out = [ferrofx::design::Sos::IDENTITY; 2];
                biquad_matched_into(BiquadKind::Peaking, f, std::f64::consts::FRAC_1_SQRT_2, gain_db, fs, &mut out)
            })
            .sum();
        println!("the benchmark's 24 bells at {fs} Hz: {sections} sections");
    }
}
