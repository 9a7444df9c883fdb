//! The chain-file stages the plugin runs after its bands: built off the audio thread and
//! handed to it without allocating or locking there.
//!
//! The chain file itself is a persisted field of the parameters (`chain_file.rs`). The
//! [`ChainSlot`] listens to its installs (the host loading state, the editor importing a
//! preset or editing a stage) and to `activate`: it designs the chain and builds its
//! [`Engine`] on that thread, then hands it to the audio thread through an `rtrb` ring;
//! the audio thread (`audio/chain.rs`) swaps it in at a block boundary and sends the old
//! engine back through a second ring, to be dropped off the audio thread. The audio thread
//! only takes a new engine when the return ring has room, so it never has to drop one.
//!
//! On the GPU path, a chain of the same shape as the running one (the same stages with
//! the same section and tap counts: a moved cutoff, gain or Q) travels as its design
//! alone: the audio thread hands it to the running offload ([`Offload::retune`]), whose
//! worker writes it into the device buffers it already has. No device buffer is
//! allocated and no CUDA graph captured again; a new shape builds a new offload.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ferrofx::run::offload::Offload;
use ferrofx::{Chain, ChainError, DesignedChain, DesignedStage, Engine};
use nice_plug::prelude::*;
use rtrb::{Consumer, Producer, RingBuffer};

use crate::control::chain_file::{lock, ChainFile};

/// How many built chains can wait for the audio thread.
const HANDOVER_SLOTS: usize = 4;

/// What the audio thread is configured for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AudioConfig {
    pub sample_rate_hz: f32,
    pub channels: usize,
    pub max_block_frames: usize,
    /// The GPU path is on: the chain stages run through an offload in blocks of
    /// `max_block_frames`, that many samples late (see `crate::control::gpu`).
    pub offload: bool,
}

/// A chain built for one configuration (`engine` and `offload` are `None` when the chain
/// has no enabled stage or does not design at this sample rate). Chains reach the audio
/// thread in the order they were installed; it keeps the newest that matches its
/// configuration. With `config.offload` the stages run through `offload`, or, for a
/// chain the offload does not take, through `engine` (after the same delay).
pub struct Built {
    pub config: AudioConfig,
    pub engine: Option<Engine>,
    pub offload: Option<Offload>,
    /// The chain has enabled stages (whether or not they designed).
    pub has_stages: bool,
    /// New coefficients for the running offload instead of a new one (`engine` and
    /// `offload` are then `None`); on the way back, a design the offload no longer needs.
    pub retune: Option<Box<DesignedChain>>,
    /// The running offload refused the retune: the chain is built anew off the audio
    /// thread ([`ChainSlot::collect_returned`]).
    pub refused: bool,
}

/// The last whole chain handed to the audio thread with an offload on a GPU worker: a
/// later chain of the same shape for the same configuration goes as a retune while that
/// worker runs.
struct Sent {
    config: AudioConfig,
    shape: Vec<(bool, usize)>,
    worker_alive: Arc<AtomicBool>,
}

/// A designed chain's shape: each stage's kind (SOS or not) and section or tap count.
fn shape(designed: &DesignedChain) -> Vec<(bool, usize)> {
    designed
        .stages
        .iter()
        .map(|s| match s {
            DesignedStage::Sos(sections) => (true, sections.len()),
            DesignedStage::Fir(taps) => (false, taps.len()),
        })
        .collect()
}

/// The audio thread's ends of the hand-over rings ([`ChainSlot::take_audio_end`]), for
/// `audio::chain::AudioSide`.
pub struct AudioEnd {
    pub incoming: Consumer<Box<Built>>,
    pub returning: Producer<Box<Built>>,
}

struct Inner {
    file: ChainFile,
    config: Mutex<Option<AudioConfig>>,
    to_audio: Mutex<Producer<Box<Built>>>,
    returned: Mutex<Consumer<Box<Built>>>,
    audio_end: Mutex<Option<AudioEnd>>,
    last_sent: Mutex<Option<Sent>>,
    status: Mutex<String>,
    gpu_status: Mutex<String>,
    /// Whole chains and retunes handed to the audio thread, retunes it refused.
    handovers: [AtomicU64; 3],
}

/// What [`ChainSlot::handovers`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handovers {
    /// Whole chains built (engine or offload) and handed to the audio thread.
    pub builds: u64,
    /// New coefficients handed to the running offload.
    pub retunes: u64,
    /// Retunes the running offload refused (each then built anew).
    pub refused: u64,
}

/// The hand-over of a chain file's stages to the audio thread: builds them for the
/// audio configuration whenever the file is installed (it listens to the file) and
/// sends them through lock-free rings. Cloning shares it.
#[derive(Clone)]
pub struct ChainSlot {
    inner: Arc<Inner>,
}

impl ChainSlot {
    /// The slot that builds `file`'s stages: it listens to the file's installs (one slot
    /// per file). Allocates.
    pub fn new(file: &ChainFile) -> ChainSlot {
        let (to_audio, incoming) = RingBuffer::new(HANDOVER_SLOTS);
        let (returning, returned) = RingBuffer::new(HANDOVER_SLOTS + 2);
        let slot = ChainSlot {
            inner: Arc::new(Inner {
                file: file.clone(),
                config: Mutex::new(None),
                to_audio: Mutex::new(to_audio),
                returned: Mutex::new(returned),
                audio_end: Mutex::new(Some(AudioEnd { incoming, returning })),
                last_sent: Mutex::new(None),
                status: Mutex::new(String::from("no chain stages")),
                gpu_status: Mutex::new(String::from("CPU backend")),
                handovers: Default::default(),
            }),
        };
        // (Weak: the file must not keep the slot alive.)
        let weak = Arc::downgrade(&slot.inner);
        file.listen(Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                ChainSlot { inner }.installed();
            }
        }));
        slot.installed();
        slot
    }

    /// The audio thread's ends of the hand-over; there is one, taken by the plugin that
    /// owns this slot.
    pub fn take_audio_end(&self) -> Option<AudioEnd> {
        lock(&self.inner.audio_end).take()
    }

    /// The chain file this slot builds.
    pub fn file(&self) -> &ChainFile {
        &self.inner.file
    }

    fn chain(&self) -> Chain {
        self.inner.file.chain()
    }

    /// Whole chains and retunes handed to the audio thread so far (for tests and logs).
    pub fn handovers(&self) -> Handovers {
        let [builds, retunes, refused] = &self.inner.handovers;
        Handovers { builds: builds.load(Ordering::Relaxed), retunes: retunes.load(Ordering::Relaxed), refused: refused.load(Ordering::Relaxed) }
    }

    /// A line for the editor: what runs, or why not.
    pub fn status(&self) -> String {
        self.inner.file.ignored().unwrap_or_else(|| lock(&self.inner.status).clone())
    }

    /// A line for the editor: where the chain stages' blocks go, or why not the GPU.
    pub fn gpu_status(&self) -> String {
        lock(&self.inner.gpu_status).clone()
    }

    /// Sets [`ChainSlot::gpu_status`] (from `activate`).
    pub fn set_gpu_status(&self, text: String) {
        *lock(&self.inner.gpu_status) = text;
    }

    /// After the file's install: when the audio side is configured, builds the chain
    /// and hands it over; otherwise checks it at a common rate for the editor's status.
    fn installed(&self) {
        let config = *lock(&self.inner.config);
        // Drop engines the audio thread has given back (here, off the audio thread).
        self.collect_returned();
        match config {
            Some(config) => {
                let built = self.retune_or_build(config);
                if lock(&self.inner.to_audio).push(built).is_err() {
                    nice_warn!("chain handover ring full; the new chain will be used at the next activation");
                }
            }
            None => {
                // Validate at a common rate so the editor can say something useful.
                let status = match self.chain().design(48_000.0) {
                    Ok(_) => describe(&self.chain()),
                    Err(e) => format!("chain not run: {e}"),
                };
                *lock(&self.inner.status) = status;
            }
        }
    }

    /// Sets the audio configuration (from `activate`) and builds the stored chain for it.
    pub fn configure(&self, config: AudioConfig) -> Box<Built> {
        *lock(&self.inner.config) = Some(config);
        self.collect_returned();
        self.build(config)
    }

    /// Forgets the audio configuration (from `deactivate`, after the audio side has
    /// dropped what it held) and drops what came back.
    pub fn unconfigure(&self) {
        *lock(&self.inner.config) = None;
        self.collect_returned();
    }

    /// Drops engines the audio thread has returned; builds the chain anew if the running
    /// offload refused a retune (which the checks before sending one rule out).
    pub fn collect_returned(&self) {
        let mut refused = false;
        {
            let mut returned = lock(&self.inner.returned);
            while let Ok(built) = returned.pop() {
                refused |= built.refused;
                if built.refused {
                    self.inner.handovers[2].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let config = *lock(&self.inner.config);
        if let (true, Some(config)) = (refused, config) {
            nice_warn!("the running offload refused new coefficients; the chain is built anew");
            let built = self.build(config);
            if lock(&self.inner.to_audio).push(built).is_err() {
                nice_warn!("chain handover ring full; the new chain will be used at the next activation");
            }
        }
    }

    /// New coefficients for the running offload when `config` runs one on a live GPU
    /// worker and the stored chain has its shape (and the backend takes it); otherwise
    /// a whole new build.
    fn retune_or_build(&self, config: AudioConfig) -> Box<Built> {
        let chain = self.chain();
        if !config.offload || !chain.stages.iter().any(|s| s.enabled) {
            return self.build(config);
        }
        let designed = match chain.design(config.sample_rate_hz as f64) {
            Ok(designed) => designed,
            Err(e) => return self.build_designed(config, &chain, Err(e)),
        };
        let fits = lock(&self.inner.last_sent).as_ref().is_some_and(|s| {
            s.config == config && s.worker_alive.load(Ordering::Acquire) && s.shape == shape(&designed)
        });
        if !fits || !crate::control::gpu::retune_accepted(&designed, config.channels, config.max_block_frames) {
            return self.build_designed(config, &chain, Ok(designed));
        }
        *lock(&self.inner.status) = describe(&chain);
        self.inner.handovers[1].fetch_add(1, Ordering::Relaxed);
        Box::new(Built { config, engine: None, offload: None, has_stages: true, retune: Some(Box::new(designed)), refused: false })
    }

    fn build(&self, config: AudioConfig) -> Box<Built> {
        let chain = self.chain();
        let designed = chain.design(config.sample_rate_hz as f64);
        self.build_designed(config, &chain, designed)
    }

    /// A whole build of `chain` (designed as `designed`) for `config`; remembered as the
    /// last one sent, for the retunes that may follow it.
    fn build_designed(&self, config: AudioConfig, chain: &Chain, designed: Result<DesignedChain, ChainError>) -> Box<Built> {
        let has_stages = chain.stages.iter().any(|s| s.enabled);
        let mut built = Built { config, engine: None, offload: None, has_stages, retune: None, refused: false };
        let mut sent = None;
        let status = if !has_stages {
            String::from("no chain stages")
        } else {
            match designed {
                Ok(designed) => {
                    self.build_processing(&designed, &mut built);
                    sent = built.offload.as_ref().filter(|o| o.has_worker()).map(|o| Sent { config, shape: shape(&designed), worker_alive: o.worker_alive() });
                    describe(chain)
                }
                Err(e) => {
                    nice_warn!("chain stages not run at {} Hz: {e}", config.sample_rate_hz);
                    format!("chain not run at {} Hz: {e}", config.sample_rate_hz)
                }
            }
        };
        *lock(&self.inner.status) = status;
        *lock(&self.inner.last_sent) = sent;
        self.inner.handovers[0].fetch_add(1, Ordering::Relaxed);
        Box::new(built)
    }

    /// The engine (CPU path) or the offload (GPU path) of a designed chain.
    fn build_processing(&self, designed: &DesignedChain, built: &mut Built) {
        let config = built.config;
        if !config.offload {
            built.engine = Some(Engine::new(designed, config.channels, config.max_block_frames));
            return;
        }
        let (offload, text) = crate::control::gpu::build_offload(designed, config.channels, config.max_block_frames);
        if offload.is_none() {
            built.engine = Some(Engine::new(designed, config.channels, config.max_block_frames));
        }
        built.offload = offload;
        self.set_gpu_status(format!("{text}; latency {} samples", config.max_block_frames));
    }
}

fn describe(chain: &Chain) -> String {
    let enabled = chain.stages.iter().filter(|s| s.enabled).count();
    let types: Vec<&str> = chain.stages.iter().filter(|s| s.enabled).map(|s| s.kind.type_name()).collect();
    format!("{enabled} chain stage(s): {}", types.join(", "))
}
