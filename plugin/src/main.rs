//! The standalone app: the same plugin and editor on JACK, ALSA or a dummy backend
//! (`--backend dummy` runs headless, without audio hardware). `--help` lists the options.

use ferrofx_plugin::FerroFx;
use nice_plug::prelude::*;

fn main() {
    nice_export_standalone::<FerroFx>();
}
