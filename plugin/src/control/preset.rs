//! Preset export/import as chain files (the shared contract).
//!
//! Export writes everything the plugin does, in signal order, as one chain file that
//! `cargo xtask render` renders identically: the enabled bands (each stage labelled
//! `band N`; a bypassed band's stages written with `"enabled": false`), then the chain
//! stages, then the output gain (labelled `output gain`). Import reverses it: stages
//! labelled `band N` that a band can express set band N (bypassed when the stage is
//! disabled), a `gain` stage labelled `output gain` at the end sets the output gain, and
//! every other stage becomes a chain stage.

use ferrofx::chain::{Biquad, Butterworth, LinkwitzRiley};
use ferrofx::design::{BiquadKind, Cutoff, IirFamily, Response};
use ferrofx::{Chain, Stage, StageKind};

use crate::shared::bands::{Band, Shape, Slope, BANDS};

/// Label of band `index` (0-based) in exported chain files.
pub fn band_label(index: usize) -> String {
    format!("band {}", index + 1)
}

/// Label of the output gain stage.
pub const OUTPUT_GAIN_LABEL: &str = "output gain";

/// The stages band `index` runs, labelled (empty when disabled; disabled stages when
/// bypassed).
pub fn band_stages(index: usize, band: &Band) -> Vec<Stage> {
    if !band.enabled {
        return Vec::new();
    }
    let (f, q, g) = (band.freq_hz, band.q, band.gain_db);
    let order = (band.slope.db_per_oct / 6).max(1) as usize;
    let stages = match band.shape {
        Shape::Peak => vec![Biquad::peaking(f, q, g)],
        Shape::LowShelf => vec![Biquad::low_shelf(f, q, g)],
        Shape::HighShelf => vec![Biquad::high_shelf(f, q, g)],
        Shape::Notch => vec![Biquad::notch(f, q)],
        Shape::BandPass => vec![Biquad::bandpass(f, q)],
        Shape::AllPass => vec![Biquad::allpass(f, q)],
        Shape::TiltShelf => vec![Biquad::low_shelf(f, q, -g / 2.0), Biquad::high_shelf(f, q, g / 2.0)],
        Shape::LowCut if band.slope.linkwitz_riley => vec![LinkwitzRiley::highpass(f, order)],
        Shape::HighCut if band.slope.linkwitz_riley => vec![LinkwitzRiley::lowpass(f, order)],
        Shape::LowCut => vec![Butterworth::highpass(f, order)],
        Shape::HighCut => vec![Butterworth::lowpass(f, order)],
    };
    stages
        .into_iter()
        .map(|s| {
            let s = if band.uses_matched() { s.matched() } else { s };
            let s = s.labelled(band_label(index));
            if band.bypassed {
                s.disabled()
            } else {
                s
            }
        })
        .collect()
}

/// The whole plugin as one chain file: bands, chain stages, output gain. Bands are
/// written as clamped for `fs` (what actually runs at that rate).
///
/// Refused (with a message naming the band) when a band acts on one channel, mid or
/// side: a chain file applies every stage to every channel, so it cannot say that, and
/// a file that played differently from the plugin would be worse than none.
pub fn export(bands: &[Band; BANDS], stages: &Chain, output_gain_db: f64, fs: f64) -> Result<Chain, String> {
    if let Some((i, b)) = bands.iter().enumerate().find(|(_, b)| b.enabled && b.route != crate::shared::bands::Route::Stereo) {
        let on = crate::control::params::RouteChoice::from_route(b.route).name().to_lowercase();
        return Err(format!(
            "band {} acts on the {on} signal only, and a chain file applies every stage to every channel: \
             set the band's channels to Stereo to save it as a chain file (the session itself keeps the routing)",
            i + 1
        ));
    }
    let mut chain = Chain::new();
    for (i, band) in bands.iter().enumerate() {
        // Parameter values as the user reads them (their shortest decimals), not the
        // binary expansion of an f32.
        let short = |v: f64| if v.is_finite() { crate::control::params::decimal(v as f32) } else { v };
        let band = Band { freq_hz: short(band.freq_hz), gain_db: short(band.gain_db), q: short(band.q), ..*band };
        for stage in band_stages(i, &band.clamped(fs)) {
            chain.push(stage);
        }
    }
    for stage in &stages.stages {
        chain.push(stage.clone());
    }
    if output_gain_db != 0.0 {
        chain.push(Stage::gain(output_gain_db).labelled(OUTPUT_GAIN_LABEL));
    }
    Ok(chain)
}

/// The settings of `params` that change the sound and that a chain file cannot say
/// (each named), so an export to one would play differently from the plugin: dynamic
/// bands, linear phase, auto gain, delta listen, bypass. (Routed bands are refused by
/// [`export`] itself; the backend settings do not change the sound.) Empty when the
/// chain file would be the plugin's whole sound.
pub fn unsaid_in_a_chain_file(params: &crate::control::params::FerroParams) -> Vec<String> {
    use crate::control::params::{AutoGainChoice, PhaseChoice};
    let mut unsaid = Vec::new();
    for (i, bp) in params.bands.iter().enumerate() {
        if bp.enabled.value() && bp.dyn_on.value() {
            unsaid.push(format!("band {} is dynamic", i + 1));
        }
    }
    if params.phase.value() != PhaseChoice::Natural {
        unsaid.push(format!("the phase mode is {}", params.phase.value().name()));
    }
    if params.auto_gain.value() != AutoGainChoice::Off {
        unsaid.push(String::from("auto gain is on"));
    }
    if params.delta.value() {
        unsaid.push(String::from("delta listen is on"));
    }
    if params.bypass.value() {
        unsaid.push(String::from("the plugin is bypassed"));
    }
    unsaid
}

/// What a chain file sets when imported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// Bands the file sets (others are disabled on import).
    pub bands: Vec<(usize, Band)>,
    /// The remaining stages.
    pub stages: Chain,
    /// The output gain, if the file sets it.
    pub output_gain_db: Option<f64>,
    /// The analog-matched switch the bands ask for: on when any band stage of the file
    /// is matched, off when band stages are all cookbook ones, `None` without bands.
    pub matched: Option<bool>,
}

fn band_index(label: Option<&str>) -> Option<usize> {
    let n: usize = label?.strip_prefix("band ")?.trim().parse().ok()?;
    (1..=BANDS).contains(&n).then(|| n - 1)
}

/// One stage as a band, if a band can express it.
fn stage_band(stage: &Stage) -> Option<Band> {
    let mut band = Band { enabled: true, ..Band::default() };
    match &stage.kind {
        StageKind::Biquad { kind, freq_hz, q, gain_db, .. } => {
            band.freq_hz = *freq_hz;
            band.q = *q;
            band.gain_db = gain_db.unwrap_or(0.0);
            band.shape = match kind {
                BiquadKind::Peaking => Shape::Peak,
                BiquadKind::LowShelf => Shape::LowShelf,
                BiquadKind::HighShelf => Shape::HighShelf,
                BiquadKind::Notch => Shape::Notch,
                BiquadKind::Bandpass => Shape::BandPass,
                BiquadKind::Allpass => Shape::AllPass,
                _ => return None,
            };
        }
        StageKind::Iir { family: IirFamily::Butterworth, response, order, cutoff: Cutoff::Single(f), .. } if *order <= 16 => {
            band.freq_hz = *f;
            band.shape = cut_shape(*response)?;
            band.slope = Slope { db_per_oct: *order as u32 * 6, linkwitz_riley: false };
        }
        StageKind::LinkwitzRiley { response, order, cutoff_hz, .. } if *order <= 16 => {
            band.freq_hz = *cutoff_hz;
            band.shape = cut_shape(*response)?;
            band.slope = Slope { db_per_oct: *order as u32 * 6, linkwitz_riley: true };
        }
        _ => return None,
    }
    Some(band)
}

fn cut_shape(response: Response) -> Option<Shape> {
    match response {
        Response::Highpass => Some(Shape::LowCut),
        Response::Lowpass => Some(Shape::HighCut),
        _ => None,
    }
}

/// Splits a chain file into bands, chain stages and output gain (see the module docs).
pub fn import(chain: &Chain) -> Imported {
    let mut out = Imported::default();
    let stages = &chain.stages;
    let mut i = 0;
    while i < stages.len() {
        let stage = &stages[i];
        let index = band_index(stage.label.as_deref());
        let taken = index.filter(|n| out.bands.iter().all(|(m, _)| m != n)).and_then(|n| {
            // A tilt shelf is a low shelf and a high shelf of opposite gains, same label.
            if let (Some(next), StageKind::Biquad { kind: BiquadKind::LowShelf, freq_hz, q, gain_db: Some(g), .. }) =
                (stages.get(i + 1), &stage.kind)
            {
                if let StageKind::Biquad { kind: BiquadKind::HighShelf, freq_hz: f2, q: q2, gain_db: Some(g2), .. } = &next.kind {
                    if next.label == stage.label && next.enabled == stage.enabled && f2 == freq_hz && q2 == q && *g2 == -*g {
                        let band = Band {
                            enabled: true,
                            bypassed: !stage.enabled,
                            shape: Shape::TiltShelf,
                            freq_hz: *freq_hz,
                            q: *q,
                            gain_db: 2.0 * g2,
                            ..Band::default()
                        };
                        return Some((n, band, 2));
                    }
                }
            }
            stage_band(stage).map(|b| (n, Band { bypassed: !stage.enabled, ..b }, 1))
        });
        match taken {
            Some((n, band, used)) => {
                let matched = stage.kind.is_matched();
                out.matched = Some(out.matched.unwrap_or(false) || matched);
                out.bands.push((n, band));
                i += used;
            }
            None => {
                let is_last = i + 1 == stages.len();
                match (&stage.kind, stage.label.as_deref()) {
                    (StageKind::Gain { gain_db }, Some(OUTPUT_GAIN_LABEL)) if is_last && stage.enabled => {
                        out.output_gain_db = Some(*gain_db);
                    }
                    _ => out.stages.push(stage.clone()),
                }
                i += 1;
            }
        }
    }
    out
}
