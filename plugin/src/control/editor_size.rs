//! The editor window's size, kept with the session: a persisted field of the parameters.
//! Saved: the editor state's size when the host saves (the window's, as it was last
//! resized). Loaded: a size the editor asks its window for once it is open (an egui
//! `InnerSize` command, which goes to the host as a resize request), because the plugin
//! wrapper made the editor, and its `EguiEditorState`, when the instance was created, and
//! that state's size can only change through the window. Until the editor applies it, a
//! loaded size is also what a save writes, so a session saved unopened keeps it.

use std::sync::{Arc, Mutex};

use nice_plug::editor::dpi::LogicalSize;
use nice_plug::params::persist::PersistentField;
use nice_plug_egui::EguiEditorState;
use serde::{Deserialize, Serialize};

use super::chain_file::lock;

/// The default window, in logical pixels.
pub const DEFAULT_SIZE: (f32, f32) = (1000.0, 720.0);
/// The smallest window the editor lays out (its resize corner stops there too).
pub const MIN_SIZE: (f32, f32) = (760.0, 520.0);
/// A saved size beyond this is taken for damage and ignored.
pub const MAX_SIZE: f32 = 16_384.0;

/// The saved form: logical pixels (independent of the screen's scale).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedSize {
    pub width: f32,
    pub height: f32,
}

/// The editor state (made once, with the instance) and a loaded size not yet applied.
pub struct EditorSize {
    state: Arc<EguiEditorState>,
    wanted: Mutex<Option<SavedSize>>,
}

impl Default for EditorSize {
    fn default() -> Self {
        EditorSize {
            state: EguiEditorState::from_size(LogicalSize::new(DEFAULT_SIZE.0, DEFAULT_SIZE.1), 1.0),
            wanted: Mutex::new(None),
        }
    }
}

impl EditorSize {
    /// The state the editor is made with (it records the window's size as it changes).
    pub fn state(&self) -> Arc<EguiEditorState> {
        self.state.clone()
    }

    /// The window's size as the editor state last recorded it, in logical pixels.
    pub fn current(&self) -> SavedSize {
        let s = self.state.logical_size();
        SavedSize { width: s.width, height: s.height }
    }

    /// The size a save writes: a loaded size not yet applied, else the current one.
    pub fn size(&self) -> SavedSize {
        lock(&self.wanted).unwrap_or_else(|| self.current())
    }

    /// A loaded size the open editor should ask its window for (taken once), when it
    /// differs from the current size.
    pub fn take_wanted(&self) -> Option<SavedSize> {
        let wanted = lock(&self.wanted).take()?;
        (wanted != self.current()).then_some(wanted)
    }
}

impl<'a> PersistentField<'a, SavedSize> for EditorSize {
    /// A loaded size, clamped to what the editor lays out; a non-finite or absurd one
    /// (a damaged session) is ignored. The editor applies it when it next draws.
    fn set(&self, new_value: SavedSize) {
        let SavedSize { width, height } = new_value;
        if !(width.is_finite() && height.is_finite()) || width > MAX_SIZE || height > MAX_SIZE {
            return;
        }
        *lock(&self.wanted) = Some(SavedSize { width: width.max(MIN_SIZE.0), height: height.max(MIN_SIZE.1) });
    }

    fn map<F, R>(&self, f: F) -> R
    where
        F: Fn(&SavedSize) -> R,
    {
        f(&self.size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loaded_size_is_wanted_once_saved_until_applied_and_damage_is_ignored() {
        let e = EditorSize::default();
        let default = SavedSize { width: DEFAULT_SIZE.0, height: DEFAULT_SIZE.1 };
        assert_eq!(e.map(|s| *s), default);
        assert_eq!(e.take_wanted(), None);
        e.set(SavedSize { width: 1400.0, height: 900.0 });
        assert_eq!(e.map(|s| *s), SavedSize { width: 1400.0, height: 900.0 }, "saved before the editor applies it");
        assert_eq!(e.take_wanted(), Some(SavedSize { width: 1400.0, height: 900.0 }));
        assert_eq!(e.take_wanted(), None, "taken once");
        assert_eq!(e.map(|s| *s), default, "then the window's own size (not resized here)");
        e.set(SavedSize { width: 100.0, height: 50.0 });
        assert_eq!(e.size(), SavedSize { width: MIN_SIZE.0, height: MIN_SIZE.1 });
        e.set(SavedSize { width: f32::NAN, height: 900.0 });
        e.set(SavedSize { width: 1e9, height: 900.0 });
        assert_eq!(e.size(), SavedSize { width: MIN_SIZE.0, height: MIN_SIZE.1 }, "damage ignored");
        e.set(default);
        assert_eq!(e.take_wanted(), None, "the current size is not asked for again");
    }
}
