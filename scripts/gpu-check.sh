#!/usr/bin/env bash
# Runs on the GPU machine lent by the `device` tool, over what `scripts/gpu-carry.sh`
# prepared (carry [".gpu-carry", ".gl"]): the CUDA and wgpu test binaries against the
# SciPy reference set, the plugin's GPU-path retune test, a CUDA and a CPU render of the demo compared, and the
# command-line.md workloads on CPU, wgpu and CUDA in one run (60 s cells, 3 runs each;
# realtime blocks of 32-4096 frames; CUDA's offline workloads also without the copy
# stream's overlap, --cuda-overlap off). Every step has its own time limit, so one
# that hangs costs only its own share, and the whole run keeps to a deadline (below); logs
# go to $OUT (at most 8 files come back).
#   scripts/gpu-check.sh [goals|all|cuda|resident|throughput]
# `goals` (run it first: a session's whole device time is 15 minutes, start-up included)
# takes one figure for each goal of issues 43 and 44 in about five minutes, each opt-in
# kernel beside its default in the same call, so a rerun still fits (see below).
# `cuda` skips the wgpu tests and bench and the demo render (a rerun after a CUDA
# change) and times realtime_block once more with every block on the scan kernel
# (--cuda-sequential-max 0) into bench_cuda_scan.json. `resident` runs only the
# device-resident tests and benchmarks (see below); `throughput` the fused scan, the
# warp pipeline and the registered host buffers against the defaults (see below). The
# GPU's SM clock is sampled during the CUDA bench (info.log).
set -u
mode="${1:-all}"
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-/tmp/gpu-check}"
mkdir -p "$OUT"
cd "$root/.gpu-carry"
[ -f pack.tar.gz ] && tar xzf pack.tar.gz && rm pack.tar.gz
info="$OUT/info.log"
# The Vulkan loader for wgpu (the device image has the NVIDIA ICD but maybe no loader).
if [ -d "$root/.gl" ] && ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"
{
    date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
    lscpu | grep -E 'Model name|^CPU\(s\)'; ldconfig -p | grep -E 'libcuda.so|libvulkan.so' | head -4
} > "$info" 2>&1
export FERROFX_REFERENCE_DIR="$PWD/reference" FERROFX_REQUIRE_CUDA=1 FERROFX_REQUIRE_GPU=1
# The whole script ends within GPU_CHECK_DEADLINE_S seconds (default 560: one device call
# of at most 600 s, with time to pack the results): each step's limit is cut to what is
# left, and a step with under 10 s left is skipped and said so (info.log).
deadline="${GPU_CHECK_DEADLINE_S:-560}"
step() { # name, seconds, command...
    local name=$1 limit=$2; shift 2
    local left=$((deadline - SECONDS))
    if [ "$left" -lt 10 ]; then
        echo "== $name: skipped, ${left} s left of the ${deadline} s deadline" | tee -a "$info" >&2
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0=$SECONDS
    timeout -k 5 "$limit" "$@"
    echo "== $name: exit $?, $((SECONDS - t0)) s (limit $limit s)" | tee -a "$info" >&2
}
# `goals`: every goal once, the most important first, within GPU_CHECK_DEADLINE_S (330 s
# by default here, so that a rerun of the whole fits a session's device time): the fused
# kernels' results on the card (float32 and float64) as a gate; the device-resident
# workloads beside a device copy and the whole CPU (default, then fused); the Python peers
# and the PyTorch layer (TorchFX, CuPy, torchaudio; the batch case; compile and backward)
# with the fused scan, which the device-resident goals assume; host-to-host beside the
# copy floor (default, then fused); the realtime round trip (default, then the pipeline).
# The raw JSON comes back packed (results.tgz).
if [ "$mode" = goals ]; then
    deadline="${GPU_CHECK_DEADLINE_S:-330}"
    step gpu_cuda_fused 40 ./gpu_cuda fused --nocapture --test-threads=1 > "$OUT/gpu_goals.log" 2>&1
    step gpu_cuda_float64_fused 25 ./gpu_cuda_float64 fused --nocapture --test-threads=1 >> "$OUT/gpu_goals.log" 2>&1
    step bench_resident 45 ./xtask bench --resident --backend cuda --backend wgpu --runs 3 --json > "$OUT/bench_resident.json" 2>> "$OUT/bench.err"
    step bench_resident_fused 45 ./xtask bench --resident --backend cuda --backend wgpu --cuda-fused 8 --wgpu-fused 8 --runs 3 --json > "$OUT/bench_resident_fused.json" 2>> "$OUT/bench.err"
    if ls wheels/*.whl > /dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/ffx wheels/*.whl 2>> "$OUT/gpu_goals.log"
        [ -d "$root/.whl" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$root"/.whl/*.whl 2>> "$OUT/bench.err"
        FERROFX_CUDA_FUSED=8 PYTHONPATH=/tmp/ffx:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 step python_gpu_fused 150 python3 "$root/benchmarks/python_gpu.py" --build-cuda-ext --seconds 60 --runs 3 > "$OUT/python_gpu_fused.json" 2>> "$OUT/bench.err"
    fi
    step bench_cuda 40 ./xtask bench --backend cuda --workload api_chain --workload iir_chain --workload fir_chain --workload long_fir --runs 3 --json > "$OUT/bench_cuda.json" 2>> "$OUT/bench.err"
    step bench_cuda_fused 40 ./xtask bench --backend cuda --cuda-fused 8 --workload api_chain --workload iir_chain --workload fir_chain --workload long_fir --runs 3 --json > "$OUT/bench_cuda_fused.json" 2>> "$OUT/bench.err"
    step bench_realtime 30 ./xtask bench --backend cuda --workload realtime_block --runs 3 --json > "$OUT/bench_realtime.json" 2>> "$OUT/bench.err"
    step bench_realtime_pipeline 30 ./xtask bench --backend cuda --workload realtime_block --cuda-pipeline 4096 --runs 3 --json > "$OUT/bench_realtime_pipeline.json" 2>> "$OUT/bench.err"
    cd "$OUT" && [ "$(ls | wc -l)" -gt 8 ] && tar czf results.tgz --remove-files $(ls | grep -vx results.tgz)
    exit 0
fi
# `throughput`: the kernels and copies built blind and off by default (the fused cascade
# scan on CUDA and wgpu, the warp pipeline, registered host buffers): their tests, then
# each benchmark with the default and with the option, one after the other in the same
# call, so the ratios that decide the defaults come from one run (the host-to-host
# variants on api_chain, iir_chain and long_fir only, to fit the call). Run it first on
# a device, `resident` next.
if [ "$mode" = throughput ]; then
    step gpu_cuda_fused 60 ./gpu_cuda fused registered --nocapture --test-threads=1 > "$OUT/gpu_throughput.log" 2>&1
    step gpu_cuda_resident_fused 60 ./gpu_cuda_resident fused --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    # The float64 fused kernels (the PyTorch operator's rows with FERROFX_CUDA_FUSED).
    step gpu_cuda_float64_fused 30 ./gpu_cuda_float64 fused --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    # The warp pipeline for short blocks (the realtime round trip): its tests, then the
    # realtime blocks with the default kernels and with it.
    step gpu_cuda_pipeline 40 ./gpu_cuda pipeline --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    step gpu_cuda_resident_pipeline 30 ./gpu_cuda_resident pipeline --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    step gpu_wgpu_pipeline 40 ./gpu_wgpu pipeline --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    step gpu_resident_pipeline 30 ./gpu_resident pipeline --nocapture --test-threads=1 >> "$OUT/gpu_throughput.log" 2>&1
    step bench_realtime 60 ./xtask bench --backend cuda --backend wgpu --workload realtime_block --json > "$OUT/bench_realtime.json" 2>> "$OUT/bench.err"
    step bench_realtime_pipeline 60 ./xtask bench --backend cuda --backend wgpu --workload realtime_block --cuda-pipeline 4096 --wgpu-pipeline 4096 --json > "$OUT/bench_realtime_pipeline.json" 2>> "$OUT/bench.err"
    step bench_resident 80 ./xtask bench --resident --backend cuda --backend wgpu --runs 5 --json > "$OUT/bench_resident.json" 2>> "$OUT/bench.err"
    step bench_resident_fused 80 ./xtask bench --resident --backend cuda --backend wgpu --cuda-fused 8 --wgpu-fused 8 --runs 5 --json > "$OUT/bench_resident_fused.json" 2>> "$OUT/bench.err"
    step bench_cuda 90 ./xtask bench --backend cuda --duration-s 60 --runs 3 --json > "$OUT/bench_cuda.json" 2>> "$OUT/bench.err"
    step bench_cuda_fused 90 ./xtask bench --backend cuda --cuda-fused 8 --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_fused.json" 2>> "$OUT/bench.err"
    step bench_cuda_registered 90 ./xtask bench --backend cuda --cuda-register-host on --workload api_chain --workload iir_chain --workload long_fir --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_registered.json" 2>> "$OUT/bench.err"
    # The staging slots write-combined, as before 2026-11-28 (bench_cuda.json: cached).
    step bench_cuda_staging_wc 90 ./xtask bench --backend cuda --cuda-staging-wc on --workload api_chain --workload iir_chain --workload long_fir --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_staging_wc.json" 2>> "$OUT/bench.err"
    # The host-to-host blocks chosen by the cost model (bench_cuda.json) against the
    # fixed 65,536 frames they replaced.
    step bench_cuda_fixed_block 90 ./xtask bench --backend cuda --gpu-block 65536 --workload api_chain --workload iir_chain --workload long_fir --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_fixed_block.json" 2>> "$OUT/bench.err"
    exit 0
fi
# `resident`: only the device-resident path, first (the data-on-the-device tests, the
# Python package on CUDA tensors, the resident benchmark and the Python peers), for a
# device session that must measure the newest work within its minutes.
if [ "$mode" = resident ]; then
    # Float64 on CUDA, device memory in and out, the Python package's device arrays and
    # PyTorch layer, then the benchmarks (the Python peers also with the fused scan),
    # wgpu last.
    step gpu_cuda_float64 60 ./gpu_cuda_float64 --nocapture --test-threads=1 > "$OUT/gpu_resident.log" 2>&1
    step gpu_cuda_resident 60 ./gpu_cuda_resident --nocapture --test-threads=1 >> "$OUT/gpu_resident.log" 2>&1
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/ffx wheels/*.whl 2>> "$OUT/gpu_resident.log"
    PYTHONPATH=/tmp/ffx step python_device 90 python3 "$root/tests/python/test_device.py" >> "$OUT/gpu_resident.log" 2>&1
    # SciPy's functions on CUDA tensors and CuPy arrays (ferrofx/_on_device.py).
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/pyt pywheels/*.whl 2>> "$OUT/gpu_resident.log"
    PYTHONPATH=/tmp/ffx:/tmp/pyt step python_device_signal 60 python3 -m pytest -q -rs -s "$root/tests/python/test_device_signal.py" >> "$OUT/gpu_resident.log" 2>&1
    # ferrofx.torch on CUDA tensors: forward against SciPy, gradcheck, a layer against the
    # CPU, torch.compile (pytest from the carried wheels).
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/pyt pywheels/*.whl 2>> "$OUT/gpu_resident.log"
    PYTHONPATH=/tmp/ffx:/tmp/pyt step python_torch 150 python3 -m pytest -q -rs -s "$root/tests/python/test_torch.py" >> "$OUT/gpu_resident.log" 2>&1
    # The same CUDA tests with the float64 fused scan on (opt-in, FERROFX_CUDA_FUSED).
    FERROFX_CUDA_FUSED=8 PYTHONPATH=/tmp/ffx:/tmp/pyt step python_torch_fused 60 python3 -m pytest -q -rs -s -k cuda "$root/tests/python/test_torch.py" >> "$OUT/gpu_resident.log" 2>&1
    step bench_resident 90 ./xtask bench --resident --backend cuda --backend wgpu --runs 5 --json > "$OUT/bench_resident.json" 2>> "$OUT/bench.err"
    [ -d "$root/.whl" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$root"/.whl/*.whl 2>> "$OUT/bench.err"
    PYTHONPATH=/tmp/ffx:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 step python_gpu 240 python3 "$root/benchmarks/python_gpu.py" --build-cuda-ext --seconds 60 --runs 5 > "$OUT/python_gpu.json" 2>> "$OUT/bench.err"
    step gpu_resident 60 ./gpu_resident --nocapture --test-threads=1 >> "$OUT/gpu_resident.log" 2>&1
    # The Python peers again with the fused scan on device arrays (FERROFX_CUDA_FUSED).
    FERROFX_CUDA_FUSED=8 PYTHONPATH=/tmp/ffx:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 step python_gpu_fused 200 python3 "$root/benchmarks/python_gpu.py" --build-cuda-ext --seconds 60 --runs 3 > "$OUT/python_gpu_fused.json" 2>> "$OUT/bench.err"
    exit 0
fi
# One test at a time: the router test times real round trips.
# The cases every GPU backend runs (reference cases, long FIRs, offload jobs and
# retunes), then what only CUDA has.
step gpu_backends 180 ./gpu_backends --nocapture --test-threads=1 > "$OUT/gpu_backends.log" 2>&1
step gpu_cuda 120 ./gpu_cuda --nocapture --test-threads=1 > "$OUT/gpu_cuda.log" 2>&1
# Device memory in and out (CUDA; wgpu on the card too): splits equal one call bit for bit.
step gpu_cuda_resident 90 ./gpu_cuda_resident --nocapture --test-threads=1 >> "$OUT/gpu_cuda.log" 2>&1
# Cascades float32 declines, in float64 on the card (kernels/sos64.cu).
step gpu_cuda_float64 90 ./gpu_cuda_float64 --nocapture --test-threads=1 >> "$OUT/gpu_cuda.log" 2>&1
[ "$mode" = all ] && step gpu_resident 90 ./gpu_resident --nocapture --test-threads=1 >> "$OUT/gpu_cuda.log" 2>&1
# The Python package on CUDA tensors and CuPy arrays (its wheel from gpu-carry.sh).
if ls wheels/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/ffx wheels/*.whl 2>> "$OUT/gpu_cuda.log"
    PYTHONPATH=/tmp/ffx step python_device 120 python3 "$root/tests/python/test_device.py" >> "$OUT/gpu_cuda.log" 2>&1
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/pyt pywheels/*.whl 2>> "$OUT/gpu_cuda.log"
    PYTHONPATH=/tmp/ffx:/tmp/pyt step python_torch 180 python3 -m pytest -q -rs -s "$root/tests/python/test_torch.py" >> "$OUT/gpu_cuda.log" 2>&1
fi
# The plugin's GPU path (CUDA first, as the plugin opens it) taking new coefficients.
step gpu_retune 60 ./gpu_retune --nocapture >> "$OUT/gpu_cuda.log" 2>&1
[ "$mode" = all ] && step gpu_wgpu 120 ./gpu_wgpu --nocapture --test-threads=1 > "$OUT/gpu_wgpu.log" 2>&1
# Cascades float32 declines, in float64 on the card (wgpu's SHADER_F64 under Vulkan).
[ "$mode" = all ] && step gpu_float64 90 ./gpu_float64 --nocapture --test-threads=1 >> "$OUT/gpu_wgpu.log" 2>&1
if [ "$mode" = all ]; then
# The demo rendered on CUDA and on the CPU: the largest difference, relative to the peak.
demo_chain="$root/examples/chains/demo.json" demo_in="$root/examples/audio/demo.wav"
step render_cuda 40 ./xtask render --backend cuda --chain "$demo_chain" --output /tmp/demo_cuda.wav "$demo_in" >> "$info" 2>&1
step render_cpu 40 ./xtask render --chain "$demo_chain" --output /tmp/demo_cpu.wav "$demo_in" >> "$info" 2>&1
python3 - >> "$info" 2>&1 <<'PY'
import numpy as np
from scipy.io import wavfile
_, a = wavfile.read('/tmp/demo_cuda.wav'); _, c = wavfile.read('/tmp/demo_cpu.wav')
a, c = a.astype(np.float64), c.astype(np.float64)
print('render cuda vs cpu: max |diff| / peak =', float(np.max(np.abs(a - c)) / np.max(np.abs(c))), 'shape', a.shape)
PY
fi
# Rendering a long file on CUDA (60 s x 8 channels, float32 WAV, the demo chain) with
# the overlapped stream and without it, blocks of 4,096 (the default) and 65,536 frames:
# wall time of the whole render, reading and writing included.
python3 -c "
import numpy as np; from scipy.io import wavfile
wavfile.write('/tmp/long.wav', 48000, (np.random.default_rng(1).standard_normal((48000 * 60, 8)) * 0.1).astype(np.float32))" 2>> "$info"
for bs in 4096 65536; do
    [ $((deadline - SECONDS)) -lt 150 ] && { echo "long renders: skipped, out of time" >> "$info"; break; }
    for ov in on off; do
        t0=$EPOCHREALTIME
        timeout 60 ./xtask render --backend cuda --cuda-overlap $ov --block-size $bs --chain "$root/examples/chains/demo.json" --output /tmp/long_out_$ov.wav /tmp/long.wav > /dev/null 2>> "$info"
        rc=$?
        echo "render 60 s x 8 ch, blocks of $bs, overlap $ov: exit $rc, $(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $t0 }") s" >> "$info"
    done
    cmp -s /tmp/long_out_on.wav /tmp/long_out_off.wav && echo "render, blocks of $bs: the same bytes with and without the overlap" >> "$info" || echo "render, blocks of $bs: OUTPUTS DIFFER" >> "$info"
done
backends="cuda wgpu cpu"
[ "$mode" = all ] || backends="cuda cpu"
nvidia-smi --query-gpu=clocks.sm,utilization.gpu --format=csv,noheader -lms 100 > /tmp/clocks.csv 2>&1 &
clocks=$!
for b in $backends; do
    [ "$b" = cpu ] && kill "$clocks" 2>/dev/null
    step "bench_$b" 90 ./xtask bench --backend "$b" --duration-s 60 --runs 3 --json > "$OUT/bench_$b.json" 2>> "$OUT/bench.err"
    # The offline stream without the overlap (one stream), for the comparison in one run.
    # Data already on the device: the resident path beside a device copy and the whole CPU.
    [ "$b" = cuda ] && step bench_resident 120 ./xtask bench --resident --backend cuda --backend wgpu --runs 5 --json > "$OUT/bench_resident.json" 2>> "$OUT/bench.err"
    # The fused cascade scan (opt-in) on the same workloads and the resident ones.
    [ "$b" = cuda ] && step bench_cuda_fused 90 ./xtask bench --backend cuda --cuda-fused 8 --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_fused.json" 2>> "$OUT/bench.err"
    [ "$b" = cuda ] && step bench_resident_fused 90 ./xtask bench --resident --backend cuda --backend wgpu --cuda-fused 8 --wgpu-fused 8 --runs 5 --json > "$OUT/bench_resident_fused.json" 2>> "$OUT/bench.err"
    [ "$b" = cuda ] && step bench_cuda_registered 90 ./xtask bench --backend cuda --cuda-register-host on --workload api_chain --workload iir_chain --workload long_fir --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_registered.json" 2>> "$OUT/bench.err"
    [ "$b" = cuda ] && step bench_cuda_staged 90 ./xtask bench --backend cuda --cuda-overlap off --duration-s 60 --runs 3 --json > "$OUT/bench_cuda_staged.json" 2>> "$OUT/bench.err"
done
kill "$clocks" 2>/dev/null
sort /tmp/clocks.csv | uniq -c | sort -rn | head -8 | sed 's/^/clocks (samples, SM clock, utilisation): /' >> "$info"
if [ "$mode" != all ]; then
    step bench_cuda_scan 60 ./xtask bench --backend cuda --cuda-sequential-max 0 --workload realtime_block --json > "$OUT/bench_cuda_scan.json" 2>> "$OUT/bench.err"
fi
# TorchFX on the same GPU (its wheels carried in .whl: the machine reaches no registry).
if [ -d "$root/.whl" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$root"/.whl/*.whl 2>> "$OUT/bench.err"
    PYTHONPATH=/tmp/site TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 step torchfx 240 python3 "$root/benchmarks/torchfx_gpu.py" --build-cuda-ext --seconds 60 --runs 5 > "$OUT/torchfx.json" 2>> "$OUT/bench.err"
fi
# The Python peers in one run (FerroFX's device path, TorchFX, torchaudio, CuPy), with the
# wheel from gpu-carry.sh.
if [ -d /tmp/ffx ]; then
    PYTHONPATH=/tmp/ffx:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 step python_gpu 300 python3 "$root/benchmarks/python_gpu.py" --build-cuda-ext --seconds 60 --runs 5 > "$OUT/python_gpu.json" 2>> "$OUT/bench.err"
fi
# At most 8 files come back from the device machine: more go back as one archive
# (tar xzf results.tgz here).
cd "$OUT" && [ "$(ls | wc -l)" -gt 8 ] && tar czf results.tgz --remove-files $(ls | grep -vx results.tgz)
exit 0
