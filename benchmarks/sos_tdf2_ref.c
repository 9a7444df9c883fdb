/* The hand-written C reference of the CPU-speed issue: float32 transposed direct form II,
 * channels in SIMD lanes (interleaved frames, the channel loop innermost so the compiler
 * vectorises across channels), built with -O3 -march=native.
 *
 * usage: sos_tdf2_ref SOS_FILE CHANNELS FRAMES RUNS
 *   SOS_FILE: one section per line, "b0 b1 b2 a0 a1 a2".
 * Prints: median_s min_s max_rel_err_vs_f64
 * (the error column shows why this structure is not FerroFX's: it is measured against a
 * float64 run of the same cascade on the same input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#define MAX_SECTIONS 64
#define MAX_CHANNELS 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void cascade_f32(const float (*c)[5], int sections, int channels, long frames, float *x) {
    float s1[MAX_SECTIONS][MAX_CHANNELS] = {{0}}, s2[MAX_SECTIONS][MAX_CHANNELS] = {{0}};
    for (long n = 0; n < frames; n++) {
        float *v = x + n * channels;
        for (int s = 0; s < sections; s++) {
            const float b0 = c[s][0], b1 = c[s][1], b2 = c[s][2], a1 = c[s][3], a2 = c[s][4];
            float *p1 = s1[s], *p2 = s2[s];
            for (int ch = 0; ch < channels; ch++) {
                float y = b0 * v[ch] + p1[ch];
                p1[ch] = b1 * v[ch] - a1 * y + p2[ch];
                p2[ch] = b2 * v[ch] - a2 * y;
                v[ch] = y;
            }
        }
    }
}

static void cascade_f64(const double (*c)[5], int sections, int channels, long frames, const float *x, double *out) {
    static double s1[MAX_SECTIONS][MAX_CHANNELS], s2[MAX_SECTIONS][MAX_CHANNELS];
    memset(s1, 0, sizeof s1);
    memset(s2, 0, sizeof s2);
    for (long n = 0; n < frames; n++) {
        for (int ch = 0; ch < channels; ch++) {
            double v = x[n * channels + ch];
            for (int s = 0; s < sections; s++) {
                double y = c[s][0] * v + s1[s][ch];
                s1[s][ch] = c[s][1] * v - c[s][3] * y + s2[s][ch];
                s2[s][ch] = c[s][2] * v - c[s][4] * y;
                v = y;
            }
            out[n * channels + ch] = v;
        }
    }
}

static int cmp(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SOS_FILE CHANNELS FRAMES RUNS\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    double cd[MAX_SECTIONS][5];
    float cf[MAX_SECTIONS][5];
    int sections = 0;
    double r[6];
    while (sections < MAX_SECTIONS && fscanf(f, "%lf %lf %lf %lf %lf %lf", &r[0], &r[1], &r[2], &r[3], &r[4], &r[5]) == 6) {
        double k[5] = {r[0] / r[3], r[1] / r[3], r[2] / r[3], r[4] / r[3], r[5] / r[3]};
        for (int i = 0; i < 5; i++) { cd[sections][i] = k[i]; cf[sections][i] = (float)k[i]; }
        sections++;
    }
    fclose(f);
    int channels = atoi(argv[2]);
    long frames = atol(argv[3]);
    int runs = atoi(argv[4]);
    if (channels < 1 || channels > MAX_CHANNELS || frames < 1 || runs < 1) return 2;
    long n = frames * channels;
    float *input = malloc(n * sizeof(float)), *x = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    unsigned long long st = 0x9E3779B97F4A7C15ull;
    for (long i = 0; i < n; i++) {
        st ^= st >> 12; st ^= st << 25; st ^= st >> 27;
        input[i] = (float)((double)((st * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    double times[64];
    if (runs > 64) runs = 64;
    for (int k = 0; k <= runs; k++) {
        memcpy(x, input, n * sizeof(float));
        double t0 = now();
        cascade_f32((const float (*)[5])cf, sections, channels, frames, x);
        double dt = now() - t0;
        if (k > 0) times[k - 1] = dt;
    }
    qsort(times, runs, sizeof(double), cmp);
    cascade_f64((const double (*)[5])cd, sections, channels, frames, input, ref);
    double peak = 0, err = 0;
    for (long i = 0; i < n; i++) {
        peak = fmax(peak, fabs(ref[i]));
        err = fmax(err, fabs(ref[i] - x[i]));
    }
    printf("%.9f %.9f %.3e\n", times[runs / 2], times[0], err / peak);
    return 0;
}
