/* Links against the installed library and checks it answers. */
#include <rocprof_trace_decoder/rocprof_trace_decoder.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    rocprof_trace_decoder_version_t v;
    if (rocprof_trace_decoder_get_version(&v) != ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS) return 1;
    if (v.major != 0 || v.minor != 3 || v.size != sizeof v) return 2;
    rocprof_trace_decoder_handle_t h;
    if (rocprof_trace_decoder_create_handle(&h) != ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS) return 3;
    if (rocprof_trace_decoder_destroy_handle(h) != ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS) return 4;
    const char* s = rocprof_trace_decoder_get_status_string(ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS);
    if (strcmp(s, "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_SUCCESS") != 0) return 5;
    printf("consumer ok: %u.%u.%u\n", v.major, v.minor, v.patch);
    return 0;
}
