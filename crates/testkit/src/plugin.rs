//! What the plugin's CLAP and VST3 host tests of the dynamic bands share: the band's
//! settings and the sidechain cases (each host converts the settings to its own
//! parameter values).

/// One setting, in the unit it is given in.
#[derive(Clone, Copy)]
pub enum Setting {
    /// Enum index or bool (0/1).
    Index(f64),
    Hz(f32),
    Db(f32),
    Q(f32),
    /// A dynamics setting in its own unit (dB, ratio, ms): the host converts it through
    /// the plugin's range for that parameter.
    Dynamics(f32),
}

/// Band 3: a 0 dB bell at 1 kHz, dynamic (threshold -30 dB, ratio 4, range 12 dB, attack
/// 5 ms, release 50 ms), its detector on the sidechain when `sidechain` is 1.
pub fn dynamic_band(sidechain: f64) -> Vec<(String, Setting)> {
    let band = |what: &str, v: Setting| (format!("Band 3 {what}"), v);
    vec![
        band("On", Setting::Index(1.0)),
        band("Shape", Setting::Index(0.0)), // Peak
        band("Frequency", Setting::Hz(1000.0)),
        band("Gain", Setting::Db(0.0)),
        band("Q", Setting::Q(1.0)),
        band("Dynamic", Setting::Index(1.0)),
        band("Threshold", Setting::Dynamics(-30.0)),
        band("Ratio", Setting::Dynamics(4.0)),
        band("Range", Setting::Dynamics(12.0)),
        band("Attack", Setting::Dynamics(5.0)),
        band("Release", Setting::Dynamics(50.0)),
        band("Sidechain", Setting::Index(sidechain)),
    ]
}

/// (main level dB, sidechain level dB, band listens to the sidechain, expected band gain
/// dB): a loud sidechain takes a quiet main signal down by the range, a silent one leaves
/// a loud main alone, and a band on its own input takes the loud main down.
pub const SIDECHAIN_CASES: [(f64, f64, f64, f64); 3] = [(-45.0, -10.0, 1.0, -12.0), (-10.0, -90.0, 1.0, 0.0), (-10.0, -90.0, 0.0, -12.0)];

/// Half a second of a 1 kHz sine peaking at `level_db`.
pub fn tone(level_db: f64, fs: f64) -> Vec<f32> {
    crate::tone(level_db, 1000.0, 0.5, fs)
}

/// The peak level in dB of the sine in the last 0.1 s (at 48 kHz) of `y`.
pub fn tail_level_db(y: &[f32]) -> f64 {
    crate::tail_sine_level_db(y, 4800)
}
