/* Calls every exported function of the 0.3.0 API, and the built-in disassembly of
 * rocprof_trace_decoder_disasm.h, on its success and error paths.
 * Built against include/ and linked to the built library; prints "N passed, M failed". */
#include <rocprof_trace_decoder/rocprof_trace_decoder.h>
#include <rocprof_trace_decoder/rocprof_trace_decoder_disasm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SUCCESS ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS
#define GENERIC_ERROR ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR
#define INVALID_ARGUMENT ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT
#define INVALID_SHADER_DATA ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA
#define NOT_IMPLEMENTED ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED

/* What the trace callback saw. */
typedef struct {
    int calls;
    int gfxip_calls;
    uintptr_t gfxip_value;
    uint64_t gfxip_size;
} seen_t;

static rocprofiler_thread_trace_decoder_status_t on_record(rocprofiler_thread_trace_decoder_record_type_t type,
                                                           void* events, uint64_t size, void* userdata) {
    seen_t* seen = (seen_t*)userdata;
    seen->calls++;
    if (type == ROCPROFILER_THREAD_TRACE_DECODER_RECORD_GFXIP) {
        seen->gfxip_calls++;
        seen->gfxip_value = (uintptr_t)events;
        seen->gfxip_size = size;
    }
    return ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS;
}

static rocprofiler_thread_trace_decoder_status_t isa_unknown(char* text, uint64_t* memory_size, uint64_t* size,
                                                             rocprofiler_thread_trace_decoder_pc_t pc, void* ud) {
    (void)text; (void)memory_size; (void)size; (void)pc; (void)ud;
    return ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT;
}

/* Hands out one buffer, then ends the stream. */
typedef struct {
    seen_t seen;
    uint8_t* data;
    uint64_t size;
    int pulls;
} stream_t;

static uint64_t pull_once(uint8_t** buffer, uint64_t* size, void* userdata) {
    stream_t* s = (stream_t*)userdata;
    s->pulls++;
    if (s->pulls > 1) return 0;
    *buffer = s->data;
    *size = s->size;
    return s->size;
}

static rocprofiler_thread_trace_decoder_status_t on_record_stream(rocprofiler_thread_trace_decoder_record_type_t type,
                                                                  void* events, uint64_t size, void* userdata) {
    return on_record(type, events, size, &((stream_t*)userdata)->seen);
}

/* An MI300 software header followed by 64 zero bytes (MISC tokens): a valid, empty gfx9 trace. */
static uint8_t mi300_trace[72];
static void make_mi300_trace(void) {
    uint64_t header = 0x11 | (5ull << 13) | (0xFull << 16);
    memset(mi300_trace, 0, sizeof mi300_trace);
    memcpy(mi300_trace, &header, sizeof header);
}

static void test_strings(void) {
    CHECK(strcmp(rocprof_trace_decoder_get_info_string(ROCPROFILER_THREAD_TRACE_DECODER_INFO_NONE), "NONE") == 0);
    CHECK(strlen(rocprof_trace_decoder_get_info_string(ROCPROFILER_THREAD_TRACE_DECODER_INFO_DATA_LOST)) == 79);
    CHECK(strlen(rocprof_trace_decoder_get_info_string(ROCPROFILER_THREAD_TRACE_DECODER_INFO_STITCH_INCOMPLETE)) == 96);
    CHECK(strlen(rocprof_trace_decoder_get_info_string(ROCPROFILER_THREAD_TRACE_DECODER_INFO_WAVE_INCOMPLETE)) == 61);
    CHECK(strcmp(rocprof_trace_decoder_get_info_string((rocprofiler_thread_trace_decoder_info_t)99),
                 "Unknown info parameter.") == 0);
    CHECK(strcmp(rocprof_trace_decoder_get_status_string(ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED),
                 "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_NOT_IMPLEMENTED") == 0);
    CHECK(strcmp(rocprof_trace_decoder_get_status_string(ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST),
                 "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_LAST") == 0);
    CHECK(strcmp(rocprof_trace_decoder_get_status_string((rocprofiler_thread_trace_decoder_status_t)-1),
                 "STATUS_UNKNOWN") == 0);
}

static void test_version(void) {
    rocprof_trace_decoder_version_t v;
    memset(&v, 0xff, sizeof v);
    CHECK(rocprof_trace_decoder_get_version(&v) == SUCCESS);
    CHECK(v.size == sizeof v && v.major == 0 && v.minor == 3 && v.patch == 0);
    CHECK(rocprof_trace_decoder_get_version(NULL) == INVALID_ARGUMENT);
}

static void test_parse_data(void) {
    stream_t s;
    CHECK(rocprof_trace_decoder_parse_data(NULL, NULL, NULL, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_parse_data(pull_once, on_record_stream, NULL, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_parse_data(pull_once, NULL, isa_unknown, NULL) == INVALID_ARGUMENT);

    memset(&s, 0, sizeof s);
    s.data = mi300_trace;
    s.size = sizeof mi300_trace;
    CHECK(rocprof_trace_decoder_parse_data(pull_once, on_record_stream, isa_unknown, &s) == SUCCESS);
    CHECK(s.pulls == 2);
    CHECK(s.seen.gfxip_calls == 1 && s.seen.gfxip_value == 9 && s.seen.gfxip_size == 0);

    uint8_t garbage[64];
    memset(garbage, 0xA5, sizeof garbage);
    memset(&s, 0, sizeof s);
    s.data = garbage;
    s.size = sizeof garbage;
    CHECK(rocprof_trace_decoder_parse_data(pull_once, on_record_stream, isa_unknown, &s) == INVALID_SHADER_DATA);
    CHECK(s.seen.calls == 0);

    memset(&s, 0, sizeof s);
    s.data = mi300_trace;
    s.size = 8; /* header only */
    CHECK(rocprof_trace_decoder_parse_data(pull_once, on_record_stream, isa_unknown, &s) == INVALID_SHADER_DATA);
}

static void test_handles(void) {
    rocprof_trace_decoder_handle_t h, bogus = {0}, gone;
    CHECK(rocprof_trace_decoder_create_handle(NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_create_handle(&h) == SUCCESS);
    CHECK(h.handle != 0);
    CHECK(rocprof_trace_decoder_create_handle(&gone) == SUCCESS);
    CHECK(gone.handle != h.handle);
    CHECK(rocprof_trace_decoder_destroy_handle(gone) == SUCCESS);
    CHECK(rocprof_trace_decoder_destroy_handle(gone) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_destroy_handle(bogus) == INVALID_ARGUMENT);

    CHECK(rocprof_trace_decoder_set_isa_callback(bogus, isa_unknown, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_set_isa_callback(gone, isa_unknown, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_set_se_data_callback(bogus, pull_once, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_set_record_filter(bogus, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_codeobj_unload(bogus, 1) == INVALID_ARGUMENT ||
          rocprof_trace_decoder_codeobj_unload(bogus, 1) == NOT_IMPLEMENTED);

    seen_t seen;
    memset(&seen, 0, sizeof seen);
    CHECK(rocprof_trace_decoder_parse(bogus, mi300_trace, sizeof mi300_trace, on_record, &seen) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_parse(h, mi300_trace, sizeof mi300_trace, NULL, &seen) == INVALID_ARGUMENT);

    /* ISA callback set: parse a buffer, parse nothing, parse garbage. */
    CHECK(rocprof_trace_decoder_set_isa_callback(h, isa_unknown, NULL) == SUCCESS);
    CHECK(rocprof_trace_decoder_parse(h, mi300_trace, sizeof mi300_trace, on_record, &seen) == SUCCESS);
    CHECK(seen.gfxip_calls == 1 && seen.gfxip_value == 9);
    memset(&seen, 0, sizeof seen);
    CHECK(rocprof_trace_decoder_parse(h, NULL, 0, on_record, &seen) == SUCCESS);
    CHECK(seen.calls == 0);
    uint8_t zeros[64] = {0};
    CHECK(rocprof_trace_decoder_parse(h, zeros, sizeof zeros, on_record, &seen) == INVALID_SHADER_DATA);

    /* The SE-data callback replaces the data argument. */
    stream_t s;
    memset(&s, 0, sizeof s);
    s.data = mi300_trace;
    s.size = sizeof mi300_trace;
    CHECK(rocprof_trace_decoder_set_se_data_callback(h, pull_once, &s) == SUCCESS);
    memset(&seen, 0, sizeof seen);
    CHECK(rocprof_trace_decoder_parse(h, zeros, sizeof zeros, on_record, &seen) == SUCCESS);
    CHECK(s.pulls == 2 && seen.gfxip_calls == 1);
    CHECK(rocprof_trace_decoder_set_se_data_callback(h, NULL, NULL) == SUCCESS);

    /* Record filter: nothing enabled means no callbacks. */
    rocprofiler_thread_trace_decoder_record_filter_t filter = {sizeof filter, NULL, 0};
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == SUCCESS);
    memset(&seen, 0, sizeof seen);
    CHECK(rocprof_trace_decoder_parse(h, mi300_trace, sizeof mi300_trace, on_record, &seen) == SUCCESS);
    CHECK(seen.calls == 0);
    CHECK(rocprof_trace_decoder_set_record_filter(h, NULL) == SUCCESS);

    rocprofiler_thread_trace_decoder_record_request_t req[2];
    req[0].size = sizeof req[0];
    req[0].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_MARKER;
    req[0].flags = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_REQUEST_FLAGS_IMMEDIATE;
    req[1] = req[0];
    req[1].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_SHADERDATA;
    filter.records = req;
    filter.record_count = 2;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == SUCCESS);
    req[1].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_WAVE; /* WAVE cannot be immediate */
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    req[1].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_MARKER; /* duplicate */
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    req[1].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_LAST;
    req[1].flags = 0;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    req[1].type = ROCPROFILER_THREAD_TRACE_DECODER_RECORD_WAVE;
    req[1].flags = 2;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    req[1].flags = 0;
    req[1].size = 8;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    filter.records = NULL;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    filter.size = 8;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);
    filter.size = sizeof filter;
    filter.record_count = 13;
    CHECK(rocprof_trace_decoder_set_record_filter(h, &filter) == INVALID_ARGUMENT);

    /* Without an ISA callback, parse uses the built-in disassembly when a back-end (COMGR,
     * libLLVM or the built-in tables) is there, and is NOT_IMPLEMENTED otherwise (only when
     * ROCPROF_TRACE_DECODER_DISASM names a library that does not load); codeobj_load agrees. */
    rocprof_trace_decoder_handle_t plain;
    CHECK(rocprof_trace_decoder_create_handle(&plain) == SUCCESS);
    int builtin = rocprof_trace_decoder_parse(plain, mi300_trace, sizeof mi300_trace, on_record, &seen);
    CHECK(builtin == SUCCESS || builtin == NOT_IMPLEMENTED);
    CHECK(rocprof_trace_decoder_codeobj_load(plain, 1, 0x1000, 0x100, zeros, sizeof zeros) ==
          (builtin == SUCCESS ? GENERIC_ERROR : NOT_IMPLEMENTED));
    CHECK(rocprof_trace_decoder_codeobj_unload(plain, 1) == (builtin == SUCCESS ? GENERIC_ERROR : NOT_IMPLEMENTED));
    CHECK(rocprof_trace_decoder_destroy_handle(plain) == SUCCESS);

    /* quick_scan and build_standalone argument checks. */
    CHECK(rocprof_trace_decoder_quick_scan(h, 0, NULL, 0, on_record, &seen) == SUCCESS);
    uint8_t out[256];
    uint64_t out_size = sizeof out;
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, NULL, 64, 8, 32, out, &out_size) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, 0, 4, out, &out_size) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, 8, 200, out, &out_size) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, 8, 40, NULL, &out_size) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, UINT64_MAX - 4, 40, out,
                                                 &out_size) == INVALID_ARGUMENT);

    /* quick_scan: an MI300 trace of MISC tokens holds no dispatch or event. */
    int calls = seen.calls;
    CHECK(rocprof_trace_decoder_quick_scan(h, 0, mi300_trace, sizeof mi300_trace, on_record, &seen) == SUCCESS);
    CHECK(seen.calls == calls);
    CHECK(rocprof_trace_decoder_quick_scan(h, 0, mi300_trace, 7, on_record, &seen) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_quick_scan(h, 0, mi300_trace, sizeof mi300_trace, NULL, NULL) == INVALID_ARGUMENT);
    rocprof_trace_decoder_handle_t none = {0};
    CHECK(rocprof_trace_decoder_quick_scan(none, 0, mi300_trace, sizeof mi300_trace, on_record, &seen) ==
          INVALID_ARGUMENT);
    /* Chunk 7 waits about 0.1 s for chunk 6's state, which never comes. */
    CHECK(rocprof_trace_decoder_quick_scan(h, 7, mi300_trace, sizeof mi300_trace, on_record, &seen) ==
          ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES);

    /* build_standalone: header, six shared compute registers (6-byte REG_CS tokens), the slice. */
    uint64_t expected = 8 + 6 * 6 + 32;
    out_size = 16;
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, 8, 40, out, &out_size) ==
          ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_OUT_OF_RESOURCES);
    CHECK(out_size == expected);
    out_size = sizeof out;
    CHECK(rocprof_trace_decoder_build_standalone(h, 0, mi300_trace, sizeof mi300_trace, 8, 40, out, &out_size) ==
          SUCCESS);
    CHECK(out_size == expected);
    CHECK(memcmp(out, mi300_trace, 8) == 0);
    CHECK(memcmp(out + expected - 32, mi300_trace + 8, 32) == 0);
    /* Chunk 1 has the state the chunk-0 scan published; chunk 3 has none. */
    CHECK(rocprof_trace_decoder_build_standalone(h, 1, mi300_trace, sizeof mi300_trace, 8, 40, out, &out_size) ==
          SUCCESS);
    CHECK(rocprof_trace_decoder_build_standalone(h, 3, mi300_trace, sizeof mi300_trace, 8, 40, out, &out_size) ==
          INVALID_ARGUMENT);
    rocprof_trace_decoder_handle_t fresh;
    CHECK(rocprof_trace_decoder_create_handle(&fresh) == SUCCESS);
    uint8_t gfx11[40] = {0x91, 0x01};
    CHECK(rocprof_trace_decoder_build_standalone(fresh, 0, gfx11, sizeof gfx11, 8, 40, out, &out_size) ==
          NOT_IMPLEMENTED);
    CHECK(rocprof_trace_decoder_destroy_handle(fresh) == SUCCESS);

    CHECK(rocprof_trace_decoder_destroy_handle(h) == SUCCESS);
    CHECK(rocprof_trace_decoder_parse(h, mi300_trace, sizeof mi300_trace, on_record, &seen) == INVALID_ARGUMENT);
}

/* What the built-in disassembly reported. */
typedef struct {
    int calls;
    uint64_t address[8], size[8];
    char text[8][64];
    int stop_at;
} listing_t;

static rocprofiler_thread_trace_decoder_status_t on_instruction(uint64_t address, uint64_t size, const char* text,
                                                                void* userdata) {
    listing_t* listing = (listing_t*)userdata;
    if (listing->calls == 8) return GENERIC_ERROR;
    listing->address[listing->calls] = address;
    listing->size[listing->calls] = size;
    snprintf(listing->text[listing->calls], sizeof listing->text[0], "%s", text ? text : "(unknown)");
    listing->calls++;
    return listing->calls == listing->stop_at ? INVALID_SHADER_DATA : SUCCESS;
}

static void test_builtin_disassembly(void) {
    /* gfx11: s_cbranch_execz 43; v_mov_b32_e32 v0 with a literal; SOPP opcode 127 (no
     * instruction); s_endpgm. */
    const uint32_t code[] = {0xBFA5002Bu, 0x7E0002FFu, 0x04030201u, 0xBFFF0000u, 0xBFB00000u};
    listing_t listing;
    memset(&listing, 0, sizeof listing);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", code, sizeof code, 0x2000, on_instruction, &listing) ==
          SUCCESS);
    CHECK(listing.calls == 4);
    CHECK(listing.address[0] == 0x2000 && listing.size[0] == 4 && strcmp(listing.text[0], "s_cbranch_execz 43") == 0);
    CHECK(listing.address[1] == 0x2004 && listing.size[1] == 8 && strcmp(listing.text[1], "v_mov_b32_e32") == 0);
    CHECK(listing.address[2] == 0x200C && listing.size[2] == 4 && strcmp(listing.text[2], "(unknown)") == 0);
    CHECK(listing.address[3] == 0x2010 && listing.size[3] == 4 && strcmp(listing.text[3], "s_endpgm") == 0);

    memset(&listing, 0, sizeof listing);
    listing.stop_at = 2;
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", code, sizeof code, 0, on_instruction, &listing) ==
          INVALID_SHADER_DATA);
    CHECK(listing.calls == 2);

    memset(&listing, 0, sizeof listing);
    CHECK(rocprof_trace_decoder_builtin_disassemble(NULL, code, sizeof code, 0, on_instruction, &listing) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", NULL, 4, 0, on_instruction, &listing) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", code, 6, 0, on_instruction, &listing) ==
          INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", code, sizeof code, UINT64_MAX - 8, on_instruction,
                                                    &listing) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", code, sizeof code, 0, NULL, NULL) == INVALID_ARGUMENT);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx908", code, sizeof code, 0, on_instruction, &listing) ==
          NOT_IMPLEMENTED);
    CHECK(rocprof_trace_decoder_builtin_disassemble("gfx1100", NULL, 0, 0, on_instruction, &listing) == SUCCESS);
    CHECK(listing.calls == 0);
}

int main(void) {
    make_mi300_trace();
    test_strings();
    test_version();
    test_parse_data();
    test_handles();
    test_builtin_disassembly();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
