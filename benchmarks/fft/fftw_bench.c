/* FFTW's single-precision complex FFT at the partitioned FIR's sizes, timed like
 * examples/fft_probe.rs times rustfft: in place, a forward and an inverse transform per
 * round, the fastest of REPS batches of rounds (wall clock), one thread.
 *
 * Build and run (benchmarks/fft/compare.sh does both, beside the Rust side):
 *   gcc -O2 -o fftw_bench fftw_bench.c -lfftw3f -lm
 *   ./fftw_bench [measure|patient] N...      one JSON line per size
 * FFTW is GPL-2.0-or-later: this measures it, FerroFX does not link it.
 */
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: fftw_bench measure|patient N...\n");
        return 2;
    }
    unsigned flags = strcmp(argv[1], "patient") == 0 ? FFTW_PATIENT : FFTW_MEASURE;
    for (int a = 2; a < argc; a++) {
        int n = atoi(argv[a]);
        fftwf_complex *buf = fftwf_alloc_complex(n);
        fftwf_plan fwd = fftwf_plan_dft_1d(n, buf, buf, FFTW_FORWARD, flags);
        fftwf_plan inv = fftwf_plan_dft_1d(n, buf, buf, FFTW_BACKWARD, flags);
        for (int i = 0; i < n; i++) {
            buf[i][0] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
            buf[i][1] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
        }
        /* About 20 ms per batch. */
        int rounds = (int)(2e7 / (5.0 * n * (__builtin_ctz(n) + 1))) + 1;
        double best = 1e30;
        for (int rep = 0; rep < 15; rep++) {
            double t0 = now();
            for (int r = 0; r < rounds; r++) {
                fftwf_execute(fwd);
                fftwf_execute(inv);
                /* FFTW leaves the round trip scaled by n; keep the data bounded. */
                buf[0][0] *= 1.0f / (float)n;
            }
            double dt = (now() - t0) / rounds;
            if (dt < best) best = dt;
        }
        printf("{\"library\":\"fftw %s\",\"n\":%d,\"ns_per_pair\":%.1f,\"ns_per_point\":%.3f}\n",
               argv[1], n, best * 1e9, best * 1e9 / n);
        fftwf_destroy_plan(fwd);
        fftwf_destroy_plan(inv);
        fftwf_free(buf);
    }
    return 0;
}
