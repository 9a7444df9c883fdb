//! The audio thread's end of the chain stages' hand-over (`control/chain.rs` builds them
//! off the audio thread): it swaps a new engine or offload in at a block boundary, hands
//! a retune to the running offload, and sends what it replaces back to be dropped off
//! the audio thread. It only takes a new one while the return ring has room, so it never
//! has to free.

use ferrofx::run::offload::Offload;
use ferrofx::Engine;
use rtrb::{Consumer, Producer};

use crate::control::chain::{AudioConfig, AudioEnd, Built};

/// The audio thread's ends of the rings and the engine it runs.
pub struct AudioSide {
    incoming: Consumer<Box<Built>>,
    returning: Producer<Box<Built>>,
    pub current: Option<Box<Built>>,
}

impl AudioSide {
    /// The audio side of a chain slot's hand-over, running nothing yet.
    pub fn new(end: AudioEnd) -> AudioSide {
        AudioSide { incoming: end.incoming, returning: end.returning, current: None }
    }

    /// Takes the newest engine built for `config`, if any, returning replaced ones; true
    /// when the chain changed shape. A new offload takes over the old one's block in
    /// flight, so the stream has no gap; a retune goes to the running offload, from the
    /// next block on. Never allocates, frees or blocks.
    pub fn poll(&mut self, config: AudioConfig) -> bool {
        let mut changed = false;
        while self.returning.slots() > 0 {
            let Ok(mut next) = self.incoming.pop() else { break };
            // (A retune for another configuration goes back untouched, like a build.)
            let retune = if next.config == config { next.retune.take() } else { None };
            if let Some(chain) = retune {
                match self.current.as_mut().and_then(|c| c.offload.as_mut()) {
                    Some(off) => match off.retune(chain) {
                        Ok(spare) => next.retune = spare,
                        Err(e) => (next.retune, next.refused) = (Some(e.into_chain()), true),
                    },
                    None => (next.retune, next.refused) = (Some(chain), true),
                }
                // Cannot fail: a slot was free before this pop.
                let _ = self.returning.push(next);
                continue;
            }
            if next.config == config {
                if let (Some(new), Some(old)) =
                    (next.offload.as_mut(), self.current.as_ref().and_then(|c| c.offload.as_ref()))
                {
                    new.adopt(old);
                }
                if let Some(old) = self.current.replace(next) {
                    // Cannot fail: a slot was free before this pop.
                    let _ = self.returning.push(old);
                }
                changed = true;
            } else {
                let _ = self.returning.push(next);
            }
        }
        changed
    }

    /// The engine to run, if any.
    pub fn engine(&mut self) -> Option<&mut Engine> {
        self.current.as_mut().and_then(|b| b.engine.as_mut())
    }

    /// The offload to run, if any.
    pub fn offload(&mut self) -> Option<&mut Offload> {
        self.current.as_mut().and_then(|b| b.offload.as_mut())
    }

    /// The current chain has enabled stages.
    pub fn has_stages(&self) -> bool {
        self.current.as_ref().is_some_and(|b| b.has_stages)
    }

    /// Drops everything waiting and what runs (for `activate`/`deactivate`, not the
    /// audio thread: it frees).
    pub fn clear(&mut self) {
        while self.incoming.pop().is_ok() {}
        self.current = None;
    }
}

