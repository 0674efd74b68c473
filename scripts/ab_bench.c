/*
 * A/B timing of builds of librocprof-trace-decoder.so on one corpus example. Each library is
 * loaded into this one process and its V1 parse calls (one per SE file, as rocprofv3 makes them)
 * are timed in turn, so that every build sees the same machine state: CPU time of this thread,
 * best of 40 rounds of 200 decodes of the whole example.
 *
 * The ISA callback answers nothing, so this times the token walk and the record callbacks, not
 * ISA lookups (`cargo run --release --example bench` covers those).
 *
 *   gcc -O2 -std=gnu11 -I include scripts/ab_bench.c -o ab_bench -ldl
 *   ./ab_bench ../shared/corpus/gfx1100/profile_empty_run_0 old.so new.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rocprof_trace_decoder/rocprof_trace_decoder.h>

#define MAX_SE 64
#define MAX_LIBS 8
#define ROUNDS 40
#define DECODES 200

typedef rocprofiler_thread_trace_decoder_status_t (*parse_data_fn)(
    rocprof_trace_decoder_se_data_callback_t, rocprof_trace_decoder_trace_callback_t,
    rocprof_trace_decoder_isa_callback_t, void *);

struct se_buffer {
    uint8_t *data;
    uint64_t size;
    int handed_out;
    uint64_t records;
};

static uint64_t next_buffer(uint8_t **buffer, uint64_t *size, void *userdata) {
    struct se_buffer *se = userdata;
    if (se->handed_out) return 0;
    se->handed_out = 1;
    *buffer = se->data;
    *size = se->size;
    return 1;
}

static rocprofiler_thread_trace_decoder_status_t count_records(
    rocprofiler_thread_trace_decoder_record_type_t type, void *records, uint64_t count,
    void *userdata) {
    (void)type;
    (void)records;
    ((struct se_buffer *)userdata)->records += count;
    return ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS;
}

static rocprofiler_thread_trace_decoder_status_t no_isa(char *text, uint64_t *memory_size,
                                                        uint64_t *size,
                                                        rocprofiler_thread_trace_decoder_pc_t pc,
                                                        void *userdata) {
    (void)text;
    (void)memory_size;
    (void)size;
    (void)pc;
    (void)userdata;
    return ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT;
}

static double thread_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc - 2 > MAX_LIBS) {
        fprintf(stderr, "usage: %s EXAMPLE_DIR LIB.so [LIB.so ...] (at most %d)\n", argv[0],
                MAX_LIBS);
        return 2;
    }
    struct se_buffer ses[MAX_SE];
    int se_count = 0;
    for (; se_count < MAX_SE; se_count++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/se%d.att", argv[1], se_count);
        FILE *f = fopen(path, "rb");
        if (!f) break;
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        struct se_buffer *se = &ses[se_count];
        se->size = size > 0 ? (uint64_t)size : 0;
        se->data = malloc(se->size + 1);
        if (!se->data || fread(se->data, 1, se->size, f) != se->size) {
            fprintf(stderr, "cannot read %s\n", path);
            return 1;
        }
        fclose(f);
    }
    if (se_count == 0) {
        fprintf(stderr, "no se0.att in %s\n", argv[1]);
        return 1;
    }
    int libs = argc - 2;
    parse_data_fn parse[MAX_LIBS];
    double best[MAX_LIBS];
    for (int l = 0; l < libs; l++) {
        void *lib = dlopen(argv[2 + l], RTLD_NOW | RTLD_LOCAL);
        parse[l] = lib ? (parse_data_fn)dlsym(lib, "rocprof_trace_decoder_parse_data") : NULL;
        if (!parse[l]) {
            fprintf(stderr, "%s: %s\n", argv[2 + l], dlerror());
            return 1;
        }
        best[l] = 1e30;
    }
    uint64_t records[MAX_LIBS] = {0};
    for (int round = 0; round < ROUNDS; round++) {
        for (int l = 0; l < libs; l++) {
            double start = thread_seconds();
            for (int decode = 0; decode < DECODES; decode++) {
                for (int s = 0; s < se_count; s++) {
                    ses[s].handed_out = 0;
                    ses[s].records = 0;
                    parse[l](next_buffer, count_records, no_isa, &ses[s]);
                    records[l] += ses[s].records;
                }
            }
            double micros = (thread_seconds() - start) / DECODES * 1e6;
            if (micros < best[l]) best[l] = micros;
        }
    }
    for (int l = 0; l < libs; l++)
        printf("%-40s %8.2f us per decode, %llu records per decode\n", argv[2 + l], best[l],
               (unsigned long long)(records[l] / ((uint64_t)ROUNDS * DECODES)));
    return 0;
}
