//! The chain file the plugin keeps with the session (the chain-file stages after the
//! bands: the shared contract, `docs/chain-format.md`), as a persisted parameter field.
//!
//! It only stores: the text, the chain it reads as, and a revision that counts installs.
//! Building what the audio thread runs is the chain slot's business (`chain.rs`), which
//! listens to installs ([`ChainFile::listen`]); the parameters know nothing of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ferrofx::{Chain, ChainError};
use nice_plug::params::persist::PersistentField;
use nice_plug::prelude::*;

/// Called after every install, on the installing thread (never the audio thread).
pub type Listener = Box<dyn Fn() + Send + Sync>;

struct Stored {
    json: String,
    chain: Chain,
    /// Why a saved chain was not loaded (the empty chain was, instead).
    ignored: Option<String>,
}

struct Inner {
    stored: Mutex<Stored>,
    /// Counts installs: the editor's caches compare this instead of the chain text.
    revision: AtomicU64,
    listener: Mutex<Option<Listener>>,
}

/// The persisted chain file. Cloning shares it.
#[derive(Clone)]
pub struct ChainFile {
    inner: Arc<Inner>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves data that is still consistent
    // (every critical section writes whole values), so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Default for ChainFile {
    fn default() -> ChainFile {
        let chain = Chain::new();
        ChainFile {
            inner: Arc::new(Inner {
                stored: Mutex::new(Stored { json: chain.to_json(), chain, ignored: None }),
                revision: AtomicU64::new(0),
                listener: Mutex::new(None),
            }),
        }
    }
}

impl ChainFile {
    /// The chain file text currently stored.
    pub fn json(&self) -> String {
        lock(&self.inner.stored).json.clone()
    }

    /// The chain currently stored.
    pub fn chain(&self) -> Chain {
        lock(&self.inner.stored).chain.clone()
    }

    /// Why the last saved chain was not loaded, if it was not.
    pub fn ignored(&self) -> Option<String> {
        lock(&self.inner.stored).ignored.clone()
    }

    /// Changes whenever a chain is installed (cheap to compare, unlike the text).
    pub fn revision(&self) -> u64 {
        self.inner.revision.load(Ordering::Acquire)
    }

    /// Replaces the stored chain with the chain file `text`. On error nothing changes.
    pub fn install_json(&self, text: &str) -> Result<(), ChainError> {
        let chain = Chain::from_json(text)?;
        self.install(chain);
        Ok(())
    }

    /// Replaces the stored chain and tells the listener. Returns the
    /// [`ChainFile::revision`] this install made.
    pub fn install(&self, chain: Chain) -> u64 {
        self.store(chain, None)
    }

    fn store(&self, chain: Chain, ignored: Option<String>) -> u64 {
        let json = chain.to_json();
        *lock(&self.inner.stored) = Stored { json, chain, ignored };
        let revision = self.inner.revision.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(listener) = lock(&self.inner.listener).as_ref() {
            listener();
        }
        revision
    }

    /// Sets what is called after every install (the chain slot that builds it; one).
    pub fn listen(&self, listener: Listener) {
        *lock(&self.inner.listener) = Some(listener);
    }
}

/// The session stores the chain file text. A corrupt chain, or one from a newer format
/// version, loads as the empty chain and the reason is logged and kept for the editor.
impl<'a> PersistentField<'a, String> for ChainFile {
    fn set(&self, new_value: String) {
        match Chain::from_json(&new_value) {
            Ok(chain) => {
                self.install(chain);
            }
            Err(e) => {
                nice_warn!("saved chain ignored, the default (empty) chain is loaded instead: {e}");
                self.store(Chain::new(), Some(format!("saved chain ignored: {e}")));
            }
        }
    }

    fn map<F, R>(&self, f: F) -> R
    where
        F: Fn(&String) -> R,
    {
        f(&lock(&self.inner.stored).json)
    }
}
