/* Handle life cycles for leak checking (scripts/valgrind.sh): for a few rounds, create a handle,
 * configure it, load and unload a code object, parse every trace given on the command line through
 * V2 (in memory and through the SE callback) and V1, then destroy it.
 * Usage: lifecycle <code_object.elf> <trace.att>...   Prints "N passed, M failed". */
#include <rocprof_trace_decoder/rocprof_trace_decoder.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SUCCESS ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS
#define INVALID_ARGUMENT ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT

typedef struct {
    uint8_t* data;
    uint64_t size;
} file_t;

static file_t read_file(const char* path) {
    file_t f = {NULL, 0};
    FILE* in = fopen(path, "rb");
    if (!in) return f;
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    f.data = malloc(size > 0 ? (size_t)size : 1);
    f.size = fread(f.data, 1, (size_t)size, in);
    fclose(in);
    return f;
}

/* Reads every record the way a client does, so bad pointers show up under valgrind. */
static uint64_t checksum;
static rocprofiler_thread_trace_decoder_status_t on_record(rocprofiler_thread_trace_decoder_record_type_t type,
                                                           void* events, uint64_t size, void* userdata) {
    (void)userdata;
    if (type == ROCPROFILER_THREAD_TRACE_DECODER_RECORD_WAVE) {
        const rocprofiler_thread_trace_decoder_wave_t* wave = events;
        for (uint64_t i = 0; i < wave->instructions_size; i++)
            checksum += (uint64_t)wave->instructions_array[i].time + wave->instructions_array[i].pc.address;
        for (uint64_t i = 0; i < wave->timeline_size; i++) checksum += (uint64_t)wave->timeline_array[i].duration;
    } else if (type == ROCPROFILER_THREAD_TRACE_DECODER_RECORD_OCCUPANCY) {
        const rocprofiler_thread_trace_decoder_occupancy_t* occupancy = events;
        for (uint64_t i = 0; i < size; i++) checksum += occupancy[i].time;
    }
    return SUCCESS;
}

static rocprofiler_thread_trace_decoder_status_t isa_nop(char* text, uint64_t* memory_size, uint64_t* size,
                                                         rocprofiler_thread_trace_decoder_pc_t pc, void* userdata) {
    (void)pc; (void)userdata;
    if (*size < 5) {
        *size = 5;
        return ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    memcpy(text, "v_nop", 5);
    *size = 5;
    *memory_size = 4;
    return SUCCESS;
}

typedef struct {
    file_t* traces;
    int count;
    int next;
} feed_t;

static uint64_t next_trace(uint8_t** buffer, uint64_t* size, void* userdata) {
    feed_t* feed = userdata;
    if (feed->next >= feed->count) return 0;
    *buffer = feed->traces[feed->next].data;
    *size = feed->traces[feed->next].size;
    feed->next++;
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <code_object.elf> <trace.att>...\n", argv[0]);
        return 2;
    }
    file_t elf = read_file(argv[1]);
    int count = argc - 2;
    file_t* traces = calloc((size_t)count, sizeof *traces);
    for (int i = 0; i < count; i++) {
        traces[i] = read_file(argv[i + 2]);
        CHECK(traces[i].data != NULL);
    }
    for (int round = 0; round < 3; round++) {
        rocprof_trace_decoder_handle_t handle;
        CHECK(rocprof_trace_decoder_create_handle(&handle) == SUCCESS);
        /* Built-in disassembly may be missing (NOT_IMPLEMENTED) or not know the target; either way
         * the load and unload must not leak. */
        rocprofiler_thread_trace_decoder_status_t loaded =
            rocprof_trace_decoder_codeobj_load(handle, 1, 0x1000, elf.size, elf.data, elf.size);
        if (loaded == SUCCESS) CHECK(rocprof_trace_decoder_codeobj_unload(handle, 1) == SUCCESS);
        CHECK(rocprof_trace_decoder_set_isa_callback(handle, isa_nop, NULL) == SUCCESS);
        rocprofiler_thread_trace_decoder_record_request_t requests[2] = {
            {sizeof requests[0], ROCPROFILER_THREAD_TRACE_DECODER_RECORD_WAVE, 0},
            {sizeof requests[0], ROCPROFILER_THREAD_TRACE_DECODER_RECORD_OCCUPANCY,
             ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REQUEST_FLAGS_IMMEDIATE},
        };
        rocprofiler_thread_trace_decoder_record_filter_t filter = {sizeof filter, requests, 2};
        CHECK(rocprof_trace_decoder_set_record_filter(handle, round == 1 ? &filter : NULL) == SUCCESS);
        for (int i = 0; i < count; i++)
            CHECK(rocprof_trace_decoder_parse(handle, traces[i].data, traces[i].size, on_record, NULL) == SUCCESS);
        feed_t feed = {traces, count, 0};
        CHECK(rocprof_trace_decoder_set_se_data_callback(handle, next_trace, &feed) == SUCCESS);
        CHECK(rocprof_trace_decoder_parse(handle, NULL, 0, on_record, NULL) == SUCCESS);
        CHECK(feed.next == count);
        CHECK(rocprof_trace_decoder_destroy_handle(handle) == SUCCESS);
        CHECK(rocprof_trace_decoder_parse(handle, traces[0].data, traces[0].size, on_record, NULL) == INVALID_ARGUMENT);

        /* V1 hands its one userdata (the feed) to all three callbacks. */
        feed_t v1 = {traces, count, 0};
        CHECK(rocprof_trace_decoder_parse_data(next_trace, on_record, isa_nop, &v1) == SUCCESS);
    }
    for (int i = 0; i < count; i++) free(traces[i].data);
    free(traces);
    free(elf.data);
    printf("%d passed, %d failed (checksum %llu)\n", passed, failed, (unsigned long long)checksum);
    return failed ? 1 : 0;
}
