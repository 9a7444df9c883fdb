//! Offline rendering: a source of planar blocks through a [`BlockStream`] into a sink,
//! with reading, filtering and writing overlapped on three threads.
//!
//! Audio files are the caller's business: `cargo xtask render` implements [`Source`]
//! and [`Sink`] for WAV/FLAC and atomic output files; the Python package would implement
//! them for arrays. Keeping codecs out of the core keeps its dependencies to the DSP.
//!
//! Guarantees: blocks are written in order; a non-finite output sample stops the render
//! with [`OfflineError::NonFinite`] (the engine turns non-finite *input* into silence, so
//! such a sample comes from the chain itself) and [`guilty_stage`] can then name the stage;
//! any error stops all three threads and the sink is handed back only on success, so the
//! caller commits output only then.

use crate::chain::Chain;
use crate::engine::Engine;
use crate::run::backend::RunError;
use crate::run::stream::{Block, BlockStream};
use std::sync::mpsc;

/// An error of a source or sink, printed as it is.
pub type IoError = Box<dyn std::error::Error + Send + Sync>;

/// Planar blocks in: the input of a render.
pub trait Source: Send {
    /// Fills `buf[c][..n]` for every channel with the next `n <= max_frames` frames and
    /// returns `n`; 0 at the end.
    fn read(&mut self, buf: &mut [Vec<f32>], max_frames: usize) -> Result<usize, IoError>;
}

/// Planar blocks out: the output of a render.
pub trait Sink: Send {
    /// Writes `buf[c][..frames]` of every channel.
    fn write(&mut self, buf: &[Vec<f32>], frames: usize) -> Result<(), IoError>;
}

/// Why a render stopped.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error("{0}")]
    Read(IoError),
    #[error("{0}")]
    Write(IoError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("the output becomes non-finite at frame {frame} (channel {channel})")]
    NonFinite { frame: u64, channel: usize },
    #[error("the header promises {expected} frames but the stream held {found}; nothing written")]
    FrameCount { expected: u64, found: u64 },
    #[error("the {0} thread panicked")]
    Panicked(&'static str),
}

/// What a successful render hands back.
pub struct Rendered<S, K> {
    pub frames: u64,
    pub source: S,
    pub sink: K,
}

/// The first non-finite sample of a block: (channel, frame within the block).
pub fn first_non_finite(buf: &[Vec<f32>], n: usize) -> Option<(usize, usize)> {
    buf.iter().enumerate().find_map(|(c, ch)| ch[..n].iter().position(|v| !v.is_finite()).map(|i| (c, i)))
}

/// Reads `source` in blocks of `block_size` frames, filters them through `stream` and
/// writes them to `sink`, reading and writing on threads of their own (blocks handed
/// through bounded queues, buffers recycled). `expected_frames`, when known, must match
/// what the source held. A panic in the source or sink is re-raised here, for the
/// caller's file boundary to report.
pub fn render<S: Source, K: Sink>(
    mut source: S,
    stream: &mut BlockStream,
    mut sink: K,
    channels: usize,
    block_size: usize,
    expected_frames: Option<u64>,
) -> Result<Rendered<S, K>, OfflineError> {
    let (to_dsp, from_reader) = mpsc::sync_channel::<Result<Block, IoError>>(4);
    let (to_writer, from_dsp) = mpsc::sync_channel::<Block>(4);
    let (recycle, recycled) = mpsc::channel::<Vec<Vec<f32>>>();
    std::thread::scope(|s| {
        let reading = s.spawn(move || {
            loop {
                let mut buf = recycled.try_recv().unwrap_or_else(|_| vec![vec![0.0; block_size]; channels]);
                let msg = match source.read(&mut buf, block_size) {
                    Ok(0) => break,
                    Ok(n) => Ok((buf, n)),
                    Err(e) => Err(e),
                };
                let failed = msg.is_err();
                if to_dsp.send(msg).is_err() || failed {
                    break;
                }
            }
            source
        });
        let writing = s.spawn(move || -> Result<K, IoError> {
            for (buf, n) in from_dsp {
                sink.write(&buf, n)?;
                let _ = recycle.send(buf);
            }
            Ok(sink)
        });
        let mut frames: u64 = 0;
        let filtered = (|| -> Result<(), OfflineError> {
            let send = |done: Block, frames: &mut u64| -> Result<bool, OfflineError> {
                if let Some((channel, i)) = first_non_finite(&done.0, done.1) {
                    return Err(OfflineError::NonFinite { frame: *frames + i as u64, channel });
                }
                *frames += done.1 as u64;
                // A failed send means the writer failed; its error is reported below.
                Ok(to_writer.send(done).is_ok())
            };
            for msg in from_reader {
                let block = msg.map_err(OfflineError::Read)?;
                if let Some(done) = stream.push(block)? {
                    if !send(done, &mut frames)? {
                        return Ok(());
                    }
                }
            }
            while let Some(done) = stream.drain()? {
                if !send(done, &mut frames)? {
                    break;
                }
            }
            Ok(())
        })();
        drop(to_writer);
        let written = writing.join().map_err(|_| OfflineError::Panicked("writer"))?;
        filtered?;
        let sink = written.map_err(OfflineError::Write)?;
        // The reader has ended (the loop above drained its queue); a panic in it is
        // re-raised for the caller's file boundary to report.
        let source = reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        if let Some(expected) = expected_frames {
            if expected != frames {
                return Err(OfflineError::FrameCount { expected, found: frames });
            }
        }
        Ok(Rendered { frames, source, sink })
    })
}

/// Re-runs `source` up to frame `upto` through each enabled stage of `chain` on its own
/// (CPU, float64 design at `fs`) and names the first stage whose output is not finite
/// there: `stage K (type)`. `None` when no single stage is (the stages together are).
pub fn guilty_stage(chain: &Chain, mut source: impl Source, fs: f64, channels: usize, block_size: usize, upto: u64) -> Option<String> {
    let mut stages: Vec<(usize, &'static str, Engine)> = Vec::new();
    for (i, stage) in chain.stages.iter().enumerate().filter(|(_, s)| s.enabled) {
        let designed = Chain::from(stage.clone()).design(fs).ok()?;
        stages.push((i, stage.kind.type_name(), Engine::new(&designed, channels, block_size)));
    }
    let mut buf = vec![vec![0.0f32; block_size]; channels];
    let mut done = 0u64;
    while done <= upto {
        let n = source.read(&mut buf, block_size).ok()?;
        if n == 0 {
            return None;
        }
        for (index, type_name, engine) in stages.iter_mut() {
            let mut slices: Vec<&mut [f32]> = buf.iter_mut().map(|c| &mut c[..n]).collect();
            engine.process(&mut slices);
            if first_non_finite(&buf, n).is_some() {
                return Some(format!("stage {index} ({type_name})"));
            }
        }
        done += n as u64;
    }
    None
}
