#ifndef ROCPROF_TRACE_DECODER_API
#  if defined(_WIN32) && defined(ROCPROF_TRACE_DECODER_BUILDING_LIBRARY)
#    define ROCPROF_TRACE_DECODER_API __declspec(dllexport)
#  elif defined(__GNUC__) && defined(ROCPROF_TRACE_DECODER_BUILDING_LIBRARY)
#    define ROCPROF_TRACE_DECODER_API __attribute__((visibility("default")))
#  else
#    define ROCPROF_TRACE_DECODER_API
#  endif
#endif
