/* cbindgen cannot express unions whose members are anonymous bit-field structs, so these four
   unions are appended as C text; tools/abi_check checks their layout like the rest. */
typedef union {
  struct {
    uint64_t legacy_version : 13;
    uint64_t gfx9_version2 : 3;
    uint64_t DSIMDM : 4;
    uint64_t DCU : 5;
    uint64_t DSA : 1;
    uint64_t SEID : 6;
    uint64_t double_buffer : 1;
    uint64_t reserved2 : 31;
  };
  uint64_t raw;
} rocprof_trace_decoder_gfx9_header_t;

typedef union {
  struct {
    unsigned int char1 : 8;
    unsigned int char2 : 8;
    unsigned int char3 : 8;
    unsigned int char4 : 8;
  };
  unsigned int u32All;
} rocprof_trace_decoder_instrument_enable_t;

typedef union {
  struct {
    unsigned int opcode : 8;
    unsigned int type : 4;
    unsigned int data20 : 20;
  };
  unsigned int u32All;
} rocprof_trace_decoder_packet_header_t;

typedef union {
  struct {
    uint32_t isUnload : 1;
    uint32_t bFromStart : 1;
    uint32_t legacy_id : 30;
  };
  uint32_t raw;
} rocprof_trace_decoder_codeobj_marker_tail_t;
