"""Filters a corpus of audio files with a FerroFX chain on Ray Data.

    python examples/python/ray_filter_corpus.py --chain CHAIN.json --input DIR --output DIR
    python examples/python/ray_filter_corpus.py --chain CHAIN.json --manifest files.parquet --output DIR

Reads every `.wav` file under `--input` (or the files listed in the `path` column of a
Parquet manifest), filters each one with the chain at the file's own sample rate from
zero state, and writes a float32 WAV of the same name, rate, channels and length to
`--output`. Integer PCM is scaled to [-1, 1). Each Ray task filters a batch of files
with FerroFX's engine (the GIL released). It prints one line per file and a summary.

Locally, `--num-cpus N` starts Ray on this machine with N workers (the default: all
cores). On a cluster, start the script with `--address auto` (or `ray://head:10001`) on
a machine of the cluster; the input, manifest and output paths must then name storage
every node sees (NFS, or a mounted bucket), and every node needs `pip install ./python`
(or the built wheel) in its environment, e.g. through Ray's runtime environment.

Needs: ray[data], numpy, scipy (for WAV reading and writing), ferrofx.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time

import numpy as np


def decode_wav(data: bytes) -> tuple[int, np.ndarray]:
    """A WAV file's rate and samples as float32 (channels, frames)."""
    from scipy.io import wavfile

    try:
        fs, x = wavfile.read(io.BytesIO(data))
    except Exception as e:  # scipy raises several kinds for damaged files
        raise ValueError(f"not a readable WAV file ({type(e).__name__}: {e})") from None
    if x.ndim == 1:
        x = x[:, None]
    if np.issubdtype(x.dtype, np.integer):
        if x.dtype == np.uint8:
            x = (x.astype(np.float32) - 128.0) / 128.0
        else:
            x = x.astype(np.float32) / float(-np.iinfo(x.dtype).min)
    return int(fs), np.ascontiguousarray(x.T, dtype=np.float32)


def filter_file(chain, data: bytes, out_path: str) -> tuple[int, int, int]:
    """Filters one WAV file's bytes into `out_path`; returns (rate, channels, frames)."""
    from scipy.io import wavfile

    fs, x = decode_wav(data)
    y = chain.process(x, fs, threads=1)
    tmp = out_path + ".part"
    wavfile.write(tmp, fs, np.ascontiguousarray(y.T))
    os.replace(tmp, out_path)  # a reader never sees half a file
    return fs, x.shape[0], x.shape[1]


def filter_batch(batch: dict, chain_text: str, out_dir: str) -> dict:
    """Filters one batch of files (a Ray task): rows of `path` and, when read by Ray,
    `bytes`; one output row per file, with its error if it failed."""
    import ferrofx

    chain = ferrofx.Chain.from_json(chain_text)
    out = {"path": [], "output": [], "rate": [], "channels": [], "frames": [], "error": []}
    datas = batch["bytes"] if "bytes" in batch else [None] * len(batch["path"])
    for path, data in zip(batch["path"], datas):
        path = str(path)
        target = os.path.join(out_dir, os.path.basename(path))
        out["path"].append(path)
        out["output"].append(target)
        try:
            if data is None:
                with open(path, "rb") as f:
                    data = f.read()
            fs, ch, n = filter_file(chain, bytes(data), target)
            out["rate"].append(fs)
            out["channels"].append(ch)
            out["frames"].append(n)
            out["error"].append("")
        except Exception as e:  # one bad file is reported, the corpus goes on
            out["rate"].append(0)
            out["channels"].append(0)
            out["frames"].append(0)
            out["error"].append(f"{type(e).__name__}: {e}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", required=True, help="chain file (JSON)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", help="folder of .wav files")
    src.add_argument("--manifest", help="Parquet file with a 'path' column")
    ap.add_argument("--output", required=True, help="folder for the filtered files")
    ap.add_argument("--num-cpus", type=int, default=None, help="local Ray: number of workers")
    ap.add_argument("--address", default=None, help="a Ray cluster to join (e.g. auto)")
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args(argv)

    import ferrofx
    import ray

    with open(args.chain, encoding="utf-8") as f:
        chain_text = f.read()
    ferrofx.Chain.from_json(chain_text)  # a bad chain fails here, before Ray starts
    os.makedirs(args.output, exist_ok=True)
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    workers = max(1, int(ray.available_resources().get("CPU", 1)))
    t0 = time.time()
    if args.manifest:
        ds = ray.data.read_parquet(args.manifest, columns=["path"])
    else:
        ds = ray.data.read_binary_files(args.input, include_paths=True, file_extensions=["wav"])
    # Tasks (not actors): nothing holds a core while waiting, so reading and filtering
    # share the workers.
    done = ds.map_batches(
        filter_batch,
        fn_kwargs={"chain_text": chain_text, "out_dir": os.path.abspath(args.output)},
        batch_size=args.batch_size,
        num_cpus=1,
    ).take_all()
    failed = 0
    for row in sorted(done, key=lambda r: r["path"]):
        if row["error"]:
            failed += 1
            print(f"error: {row['path']}: {row['error']}", file=sys.stderr)
        else:
            print(f"wrote {row['output']} ({row['frames']} frames, {row['channels']} channels, {row['rate']} Hz)")
    seconds = sum(r["frames"] / r["rate"] for r in done if r["rate"])
    print(f"{len(done) - failed} files filtered, {failed} failed, {seconds:.1f} s of audio in {time.time() - t0:.1f} s on {workers} workers")
    ray.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
