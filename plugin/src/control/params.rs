//! The plugin's parameters. IDs are part of every saved session and automation lane:
//! they never change once released. Band parameters are generated from the field IDs
//! below with the band number appended (`freq_1` .. `freq_24`).

use crate::control::linear::FirMode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nice_plug::prelude::*;

use crate::shared::bands::{self, Band, Route, Shape, Slope, BANDS};
use crate::control::chain_file::ChainFile;

/// The 24 bands, output gain, bypass, backend choice, and the persisted chain file.
#[derive(Params)]
pub struct FerroParams {
    #[nested(array, group = "Band")]
    pub bands: [BandParams; BANDS],

    /// Output gain in dB (smoothed per sample).
    #[id = "out_gain"]
    pub output_gain_db: FloatParam,

    /// Analog-matched bands (bells, shelves, tilt, notch, band-pass follow their analog
    /// prototype up to Nyquist) instead of the cookbook's bilinear ones. On for new
    /// instances; sessions saved before it existed load with it off (see `lib.rs`), so
    /// they sound as they did.
    #[id = "matched"]
    pub matched: BoolParam,

    /// Natural phase (the bands as IIR filters, no latency) or linear phase (the bands'
    /// magnitude as one FIR of 4,096, 16,384 or 65,536 taps, half of it as latency; see
    /// `control/linear.rs`). It switches while playing where the plugin format lets the
    /// latency change (VST3), and by a restart of the plugin on CLAP unless the latency
    /// reserve covers it (`latency_reserve`).
    #[id = "phase"]
    pub phase: EnumParam<PhaseChoice>,

    /// Latency kept in reserve so the phase mode switches without a restart on every
    /// format (see [`ReserveChoice`]); it takes effect at the plugin's (re)activation.
    #[id = "latency_reserve"]
    pub latency_reserve: EnumParam<ReserveChoice>,

    /// Output gain that keeps loudness constant as the bands change (see `audio/autogain.rs`).
    #[id = "auto_gain"]
    pub auto_gain: EnumParam<AutoGainChoice>,

    /// Listen to what the bands and chain change: the processed signal minus the input.
    #[id = "delta"]
    pub delta: BoolParam,

    /// Hosts look for this flag; crossfaded over `audio::state::BYPASS_FADE_MS`.
    #[id = "bypass"]
    pub bypass: BoolParam,

    /// Where the filter runs.
    #[id = "backend"]
    pub backend: EnumParam<BackendChoice>,

    /// Smallest host block the GPU path would take.
    #[id = "gpu_min_block"]
    pub gpu_min_block: IntParam,

    /// The chain-file stages that bands can't express (elliptic designs, given FIRs...),
    /// kept in the session as a chain file (the shared contract).
    #[persist = "chain"]
    pub chain: ChainFile,

    /// The band the editor listens to (not a host parameter, not saved; see `audio/solo.rs`).
    pub solo: crate::shared::settings::SoloControl,

    /// The editor window's size, kept with the session (`editor_size.rs`).
    #[persist = "editor-size"]
    pub editor_size: super::editor_size::EditorSize,

    /// Set whenever a band parameter or the analog-matched switch changes (their
    /// callbacks; every change, from the host, the editor or a state load, goes through
    /// them); the audio thread takes it to rebuild the band settings only then, instead
    /// of reading some 400 parameters every block.
    pub bands_changed: Arc<AtomicBool>,
}

/// One band.
#[derive(Params)]
pub struct BandParams {
    #[id = "on"]
    pub enabled: BoolParam,
    #[id = "shape"]
    pub shape: EnumParam<ShapeChoice>,
    #[id = "freq"]
    pub freq_hz: FloatParam,
    #[id = "gain"]
    pub gain_db: FloatParam,
    #[id = "q"]
    pub q: FloatParam,
    /// Cut slope in 6 dB/oct steps (1..=16 poles).
    #[id = "slope"]
    pub slope_poles: IntParam,
    /// Cut type: Linkwitz-Riley instead of Butterworth.
    #[id = "lr"]
    pub linkwitz_riley: BoolParam,
    /// The band stays in use (its node shown) but does not act on the signal
    /// (switched with the same short cross-fade as enabling it).
    #[id = "byp"]
    pub bypassed: BoolParam,
    /// The channels the band acts on (stereo layouts; see `audio/routing.rs`).
    #[id = "route"]
    pub route: EnumParam<RouteChoice>,
    /// Dynamic EQ (see `audio/dynamics.rs`): the band's gain follows its detector.
    #[id = "dyn"]
    pub dyn_on: BoolParam,
    #[id = "thr"]
    pub dyn_threshold_db: FloatParam,
    /// Above 1: down above the threshold (compression); below 1: up (upward expansion).
    #[id = "ratio"]
    pub dyn_ratio: FloatParam,
    #[id = "att"]
    pub dyn_attack_ms: FloatParam,
    #[id = "rel"]
    pub dyn_release_ms: FloatParam,
    #[id = "range"]
    pub dyn_range_db: FloatParam,
    /// The detector listens to the sidechain input (the "Stereo with sidechain" layout).
    #[id = "sc"]
    pub dyn_sidechain: BoolParam,
}

/// Band routing as the host sees it (IDs stable).
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteChoice {
    #[id = "stereo"]
    Stereo,
    #[id = "left"]
    Left,
    #[id = "right"]
    Right,
    #[id = "mid"]
    Mid,
    #[id = "side"]
    Side,
}

impl RouteChoice {
    pub const ALL: [RouteChoice; 5] = [RouteChoice::Stereo, RouteChoice::Left, RouteChoice::Right, RouteChoice::Mid, RouteChoice::Side];

    pub fn route(self) -> Route {
        match self {
            RouteChoice::Stereo => Route::Stereo,
            RouteChoice::Left => Route::Left,
            RouteChoice::Right => Route::Right,
            RouteChoice::Mid => Route::Mid,
            RouteChoice::Side => Route::Side,
        }
    }

    pub fn from_route(route: Route) -> RouteChoice {
        match route {
            Route::Stereo => RouteChoice::Stereo,
            Route::Left => RouteChoice::Left,
            Route::Right => RouteChoice::Right,
            Route::Mid => RouteChoice::Mid,
            Route::Side => RouteChoice::Side,
        }
    }

    /// What the editor calls it.
    pub fn name(self) -> &'static str {
        match self {
            RouteChoice::Stereo => "Stereo",
            RouteChoice::Left => "Left",
            RouteChoice::Right => "Right",
            RouteChoice::Mid => "Mid",
            RouteChoice::Side => "Side",
        }
    }
}

/// Band shapes as the host sees them (IDs stable).
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeChoice {
    #[id = "peak"]
    Peak,
    #[id = "low_shelf"]
    #[name = "Low shelf"]
    LowShelf,
    #[id = "high_shelf"]
    #[name = "High shelf"]
    HighShelf,
    #[id = "low_cut"]
    #[name = "Low cut"]
    LowCut,
    #[id = "high_cut"]
    #[name = "High cut"]
    HighCut,
    #[id = "notch"]
    Notch,
    #[id = "band_pass"]
    #[name = "Band pass"]
    BandPass,
    #[id = "all_pass"]
    #[name = "All pass"]
    AllPass,
    #[id = "tilt_shelf"]
    #[name = "Tilt shelf"]
    TiltShelf,
}

impl ShapeChoice {
    pub fn shape(self) -> Shape {
        match self {
            ShapeChoice::Peak => Shape::Peak,
            ShapeChoice::LowShelf => Shape::LowShelf,
            ShapeChoice::HighShelf => Shape::HighShelf,
            ShapeChoice::LowCut => Shape::LowCut,
            ShapeChoice::HighCut => Shape::HighCut,
            ShapeChoice::Notch => Shape::Notch,
            ShapeChoice::BandPass => Shape::BandPass,
            ShapeChoice::AllPass => Shape::AllPass,
            ShapeChoice::TiltShelf => Shape::TiltShelf,
        }
    }

    pub fn from_shape(shape: Shape) -> ShapeChoice {
        match shape {
            Shape::Peak => ShapeChoice::Peak,
            Shape::LowShelf => ShapeChoice::LowShelf,
            Shape::HighShelf => ShapeChoice::HighShelf,
            Shape::LowCut => ShapeChoice::LowCut,
            Shape::HighCut => ShapeChoice::HighCut,
            Shape::Notch => ShapeChoice::Notch,
            Shape::BandPass => ShapeChoice::BandPass,
            Shape::AllPass => ShapeChoice::AllPass,
            Shape::TiltShelf => ShapeChoice::TiltShelf,
        }
    }
}

/// Phase mode (IDs stable).
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseChoice {
    #[id = "natural"]
    Natural,
    #[id = "linear_4096"]
    #[name = "Linear 4096"]
    Linear4096,
    #[id = "linear_16384"]
    #[name = "Linear 16384"]
    Linear16384,
    #[id = "linear_65536"]
    #[name = "Linear 65536"]
    Linear65536,
    /// (Last, so the earlier choices keep their indices: CLAP hosts automate a discrete
    /// parameter by index.) Natural phase in Pro-Q's and ZL Equalizer's sense: the bands' magnitude and phase
    /// follow their analog prototypes up to 0.9 of Nyquist (the IIR bands followed by a
    /// short correction FIR, `control/linear.rs`), behind a few milliseconds of latency.
    #[id = "analog"]
    #[name = "Analog"]
    Analog,
}

impl PhaseChoice {
    pub const ALL: [PhaseChoice; 5] = [PhaseChoice::Natural, PhaseChoice::Analog, PhaseChoice::Linear4096, PhaseChoice::Linear16384, PhaseChoice::Linear65536];

    /// The mode's FIR (`None`: natural phase, no FIR).
    pub fn fir_mode(self) -> Option<FirMode> {
        match self {
            PhaseChoice::Natural => None,
            PhaseChoice::Analog => Some(FirMode::Analog),
            PhaseChoice::Linear4096 => Some(FirMode::Linear { taps: 4096 }),
            PhaseChoice::Linear16384 => Some(FirMode::Linear { taps: 16_384 }),
            PhaseChoice::Linear65536 => Some(FirMode::Linear { taps: 65_536 }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PhaseChoice::Natural => "Natural",
            PhaseChoice::Analog => "Analog",
            PhaseChoice::Linear4096 => "Linear 4096",
            PhaseChoice::Linear16384 => "Linear 16384",
            PhaseChoice::Linear65536 => "Linear 65536",
        }
    }
}

/// Latency held in reserve for the linear phase modes (IDs stable): the plugin reports
/// this much latency from activation on (or its phase mode's, if more), the shorter modes
/// delayed to it, so the phase mode can switch within it while playing with the latency
/// unchanged, on every plugin format (CLAP lets the latency change only when the host
/// restarts the plugin). `None`: the least latency; a mode that needs more waits for a
/// restart on CLAP.
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReserveChoice {
    #[id = "none"]
    None,
    #[id = "linear_4096"]
    #[name = "Linear 4096"]
    Linear4096,
    #[id = "linear_16384"]
    #[name = "Linear 16384"]
    Linear16384,
    #[id = "linear_65536"]
    #[name = "Linear 65536"]
    Linear65536,
}

impl ReserveChoice {
    pub const ALL: [ReserveChoice; 4] = [ReserveChoice::None, ReserveChoice::Linear4096, ReserveChoice::Linear16384, ReserveChoice::Linear65536];

    /// The latency reserved, in samples (half the FIR's length).
    pub fn latency_samples(self) -> usize {
        match self {
            ReserveChoice::None => 0,
            ReserveChoice::Linear4096 => 2048,
            ReserveChoice::Linear16384 => 8192,
            ReserveChoice::Linear65536 => 32_768,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReserveChoice::None => "None",
            ReserveChoice::Linear4096 => "Linear 4096",
            ReserveChoice::Linear16384 => "Linear 16384",
            ReserveChoice::Linear65536 => "Linear 65536",
        }
    }
}

/// Auto-gain (IDs stable).
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoGainChoice {
    #[id = "off"]
    Off,
    /// Keeps pink noise's power.
    #[id = "pink"]
    Pink,
    /// Keeps pink noise's BS.1770 (K-weighted) loudness.
    #[id = "k_weighted"]
    #[name = "K-weighted"]
    KWeighted,
}

impl AutoGainChoice {
    /// The weighting, or `None` when off.
    pub fn weighting(self) -> Option<crate::shared::settings::Weighting> {
        match self {
            AutoGainChoice::Off => None,
            AutoGainChoice::Pink => Some(crate::shared::settings::Weighting::Pink),
            AutoGainChoice::KWeighted => Some(crate::shared::settings::Weighting::KWeighted),
        }
    }
}

/// Processing backend.
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// The chain stages' blocks go wherever the router measures them cheaper (GPU only
    /// when faster by its margin and its tail fits the deadline); one host block of
    /// latency, like `Gpu`.
    #[id = "auto"]
    Auto,
    /// No latency; everything on the CPU (the default).
    #[id = "cpu"]
    #[name = "CPU"]
    Cpu,
    /// The chain stages' blocks go to the GPU worker (late ones computed on the CPU);
    /// one host block of latency.
    #[id = "gpu"]
    #[name = "GPU"]
    Gpu,
}

impl BackendChoice {
    /// The policy of the GPU path this choice asks for (`None`: the CPU path, no latency).
    pub fn policy(self) -> Option<ferrofx::run::realtime::Policy> {
        use ferrofx::run::realtime::Policy;
        match self {
            BackendChoice::Cpu => None,
            BackendChoice::Auto => Some(Policy::Auto),
            BackendChoice::Gpu => Some(Policy::Gpu),
        }
    }
}

/// Parameter ranges in the units the host and editor show; the editor reuses these.
pub mod ranges {
    use super::*;

    pub fn freq_hz() -> FloatRange {
        let (min, max) = bands::ranges::freq_hz();
        FloatRange::Skewed { min: min as f32, max: max as f32, factor: FloatRange::skew_factor(-2.2) }
    }
    pub fn gain_db() -> FloatRange {
        let (min, max) = bands::ranges::gain_db();
        FloatRange::Linear { min: min as f32, max: max as f32 }
    }
    pub fn q() -> FloatRange {
        let (min, max) = bands::ranges::q();
        FloatRange::Skewed { min: min as f32, max: max as f32, factor: FloatRange::skew_factor(-2.0) }
    }
    /// Slope in poles (6 dB/oct each).
    pub fn slope_poles() -> IntRange {
        let (min, max) = bands::ranges::slope_db_per_oct();
        IntRange::Linear { min: (min / 6) as i32, max: (max / 6) as i32 }
    }
    pub fn output_gain_db() -> FloatRange {
        FloatRange::Linear { min: -36.0, max: 24.0 }
    }
    /// Dynamic EQ threshold (detector level, dB; a full-scale sine is 0 dB).
    pub fn threshold_db() -> FloatRange {
        FloatRange::Linear { min: -60.0, max: 0.0 }
    }
    pub fn ratio() -> FloatRange {
        FloatRange::Skewed { min: 0.25, max: 10.0, factor: FloatRange::skew_factor(-1.5) }
    }
    pub fn attack_ms() -> FloatRange {
        FloatRange::Skewed { min: 0.5, max: 200.0, factor: FloatRange::skew_factor(-2.0) }
    }
    pub fn release_ms() -> FloatRange {
        FloatRange::Skewed { min: 5.0, max: 2000.0, factor: FloatRange::skew_factor(-2.0) }
    }
    pub fn range_db() -> FloatRange {
        FloatRange::Linear { min: 0.0, max: 24.0 }
    }
    pub fn gpu_min_block() -> IntRange {
        IntRange::Linear { min: 64, max: 16384 }
    }
}

/// A parameter's `f32` value as the `f64` of its shortest decimal form (54.768383, not
/// 54.76838302612305): what a user reads and what a preset file stores. Used by the
/// preset export only (never on the audio thread); the difference from the plugin's own
/// value is below half an `f32` step of the parameter.
pub fn decimal(v: f32) -> f64 {
    use std::io::Write;
    // The longest f32 in plain decimal is 40 characters (-3.4028235e38 written out).
    let mut buf = [0u8; 64];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    if write!(cursor, "{v}").is_ok() {
        let n = cursor.position() as usize;
        if let Some(d) = std::str::from_utf8(&buf[..n]).ok().and_then(|s| s.parse().ok()) {
            return d;
        }
    }
    f64::from(v)
}

/// Default frequency of band `index` (0-based): spread log-evenly over the audio range.
pub fn default_freq_hz(index: usize) -> f32 {
    (20.0f64 * 1000f64.powf((index as f64 + 0.5) / BANDS as f64)) as f32
}

/// A parameter callback that sets `changed` (a store, no allocation: it runs on the audio
/// thread when the host automates).
fn changed_callback<T>(changed: &Arc<AtomicBool>) -> Arc<dyn Fn(T) + Send + Sync> {
    let changed = changed.clone();
    Arc::new(move |_| changed.store(true, Ordering::Release))
}

impl BandParams {
    /// Band `index`'s parameters; every change of any of them sets `changed` (see
    /// [`FerroParams::bands_changed`]).
    fn new(index: usize, changed: &Arc<AtomicBool>) -> BandParams {
        let n = index + 1;
        let on_f32 = changed_callback::<f32>(changed);
        let on_bool = changed_callback::<bool>(changed);
        let on_i32 = changed_callback::<i32>(changed);
        let shape = match index {
            0 => ShapeChoice::LowCut,
            i if i == BANDS - 1 => ShapeChoice::HighCut,
            _ => ShapeChoice::Peak,
        };
        BandParams {
            enabled: BoolParam::new(format!("Band {n} On"), false).with_callback(on_bool.clone()),
            shape: EnumParam::new(format!("Band {n} Shape"), shape).with_callback(changed_callback(changed)),
            freq_hz: FloatParam::new(format!("Band {n} Frequency"), default_freq_hz(index), ranges::freq_hz())
                .with_unit(" Hz")
                .with_value_to_string(formatters::v2s_f32_rounded(1))
                .with_callback(on_f32.clone()),
            gain_db: FloatParam::new(format!("Band {n} Gain"), 0.0, ranges::gain_db())
                .with_unit(" dB")
                .with_step_size(0.01)
                .with_callback(on_f32.clone()),
            q: FloatParam::new(format!("Band {n} Q"), std::f32::consts::FRAC_1_SQRT_2, ranges::q())
                .with_value_to_string(formatters::v2s_f32_rounded(2))
                .with_callback(on_f32.clone()),
            slope_poles: IntParam::new(format!("Band {n} Slope"), 4, ranges::slope_poles())
                .with_value_to_string(Arc::new(|poles| format!("{} dB/oct", poles * 6)))
                .with_string_to_value(Arc::new(|s| {
                    let db: f32 = s.trim().trim_end_matches("dB/oct").trim().parse().ok()?;
                    Some((db / 6.0).round() as i32)
                }))
                .with_callback(on_i32),
            linkwitz_riley: BoolParam::new(format!("Band {n} Linkwitz-Riley"), false).with_callback(on_bool.clone()),
            bypassed: BoolParam::new(format!("Band {n} Bypass"), false).with_callback(on_bool.clone()),
            route: EnumParam::new(format!("Band {n} Channels"), RouteChoice::Stereo).with_callback(changed_callback(changed)),
            dyn_on: BoolParam::new(format!("Band {n} Dynamic"), false).with_callback(on_bool.clone()),
            dyn_threshold_db: FloatParam::new(format!("Band {n} Threshold"), -20.0, ranges::threshold_db()).with_unit(" dB").with_step_size(0.1).with_callback(on_f32.clone()),
            dyn_ratio: FloatParam::new(format!("Band {n} Ratio"), 2.0, ranges::ratio()).with_value_to_string(formatters::v2s_f32_rounded(2)).with_callback(on_f32.clone()),
            dyn_attack_ms: FloatParam::new(format!("Band {n} Attack"), 10.0, ranges::attack_ms()).with_unit(" ms").with_value_to_string(formatters::v2s_f32_rounded(1)).with_callback(on_f32.clone()),
            dyn_release_ms: FloatParam::new(format!("Band {n} Release"), 150.0, ranges::release_ms()).with_unit(" ms").with_value_to_string(formatters::v2s_f32_rounded(0)).with_callback(on_f32.clone()),
            dyn_range_db: FloatParam::new(format!("Band {n} Range"), 6.0, ranges::range_db()).with_unit(" dB").with_step_size(0.1).with_callback(on_f32),
            dyn_sidechain: BoolParam::new(format!("Band {n} Sidechain"), false).with_callback(on_bool),
        }
    }

    /// The band's current (unsmoothed) settings; the equaliser smooths them.
    pub fn band(&self) -> Band {
        Band {
            enabled: self.enabled.value(),
            bypassed: self.bypassed.value(),
            shape: self.shape.value().shape(),
            freq_hz: self.freq_hz.value() as f64,
            gain_db: self.gain_db.value() as f64,
            q: self.q.value() as f64,
            slope: Slope {
                db_per_oct: (self.slope_poles.value().max(1) as u32) * 6,
                linkwitz_riley: self.linkwitz_riley.value(),
            },
            route: self.route.value().route(),
            // The instance's switch; see `FerroParams::bands`.
            matched: false,
            dynamic: self.dyn_on.value(),
        }
    }

    /// The band's dynamic settings.
    pub fn dynamics(&self) -> crate::shared::settings::DynamicSettings {
        crate::shared::settings::DynamicSettings {
            on: self.dyn_on.value(),
            threshold_db: f64::from(self.dyn_threshold_db.value()),
            ratio: f64::from(self.dyn_ratio.value()),
            attack_ms: f64::from(self.dyn_attack_ms.value()),
            release_ms: f64::from(self.dyn_release_ms.value()),
            range_db: f64::from(self.dyn_range_db.value()),
            sidechain: self.dyn_sidechain.value(),
        }
    }
}

impl Default for FerroParams {
    fn default() -> FerroParams {
        let bands_changed = Arc::new(AtomicBool::new(true));
        FerroParams {
            bands: std::array::from_fn(|i| BandParams::new(i, &bands_changed)),
            output_gain_db: FloatParam::new("Output Gain", 0.0, ranges::output_gain_db())
                .with_unit(" dB")
                .with_step_size(0.01)
                .with_smoother(SmoothingStyle::Linear(20.0)),
            matched: BoolParam::new("Analog-Matched Bands", true).with_callback(changed_callback(&bands_changed)),
            phase: EnumParam::new("Phase", PhaseChoice::Natural),
            latency_reserve: EnumParam::new("Latency Reserve", ReserveChoice::None).non_automatable(),
            auto_gain: EnumParam::new("Auto Gain", AutoGainChoice::Off),
            delta: BoolParam::new("Delta Listen", false),
            bypass: BoolParam::new("Bypass", false)
                .with_value_to_string(formatters::v2s_bool_bypass())
                .with_string_to_value(formatters::s2v_bool_bypass())
                .make_bypass(),
            backend: EnumParam::new("Backend", BackendChoice::Cpu),
            gpu_min_block: IntParam::new("GPU Min Block", 1024, ranges::gpu_min_block()).with_unit(" frames"),
            chain: ChainFile::default(),
            solo: Default::default(),
            editor_size: Default::default(),
            bands_changed,
        }
    }
}

impl FerroParams {
    /// Every band's dynamic settings.
    pub fn dynamics(&self) -> [crate::shared::settings::DynamicSettings; BANDS] {
        std::array::from_fn(|i| self.bands[i].dynamics())
    }

    /// Every band's settings (with the instance's analog-matched switch).
    pub fn bands(&self) -> [Band; BANDS] {
        let matched = self.matched.value();
        std::array::from_fn(|i| Band { matched, ..self.bands[i].band() })
    }
}
