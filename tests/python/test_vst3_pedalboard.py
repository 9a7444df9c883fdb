"""The bundled FerroFX.vst3 in a real VST3 host (Spotify's pedalboard).

Needs the bundle (`cargo xtask bundle ferrofx`; scripts/test.sh builds it) and the
xtask binary for the reference render ($FERROFX_XTASK, else `cargo run`). The bundle is
found in $FERROFX_BUNDLE_DIR, $CARGO_TARGET_DIR/bundled or target/bundled; without it
the tests are skipped with the reason, unless FERROFX_REQUIRE_BUNDLES=1 (then they fail).

The expected output comes from the core engine through `cargo xtask render`, with a
chain file written from the parameter values the host reports (raw 0..1 values mapped
through the plugin's documented ranges).
"""

import json
import os
import pathlib
import subprocess
import tempfile
import time

import numpy as np
import pytest
import scipy.io.wavfile as wavfile

pedalboard = pytest.importorskip("pedalboard")

ROOT = pathlib.Path(__file__).resolve().parents[2]
FS = 48_000


def bundle_path():
    dirs = []
    if os.environ.get("FERROFX_BUNDLE_DIR"):
        dirs.append(pathlib.Path(os.environ["FERROFX_BUNDLE_DIR"]))
    if os.environ.get("CARGO_TARGET_DIR"):
        dirs.append(pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "bundled")
    dirs.append(ROOT / "target" / "bundled")
    for d in dirs:
        if (d / "FerroFX.vst3").exists():
            return d / "FerroFX.vst3"
    msg = f"FerroFX.vst3 not found in {[str(d) for d in dirs]}; run `cargo xtask bundle ferrofx`"
    if os.environ.get("FERROFX_REQUIRE_BUNDLES") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture
def plugin():
    return pedalboard.load_plugin(str(bundle_path()))


def xtask(args):
    exe = os.environ.get("FERROFX_XTASK")
    cmd = [exe] + args if exe else ["cargo", "run", "-q", "-p", "xtask", "--release", "--"] + args
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def render_core(chain, audio):
    """The core engine's output for `audio` (channels, frames) through `chain`."""
    with tempfile.TemporaryDirectory() as d:
        src, out, ch = (os.path.join(d, n) for n in ("in.wav", "out.wav", "chain.json"))
        wavfile.write(src, FS, np.ascontiguousarray(audio.T.astype(np.float32)))
        with open(ch, "w") as f:
            json.dump(chain, f)
        r = xtask(["render", "--chain", ch, "--output", out, src])
        assert r.returncode == 0, r.stderr
        rate, y = wavfile.read(out)
        assert rate == FS
        return y.T.reshape(audio.shape)


# The plugin's parameter ranges (plugin/src/params.rs): skewed ranges map a raw value r
# to min + r^(1/factor) (max - min) with factor = 2^skew; linear ones to min + r (max - min).
def freq_hz(raw):
    return 20.0 + raw ** (2 ** 2.2) * (20_000.0 - 20.0)


def q_value(raw):
    return 0.1 + raw ** (2 ** 2.0) * (18.0 - 0.1)


# Gains have a step size of 0.01 dB.
def gain_db(raw):
    return round(-24.0 + 48.0 * raw, 2)


def output_gain_db(raw):
    return round(-36.0 + 60.0 * raw, 2)


def noise(channels, frames, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.5, 0.5, size=(channels, frames))).astype(np.float32)


def test_lists_every_parameter(plugin):
    names = list(plugin.parameters.keys())
    assert len(names) == 24 * 16 + 9
    for n in range(1, 25):
        for what in ("on", "bypass", "shape", "frequency_hz", "gain_db", "q", "slope", "linkwitz_riley", "channels",
                     "dynamic", "threshold_db", "ratio", "attack_ms", "release_ms", "range_db", "sidechain"):
            assert f"band_{n}_{what}" in names
    assert plugin.parameters["auto_gain"].valid_values == ["Off", "Pink", "K-weighted"]
    for name in ("output_gain_db", "bypass", "backend", "gpu_min_block_frames", "auto_gain", "delta_listen", "analog_matched_bands", "phase", "latency_reserve"):
        assert name in names
    assert plugin.parameters["latency_reserve"].valid_values == ["None", "Linear 4096", "Linear 16384", "Linear 65536"]
    assert plugin.parameters["band_3_shape"].valid_values == [
        "Peak", "Low shelf", "High shelf", "Low cut", "High cut", "Notch", "Band pass", "All pass", "Tilt shelf"]
    assert plugin.parameters["bypass"].valid_values == ["Not Bypassed", "Bypassed"]
    assert plugin.parameters["backend"].valid_values == ["Auto", "CPU", "GPU"]


def configure(p):
    """Sets a few bands and the output gain; returns the equivalent chain file (cookbook
    bands: the analog-matched switch, on by default, goes off)."""
    p.analog_matched_bands = False
    p.band_1_on = True
    p.band_1_shape = "Low cut"
    p.band_1_frequency_hz = 80.0
    p.band_1_slope = "24 dB/oct"
    p.band_6_on = True
    p.band_6_shape = "Peak"
    p.band_6_frequency_hz = 1000.0
    p.band_6_gain_db = 6.0
    p.band_6_q = 1.4
    p.band_9_on = True
    p.band_9_shape = "High shelf"
    p.band_9_frequency_hz = 8000.0
    p.band_9_gain_db = -4.0
    p.band_9_q = 0.7
    p.band_12_on = True
    p.band_12_shape = "Tilt shelf"
    p.band_12_frequency_hz = 600.0
    p.band_12_gain_db = 3.0
    p.band_12_q = 0.7
    p.band_24_on = True
    p.band_24_shape = "High cut"
    p.band_24_frequency_hz = 15000.0
    p.band_24_slope = "48 dB/oct"
    p.band_24_linkwitz_riley = True
    p.output_gain_db = -3.0

    raw = {k: v.raw_value for k, v in p.parameters.items()}
    f = lambda n: freq_hz(raw[f"band_{n}_frequency_hz"])
    g = lambda n: gain_db(raw[f"band_{n}_gain_db"])
    q = lambda n: q_value(raw[f"band_{n}_q"])
    return {
        "format": "ferrofx-chain",
        "version": 1,
        "stages": [
            {"type": "butterworth", "response": "highpass", "order": 4, "cutoff_hz": f(1)},
            {"type": "biquad", "kind": "peaking", "freq_hz": f(6), "q": q(6), "gain_db": g(6)},
            {"type": "biquad", "kind": "high_shelf", "freq_hz": f(9), "q": q(9), "gain_db": g(9)},
            {"type": "biquad", "kind": "low_shelf", "freq_hz": f(12), "q": q(12), "gain_db": -g(12) / 2},
            {"type": "biquad", "kind": "high_shelf", "freq_hz": f(12), "q": q(12), "gain_db": g(12) / 2},
            {"type": "linkwitz_riley", "response": "lowpass", "order": 8, "cutoff_hz": f(24)},
            {"type": "gain", "gain_db": output_gain_db(raw["output_gain_db"])},
        ],
    }


# Mono, stereo and 5.1. The plugin also declares 4 and 8 channels, which CLAP hosts can
# pick, but nice-plug 0.4.2's VST3 wrapper has no speaker arrangement for them.
@pytest.mark.parametrize("channels", [2, 1, 6])
def test_matches_the_core_engine(plugin, channels):
    chain = configure(plugin)
    x = noise(channels, FS, 3)
    # One second of silence first: the parameter smoothing settles on zeros.
    lead = np.zeros((channels, FS), dtype=np.float32)
    y = plugin(np.concatenate([lead, x], axis=1), FS)
    assert y.shape == (channels, 2 * FS)
    assert np.all(y[:, :FS] == 0.0)
    expected = render_core(chain, x)
    err = np.max(np.abs(y[:, FS:] - expected))
    print(f"{channels} channel(s): max difference from the core engine {err:.3e}")
    assert err <= 2e-5


def test_bypass_passes_the_input_through(plugin):
    configure(plugin)
    plugin.bypass = "Bypassed"
    x = noise(2, FS, 4)
    y = plugin(x, FS)
    # After the 10 ms crossfade the output is the input, sample for sample.
    assert np.array_equal(y[:, FS // 50:], x[:, FS // 50:])


def test_a_bypassed_band_stops_acting(plugin):
    # Band 6 (a 6 dB bell) bypassed: the output is the chain without it.
    chain = configure(plugin)
    plugin.band_6_bypass = True
    chain["stages"] = [s for s in chain["stages"] if s.get("kind") != "peaking"]
    x = noise(2, FS, 5)
    lead = np.zeros((2, FS), dtype=np.float32)
    y = plugin(np.concatenate([lead, x], axis=1), FS)
    err = np.max(np.abs(y[:, FS:] - render_core(chain, x)))
    print(f"band 6 bypassed: max difference from the core engine without it {err:.3e}")
    assert err <= 2e-5


def test_analog_matched_bands_equal_a_version_2_chain_file(plugin):
    # The default switch on: bells, shelves and tilt are the core's matched biquads and
    # the cuts (an 80 Hz Butterworth, a 15 kHz 48 dB/oct Linkwitz-Riley) its matched cuts,
    # which the renderer reads from a version 2 chain file with "matched": true.
    chain = configure(plugin)
    plugin.analog_matched_bands = True
    chain["version"] = 2
    types = [s["type"] for s in chain["stages"]]
    assert "butterworth" in types and "linkwitz_riley" in types, types
    for s in chain["stages"]:
        if s["type"] in ("biquad", "butterworth", "linkwitz_riley"):
            s["matched"] = True
    x = noise(2, FS, 8)
    lead = np.zeros((2, FS), dtype=np.float32)
    y = plugin(np.concatenate([lead, x], axis=1), FS)[:, FS:]
    err = np.max(np.abs(y - render_core(chain, x)))
    print(f"analog-matched bands vs the core render of a version 2 file: {err:.3e}")
    assert err <= 2e-5


def test_routed_bands_act_on_their_channels(plugin):
    # Band 6 (a 6 dB bell) on the left channel only, band 9 (a -4 dB high shelf) on the
    # side signal: the plugin runs the stereo bands, then the left bands, then the side
    # bands between an M/S encode and decode; the output gain commutes with all of them.
    chain = configure(plugin)
    plugin.band_6_channels = "Left"
    plugin.band_9_channels = "Side"
    assert plugin.parameters["band_6_channels"].valid_values == ["Stereo", "Left", "Right", "Mid", "Side"]
    stages = chain["stages"]
    bell, shelf = [stages[1]], [stages[2]]
    assert bell[0]["kind"] == "peaking" and shelf[0]["kind"] == "high_shelf"
    both = dict(chain, stages=[s for i, s in enumerate(stages) if i not in (1, 2)])
    x = noise(2, FS, 6)
    lead = np.zeros((2, FS), dtype=np.float32)
    y = plugin(np.concatenate([lead, x], axis=1), FS)[:, FS:]
    common = render_core(both, x)
    left = render_core(dict(chain, stages=bell), common[:1])[0]
    right = common[1]
    mid = (left.astype(np.float64) + right) / 2
    side = render_core(dict(chain, stages=shelf), ((left.astype(np.float64) - right) / 2)[None].astype(np.float32))[0]
    expected = np.stack([mid + side, mid - side])
    err = np.max(np.abs(y - expected))
    print(f"band 6 on the left, band 9 on the side: max difference from per-channel core renders {err:.3e}")
    assert err <= 3e-5
    # With the bell back on both channels, the side shelf leaves a centred (mono) signal
    # alone: both channels come out as the chain without the shelf.
    plugin.band_6_channels = "Stereo"
    m = noise(1, FS, 7)
    y = plugin(np.concatenate([np.zeros((2, FS), dtype=np.float32), np.repeat(m, 2, axis=0)], axis=1), FS)[:, FS:]
    c = render_core(dict(chain, stages=[s for i, s in enumerate(stages) if i != 2]), m)[0]
    err = max(np.max(np.abs(y[0] - c)), np.max(np.abs(y[1] - c)))
    print(f"mono signal with a side band: max difference from the chain without it {err:.3e}")
    assert err <= 2e-5 and np.array_equal(y[0], y[1])


def test_dynamic_band_follows_its_static_curve(plugin):
    # Band 3: a 0 dB bell at 1 kHz, dynamic: threshold -30 dB, ratio 4, range 12 dB.
    plugin.analog_matched_bands = False
    plugin.band_3_on = True
    plugin.band_3_shape = "Peak"
    plugin.band_3_frequency_hz = 1000.0
    plugin.band_3_q = 1.0
    plugin.band_3_dynamic = True
    plugin.band_3_threshold_db = -30.0
    plugin.band_3_ratio = 4.0
    plugin.band_3_range_db = 12.0
    plugin.band_3_attack_ms = 5.0
    plugin.band_3_release_ms = 50.0
    t = np.arange(FS // 2) / FS
    for level_db, want_db in [(-45.0, 0.0), (-26.0, -3.0), (-10.0, -12.0)]:
        x = (10 ** (level_db / 20) * np.sin(2 * np.pi * 1000.0 * t)).astype(np.float32)
        y = plugin(np.stack([x, x]), FS)
        tail = y[0, -4800:].astype(np.float64)
        got = 10 * np.log10(2 * np.mean(tail**2)) - level_db
        print(f"sine at {level_db} dB: band gain {got:+.2f} dB (curve {want_db:+.2f} dB)")
        assert abs(got - want_db) <= 0.5


def test_linear_phase_impulse_is_symmetric(plugin):
    # Linear 4096: the impulse response of a few bands is symmetric about its centre,
    # 2048 samples after the impulse, where pedalboard compensates the reported latency.
    configure(plugin)
    plugin.phase = "Linear 4096"
    n = FS // 2
    x = np.zeros((2, n), dtype=np.float32)
    x[:, 1000] = 1.0
    half = np.arange(1, 1000)
    # The first call after the change gets the new mode as a parameter change inside
    # processing: whichever mode it plays in a block, the latency reported with it is
    # that mode's, so the response is never silent or early.
    y = plugin(x, FS)
    assert np.max(np.abs(y[0])) > 0.1, "not silent"
    symmetric = np.max(np.abs(y[0, 1000 + half] - y[0, 1000 - half])) <= 1e-6
    causal = np.all(y[:, :1000] == 0.0)
    print(f"first call: linear and compensated {symmetric}, natural and causal {causal}")
    assert symmetric or causal
    y = plugin(x, FS)
    peak = int(np.argmax(np.abs(y[0])))
    print(f"linear phase: impulse response peak {peak - 1000} samples after the impulse")
    assert peak == 1000, "the reported latency is compensated"
    # Symmetric about the peak (a natural-phase response is not): linear phase is on.
    asym = np.max(np.abs(y[0, peak + half] - y[0, peak - half]))
    print(f"asymmetry about the peak: {asym:.2e}")
    assert asym <= 1e-6


BLOCK = 256


def stream(plugin, x, changes):
    """Plays `x` through the prepared plugin block by block without a reset (as a host
    plays), calling `changes[k](plugin)` before block k; the output and the latency the
    plugin reports after each block."""
    out, latency = [], []
    for k in range(x.shape[1] // BLOCK):
        if k in changes:
            changes[k](plugin)
        out.append(plugin(x[:, k * BLOCK:(k + 1) * BLOCK], FS, buffer_size=BLOCK, reset=False))
        latency.append(plugin.reported_latency_samples)
        # (Real time is slower: the designer thread builds the new FIR meanwhile.)
        time.sleep(0.0005)
    return np.concatenate(out, axis=1), np.array(latency)


@pytest.mark.parametrize("how", ["parameter", "state"])
def test_phase_switch_while_playing_reports_the_latency_of_the_audio(plugin, how):
    """The phase mode changed while playing (a parameter change, or a saved state loaded):
    the plugin switches inside processing (VST3 lets the latency change while active) and
    reports the new latency at the block its output becomes the new mode's. Every block's
    output, taken with the latency reported with it, is the reference of that latency's
    mode: the core engine's natural-phase chain at 0, the bands' linear-phase FIR (from a
    plugin activated in that mode, whose latency pedalboard compensates) at 2048."""
    chain = configure(plugin)
    # One second of silence first: the parameters reach the plugin as changes inside its
    # first blocks, and their smoothing settles on zeros.
    x = np.concatenate([np.zeros((2, FS), dtype=np.float32), noise(2, 4 * FS, 17)], axis=1)
    natural = render_core(chain, x)
    other = pedalboard.load_plugin(str(bundle_path()))
    configure(other)
    other.phase = "Linear 4096"
    other(x, FS)  # (its first call may still start in natural phase, as above)
    linear = np.zeros_like(x)
    linear[:, 2048:] = other(x, FS)[:, :-2048]
    # Prepared (a reset), the settings applied by its first block.
    plugin(np.zeros((2, BLOCK), dtype=np.float32), FS, buffer_size=BLOCK)
    if how == "state":
        other_state, natural_state = other.raw_state, plugin.raw_state
        to_linear = lambda p: setattr(p, "raw_state", other_state)
        to_natural = lambda p: setattr(p, "raw_state", natural_state)
    else:
        to_linear = lambda p: setattr(p, "phase", "Linear 4096")
        to_natural = lambda p: setattr(p, "phase", "Natural")
    blocks_per_s = FS // BLOCK
    y, latency = stream(plugin, x, {2 * blocks_per_s: to_linear, 4 * blocks_per_s: to_natural})
    changes = [k for k in range(1, len(latency)) if latency[k] != latency[k - 1]]
    print(f"{how}: latency {latency[0]}, then {[(k, int(latency[k])) for k in changes]}")
    assert latency[0] == 0 and [int(latency[k]) for k in changes] == [2048, 0], "one switch each way"
    assert changes[0] >= 2 * blocks_per_s and changes[1] >= 4 * blocks_per_s
    fade = int(0.020 * FS)
    for k in range(len(latency)):
        t = np.arange(k * BLOCK, (k + 1) * BLOCK)
        # A block whose latency was just reported may hold the cross-fade's start.
        if any(c * BLOCK <= t[0] < c * BLOCK + fade for c in changes) or any(c * BLOCK < t[-1] + 1 <= c * BLOCK + fade for c in changes):
            continue
        want = linear if latency[k] == 2048 else natural
        err = np.max(np.abs(y[:, t] - want[:, t]))
        assert err <= 2e-5, f"{how}: block {k} (reported latency {latency[k]}): {err:.2e} from that mode's output"


def test_a_latency_reserve_keeps_one_latency_through_phase_switches(plugin):
    """With a latency reserve (Linear 4096) the VST3 plugin reports 2048 samples from its
    activation on, in natural phase too, and keeps it while the phase mode switches in
    both directions: each block's output is natural phase delayed by 2048 or the bands'
    linear-phase FIR (or, around a switch, a cross-fade between the two)."""
    chain = configure(plugin)
    plugin.latency_reserve = "Linear 4096"
    x = np.concatenate([np.zeros((2, FS), dtype=np.float32), noise(2, 5 * FS, 19)], axis=1)
    natural = np.zeros_like(x)
    natural[:, 2048:] = render_core(chain, x)[:, :-2048]
    other = pedalboard.load_plugin(str(bundle_path()))
    configure(other)
    other.phase = "Linear 4096"
    other(x, FS)
    linear = np.zeros_like(x)
    linear[:, 2048:] = other(x, FS)[:, :-2048]
    # Prepared twice: the first call's first block brings the settings (the reserve is
    # read at activation), the second activates with them, as a reopened session does.
    plugin(np.zeros((2, BLOCK), dtype=np.float32), FS, buffer_size=BLOCK)
    plugin(np.zeros((2, BLOCK), dtype=np.float32), FS, buffer_size=BLOCK)
    s = FS // BLOCK
    y, latency = stream(plugin, x, {2 * s: lambda p: setattr(p, "phase", "Linear 4096"), 4 * s: lambda p: setattr(p, "phase", "Natural")})
    assert set(latency.tolist()) == {2048}, "one latency all along"
    for lo, hi, want, what in [(FS + 2048, 2 * s * BLOCK, natural, "natural"), (3 * s * BLOCK, 4 * s * BLOCK, linear, "linear"), (5 * s * BLOCK, x.shape[1], natural, "natural again")]:
        err = np.max(np.abs(y[:, lo:hi] - want[:, lo:hi]))
        print(f"{what}: {err:.2e}")
        assert err <= 2e-5, f"{what}: {err:.2e}"


def pink(channels, frames, seed):
    """Pink noise band-limited to 20 Hz..20 kHz (spectrum shaped by 1/sqrt(f))."""
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal((channels, frames)), axis=-1)
    f = np.fft.rfftfreq(frames, 1 / FS)
    shape = np.where((f >= 20) & (f <= 20_000), 1 / np.sqrt(np.maximum(f, 1)), 0)
    x = np.fft.irfft(spec * shape, n=frames, axis=-1)
    return (0.1 * x / np.std(x)).astype(np.float32)


def test_auto_gain_keeps_pink_noise_loudness(plugin):
    # The bands of configure() (cuts, bells, shelf, tilt) with pink auto gain: pink noise
    # keeps its power within 0.5 dB (the -3 dB output gain comes on top).
    configure(plugin)
    # And a broad +9 dB bell, so that there is plenty to compensate.
    plugin.band_7_on = True
    plugin.band_7_frequency_hz = 3000.0
    plugin.band_7_gain_db = 9.0
    plugin.band_7_q = 0.5
    plugin.auto_gain = "Pink"
    x = pink(2, 4 * FS, 9)
    plugin(x[:, :FS], FS)  # the auto gain settles (30 ms) and the host has the settings
    y = plugin(x, FS)[:, FS:]
    change_db = 10 * np.log10(np.mean(y.astype(np.float64) ** 2) / np.mean(x[:, FS:].astype(np.float64) ** 2)) + 3.0
    plugin.auto_gain = "Off"
    z = plugin(x, FS)[:, FS:]
    without_db = 10 * np.log10(np.mean(z.astype(np.float64) ** 2) / np.mean(x[:, FS:].astype(np.float64) ** 2)) + 3.0
    print(f"pink noise power: {change_db:+.3f} dB with auto gain, {without_db:+.3f} dB without")
    assert abs(change_db) <= 0.5 and abs(without_db) > 3.0


def test_delta_listen_is_processed_minus_input(plugin):
    configure(plugin)
    x = noise(2, FS, 10)
    lead = np.zeros((2, FS), dtype=np.float32)
    y = plugin(np.concatenate([lead, x], axis=1), FS)[:, FS:]
    plugin.delta_listen = True
    d = plugin(np.concatenate([lead, x], axis=1), FS)[:, FS:]
    g = 10 ** (output_gain_db(plugin.parameters["output_gain_db"].raw_value) / 20)
    err = np.max(np.abs(d - (y - g * x)))
    print(f"delta listen vs processed minus input: {err:.3e}")
    assert err <= 1e-5
