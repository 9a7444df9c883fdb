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

GPU mode (`--gpus N`): three stages. CPU workers decode the files; an actor pool of N
actors, one GPU each, moves each batch to its GPU (PyTorch), stacks the files of the
same rate and shape into one `(files, channels, frames)` tensor and filters it there
(FerroFX's device path: the samples stay on the GPU between the copy in and the copy
out); CPU workers encode and write. Where the cluster has no GPU, or the actors cannot
use one (no PyTorch with CUDA), the same pipeline runs its filter stage on CPU actors
instead and says so. The summary gives hours of audio filtered per second, per GPU (or
per CPU core) and in all.

Needs: ray[data], numpy, scipy (for WAV reading and writing), ferrofx; PyTorch with
CUDA on the GPU nodes for `--gpus`.
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


def decode_batch(batch: dict) -> dict:
    """GPU mode's first stage (CPU workers): each file's samples, rate and shape, or the
    reason it cannot be read."""
    out = {"path": [], "rate": [], "samples": [], "error": []}
    datas = batch["bytes"] if "bytes" in batch else [None] * len(batch["path"])
    for path, data in zip(batch["path"], datas):
        path = str(path)
        out["path"].append(path)
        try:
            if data is None:
                with open(path, "rb") as f:
                    data = f.read()
            fs, x = decode_wav(bytes(data))
            out["rate"].append(fs)
            out["samples"].append(x.reshape(-1))  # flat: files differ in shape
            out["error"].append(f"shape {x.shape[0]} {x.shape[1]}")
        except Exception as e:
            out["rate"].append(0)
            out["samples"].append(np.zeros(0, np.float32))
            out["error"].append(f"{type(e).__name__}: {e}")
    return out


def _shape(note: str) -> tuple[int, int] | None:
    parts = note.split()
    return (int(parts[1]), int(parts[2])) if len(parts) == 3 and parts[0] == "shape" else None


class FilterActor:
    """GPU mode's middle stage: one actor per GPU (or per CPU core in the fallback). Files
    of one rate and shape in a batch are stacked and filtered in one call on the device."""

    def __init__(self, chain_text: str, device: str):
        import ferrofx

        self.chain = ferrofx.Chain.from_json(chain_text)
        self.device = device
        if device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("this actor was given a GPU but PyTorch sees no CUDA device")
            self.torch = torch

    def __call__(self, batch: dict) -> dict:
        n = len(batch["path"])
        shapes = [_shape(str(e)) for e in batch["error"]]
        filtered = [np.zeros(0, np.float32)] * n
        errors = ["" if s else str(e) for s, e in zip(shapes, batch["error"])]
        groups: dict = {}
        for i, s in enumerate(shapes):
            if s:
                groups.setdefault((int(batch["rate"][i]), s), []).append(i)
        for (fs, (ch, frames)), idx in groups.items():
            stack = np.stack([np.asarray(batch["samples"][i], dtype=np.float32).reshape(ch, frames) for i in idx])
            try:
                if self.device == "cuda":
                    x = self.torch.from_numpy(stack).cuda(non_blocking=False)
                    y = self.chain.process(x, fs).cpu().numpy()
                else:
                    y = self.chain.process(stack, fs, threads=1)
                for k, i in enumerate(idx):
                    filtered[i] = y[k].reshape(-1)
            except Exception as e:
                for i in idx:
                    errors[i] = f"{type(e).__name__}: {e}"
        return {"path": list(batch["path"]), "rate": list(batch["rate"]), "samples": filtered,
                "channels": [s[0] if s else 0 for s in shapes], "error": errors}


def encode_batch(batch: dict, out_dir: str) -> dict:
    """GPU mode's last stage (CPU workers): the filtered files written."""
    from scipy.io import wavfile

    out = {"path": [], "output": [], "rate": [], "channels": [], "frames": [], "error": []}
    for path, fs, y, ch, err in zip(batch["path"], batch["rate"], batch["samples"], batch["channels"], batch["error"]):
        path, err, ch = str(path), str(err), int(ch)
        target = os.path.join(out_dir, os.path.basename(path))
        frames = 0
        if not err:
            try:
                y = np.asarray(y, dtype=np.float32).reshape(ch, -1)
                frames = y.shape[1]
                tmp = target + ".part"
                wavfile.write(tmp, int(fs), np.ascontiguousarray(y.T))
                os.replace(tmp, target)
            except Exception as e:
                err = f"{type(e).__name__}: {e}"
        ok = not err
        out["path"].append(path)
        out["output"].append(target)
        out["rate"].append(int(fs) if ok else 0)
        out["channels"].append(ch if ok else 0)
        out["frames"].append(frames if ok else 0)
        out["error"].append(err)
    return out


def gpu_device(requested: int) -> tuple[str, int, str]:
    """What the GPU mode's filter stage runs on: ("cuda", actors, "") where the cluster
    has GPUs, else ("cpu", actors, why)."""
    import ray

    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus == 0:
        cpus = max(1, int(ray.available_resources().get("CPU", 1)))
        return "cpu", max(1, cpus // 2), "no GPU in the Ray cluster: the filter stage runs on CPU actors"
    return "cuda", min(requested, gpus), ""


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
    ap.add_argument("--gpus", type=int, default=0, help="GPU mode: filter on this many GPUs (one actor each)")
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
    where = f"{workers} workers"
    per = ("CPU core", workers)
    if args.gpus > 0:
        device, actors, why = gpu_device(args.gpus)
        if why:
            print(f"GPU mode: {why} ({actors} actors)", file=sys.stderr)
        decoded = ds.map_batches(decode_batch, batch_size=args.batch_size, num_cpus=1)
        filtered = decoded.map_batches(
            FilterActor,
            fn_constructor_kwargs={"chain_text": chain_text, "device": device},
            batch_size=args.batch_size,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_gpus=1 if device == "cuda" else 0,
            num_cpus=1 if device == "cpu" else 0,
        )
        done = filtered.map_batches(encode_batch, fn_kwargs={"out_dir": os.path.abspath(args.output)},
                                    batch_size=args.batch_size, num_cpus=1).take_all()
        where = f"{actors} {'GPU' if device == 'cuda' else 'CPU'} actors and {workers} CPU workers"
        if device == "cuda":
            per = ("GPU", actors)
    else:
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
    wall = time.time() - t0
    hours_per_s = seconds / 3600.0 / max(wall, 1e-9)
    print(f"{len(done) - failed} files filtered, {failed} failed, {seconds:.1f} s of audio in {wall:.1f} s on {where}; "
          f"{hours_per_s:.4f} hours of audio per second, {hours_per_s / per[1]:.4f} per {per[0]} (start-up included)")
    ray.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
