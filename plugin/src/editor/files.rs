//! File open/save dialogs inside the editor window (`egui_file`: drawn by egui itself,
//! so it works in every host and under X11 with no desktop portal).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use egui_file::FileDialog;

/// One dialog at a time, remembering the folder last used.
#[derive(Default)]
pub struct Picker {
    dialog: Option<FileDialog>,
    last: Option<PathBuf>,
}

/// Where a dialog starts: the folder last used, else the home folder.
fn start_folder(last: Option<&Path>) -> PathBuf {
    last.and_then(|p| p.parent().map(Path::to_path_buf))
        .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("."))
}

impl Picker {
    /// Opens a dialog choosing an existing file with one of `extensions` (lower case).
    pub fn open_file(&mut self, title: &str, extensions: &'static [&'static str]) {
        let filter = Box::new(move |p: &Path| {
            p.extension()
                .and_then(OsStr::to_str)
                .is_some_and(|e| extensions.contains(&e.to_ascii_lowercase().as_str()))
        });
        let mut dialog = FileDialog::open_file()
            .title(title)
            .initial_path(start_folder(self.last.as_deref()))
            .show_files_filter(filter);
        dialog.open();
        self.dialog = Some(dialog);
    }

    /// Opens a dialog choosing where to save, in `folder` (else the folder last used),
    /// proposing `file_name`.
    pub fn save_file(&mut self, title: &str, folder: Option<&Path>, file_name: &str) {
        let start = folder
            .map(Path::to_path_buf)
            .unwrap_or_else(|| start_folder(self.last.as_deref()));
        let mut dialog = FileDialog::save_file()
            .title(title)
            .initial_path(start)
            .default_filename(file_name);
        dialog.open();
        self.dialog = Some(dialog);
    }

    /// Draws the open dialog, if any; the chosen path once, when the user confirms.
    pub fn show(&mut self, ctx: &egui::Context) -> Option<PathBuf> {
        let dialog = self.dialog.as_mut()?;
        if dialog.show(ctx).selected() {
            let path = dialog.path().map(Path::to_path_buf);
            self.dialog = None;
            self.last = path.clone().or(self.last.take());
            return path;
        }
        if !dialog.visible() {
            self.dialog = None;
        }
        None
    }
}
