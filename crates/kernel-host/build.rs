//! Compiles src/host.c (the CUDA kernels' structure, run thread by thread on the host,
//! over the kernels' own math headers in kernels/) with the system C compiler.
fn main() {
    // At run time: a build script compiled once may serve several checkouts.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let kernels = std::path::Path::new(&manifest).join("../../kernels");
    for f in ["fx_cuda.h", "fx_prec_float.h", "fx_prec_double.h", "fx_prec_end.h", "sos_fused_kernels.h", "sos_math.h", "sos_step.h", "sos_fused_math.h", "sos_fused_step.h", "sos_pipe_math.h", "fir_math.h", "fft_math.h", "convert_math.h", "adjoint_math.h"] {
        println!("cargo:rerun-if-changed={}", kernels.join(f).display());
    }
    println!("cargo:rerun-if-changed=src/host.c");
    println!("cargo:rerun-if-changed=src/fused_host.h");
    cc::Build::new()
        .file("src/host.c")
        .include(&kernels)
        .flag_if_supported("-std=c11")
        // Only the kernels' explicit fmaf calls fuse, as on the device (-ffp-contract=off
        // in scripts/build-ptx.sh).
        .flag_if_supported("-ffp-contract=off")
        .opt_level(2)
        .compile("ferrofx_kernel_host");
}
