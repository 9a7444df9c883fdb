"""examples/python/ray_filter_corpus.py in Ray's local mode with 2 workers, on a small
generated corpus (mono, stereo and 6-channel files, int16 and float32, three rates, one
broken file): every output file equals the single-process result of the same chain,
sample for sample, the Parquet-manifest mode too, and the broken file is reported while
the others are written. The GPU mode (`--gpus 1`) on this machine, which has no GPU,
falls back to CPU actors in the same three-stage pipeline (decode, stacked filtering,
encode) and says so, with the same outputs. Skipped without ray (scripts/install-deps.sh installs it) unless
FERROFX_REQUIRE_PYTHON_PACKAGE=1."""

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.io import wavfile

if os.environ.get("FERROFX_REQUIRE_PYTHON_PACKAGE") == "1":
    import ferrofx
    import ray  # noqa: F401
else:
    ferrofx = pytest.importorskip("ferrofx")
    pytest.importorskip("ray")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "python", "ray_filter_corpus.py")
CHAIN = os.path.join(ROOT, "examples", "chains", "demo.json")
sys.path.insert(0, os.path.dirname(SCRIPT))
from ray_filter_corpus import decode_wav  # noqa: E402


def make_corpus(d):
    rng = np.random.default_rng(11)
    files = []
    for i, (fs, ch, n, kind) in enumerate([(48_000, 2, 30_000, "f32"), (44_100, 1, 12_345, "i16"), (96_000, 6, 20_000, "f32"),
                                          (48_000, 2, 1, "i16"), (44_100, 2, 70_000, "f32"), (96_000, 1, 5_000, "i16")]):
        x = (rng.standard_normal((n, ch)) * 0.2).astype(np.float32)
        if kind == "i16":
            x = (x * 32767).astype(np.int16)
        path = os.path.join(d, f"clip{i}.wav")
        wavfile.write(path, fs, x if ch > 1 else x[:, 0])
        files.append(path)
    with open(os.path.join(d, "broken.wav"), "wb") as f:
        f.write(b"RIFF\x00\x00\x00\x00WAVEjunk")
    return files


def run(args):
    return subprocess.run([sys.executable, SCRIPT, "--chain", CHAIN, "--num-cpus", "2"] + args, capture_output=True, text=True, timeout=600)


def check_outputs(files, out):
    chain = ferrofx.Chain.from_json(CHAIN)
    for path in files:
        with open(path, "rb") as f:
            fs, x = decode_wav(f.read())
        want = chain.process(x, fs, threads=1)
        got_fs, got = wavfile.read(os.path.join(out, os.path.basename(path)))
        got = got.T if got.ndim == 2 else got[None]
        assert got_fs == fs and got.dtype == np.float32, path
        assert np.array_equal(got, want), f"{path}: differs from the single-process result"


def test_ray_output_equals_single_process_file_for_file(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = make_corpus(str(corpus))
    out = tmp_path / "out"
    r = run(["--input", str(corpus), "--output", str(out)])
    print(r.stdout[-2000:], r.stderr[-2000:])
    assert r.returncode == 1, "the broken file fails the run"
    assert "broken.wav: ValueError: not a readable WAV file" in r.stderr and "6 files filtered, 1 failed" in r.stdout
    assert "on 2 workers" in r.stdout and "hours of audio per second" in r.stdout
    check_outputs(files, str(out))
    assert not (out / "broken.wav").exists()


def test_parquet_manifest(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = make_corpus(str(corpus))[:3]
    manifest = tmp_path / "files.parquet"
    pq.write_table(pa.table({"path": files}), manifest)
    out = tmp_path / "out"
    r = run(["--manifest", str(manifest), "--output", str(out)])
    print(r.stdout[-2000:], r.stderr[-2000:])
    assert r.returncode == 0, r.stderr[-2000:]
    check_outputs(files, str(out))


def test_gpu_mode_without_a_gpu_falls_back_to_cpu_actors_with_the_same_outputs(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = make_corpus(str(corpus))
    # two more files of one rate and shape: stacked into one call in the filter stage
    rng = np.random.default_rng(12)
    for i in range(2):
        path = os.path.join(str(corpus), f"same{i}.wav")
        wavfile.write(path, 48_000, (rng.standard_normal((30_000, 2)) * 0.2).astype(np.float32))
        files.append(path)
    out = tmp_path / "out"
    r = run(["--input", str(corpus), "--output", str(out), "--gpus", "1", "--batch-size", "16"])
    print(r.stdout[-2000:], r.stderr[-2000:])
    assert r.returncode == 1, "the broken file fails the run"
    assert "no GPU in the Ray cluster: the filter stage runs on CPU actors" in r.stderr
    assert "broken.wav: ValueError: not a readable WAV file" in r.stderr and "8 files filtered, 1 failed" in r.stdout
    assert "CPU actors" in r.stdout and "per CPU core" in r.stdout
    check_outputs(files, str(out))
    assert not (out / "broken.wav").exists()
