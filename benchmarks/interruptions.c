// What a machine takes from a thread that never sleeps: spins on one CPU reading the
// monotonic clock and counts the gaps between two reads longer than a threshold (an
// interrupt, an inter-processor call, the hypervisor running something else), with a
// histogram of their lengths. On a VM this is the floor under any block's p99.9: a block
// of T microseconds is hit with probability about T times the gap rate.
//
//   gcc -O2 -o /tmp/interruptions benchmarks/interruptions.c
//   /tmp/interruptions [CPU=1] [SECONDS=5] [THRESHOLD_NS=1000]
//
// Compare /proc/interrupts before and after for the CPU to see which of the gaps the
// guest kernel counts (its timer tick, at CONFIG_HZ, is usually most of them).
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    int cpu = argc > 1 ? atoi(argv[1]) : 1;
    double seconds = argc > 2 ? atof(argv[2]) : 5.0;
    uint64_t threshold_ns = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "cannot pin to CPU %d\n", cpu);
        return 1;
    }
    static const uint64_t edges_ns[] = {2000, 5000, 10000, 20000, 50000, 100000, 1000000, UINT64_MAX};
    static const char *labels[] = {"< 2 us", "2-5 us", "5-10 us", "10-20 us", "20-50 us", "50-100 us", "0.1-1 ms", "> 1 ms"};
    uint64_t counts[8] = {0}, gaps = 0, gap_ns = 0;
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), prev = start;
    for (;;) {
        uint64_t t = now_ns();
        uint64_t d = t - prev;
        if (d > threshold_ns) {
            int k = 0;
            while (d >= edges_ns[k]) k++;
            counts[k]++;
            gaps++;
            gap_ns += d;
        }
        prev = t;
        if (t > end) break;
    }
    printf("CPU %d, %.1f s: %llu gaps over %llu ns (%.2f per ms), %.3f %% of the time\n", cpu, seconds,
           (unsigned long long)gaps, (unsigned long long)threshold_ns, gaps / (seconds * 1000.0), 100.0 * gap_ns / (seconds * 1e9));
    for (int k = 0; k < 8; k++) printf("  %-10s %llu\n", labels[k], (unsigned long long)counts[k]);
    return 0;
}
