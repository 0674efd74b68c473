#!/usr/bin/env python3
"""Built-in disassembly ("Mode 1", API.md 4.12) against the reference goldens.

usage: mode1_golden.py --lib PATH [--shared DIR] [--only SUBSTR] [--show N]

For each corpus example that ships its code objects, each SE file is decoded the way the goldens
were made (one parse call per SE file) but WITHOUT an ISA callback: the example's code objects are
loaded into the handle with codeobj_load and the library disassembles them itself (with a COMGR or
libLLVM back-end that knows the target, or its built-in tables:
ROCPROF_TRACE_DECODER_DISASM=builtin forces those). The records must equal the golden ones, as
shared/tools/golden_check.py compares them.

A code object is loaded with the id the trace's code-object markers name (meta.json
`trace_code_object_id`, rocprofv3 captures) or else at the example's load base with load id 1
(tinygrad traces ask by runtime address, code object id 0); the load size spans up to the end of
the text section.
Prints one line per example, then 'N passed, M failed'; exit status 0 when all passed.
"""
import argparse
import ctypes
import glob
import importlib.util
import json
import os
import subprocess
import sys
from ctypes import POINTER, c_int32, c_uint64, c_uint8, c_void_p

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("RTD_SHARED", os.path.join(ROOT, "..", "shared"))
LOAD_ID = 1


def golden_check():
    path = os.path.join(SHARED, "tools", "golden_check.py")
    spec = importlib.util.spec_from_file_location("golden_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decode_one_se(gc, lib, example_dir, data):
    """Mode 1 decode of one SE buffer; returns (status, callbacks) like golden_check's."""
    callbacks = []

    @gc.TRACE_CB
    def trace_cb(rtype, ptr, n, _):
        callbacks.append([gc.RECORD.get(rtype, f"TYPE_{rtype}"), n, gc.decode_records(lib, rtype, ptr, n)])
        return gc.SUCCESS

    handle = gc.handle_t()
    lib.rocprof_trace_decoder_create_handle.argtypes = [POINTER(gc.handle_t)]
    lib.rocprof_trace_decoder_codeobj_load.argtypes = [gc.handle_t, c_uint64, c_uint64, c_uint64, c_void_p, c_uint64]
    lib.rocprof_trace_decoder_parse.argtypes = [gc.handle_t, c_void_p, c_uint64, gc.TRACE_CB, c_void_p]
    lib.rocprof_trace_decoder_destroy_handle.argtypes = [gc.handle_t]
    for name in ("create_handle", "codeobj_load", "parse", "destroy_handle"):
        getattr(lib, "rocprof_trace_decoder_" + name).restype = c_int32
    status = lib.rocprof_trace_decoder_create_handle(ctypes.byref(handle))
    if status != gc.SUCCESS:
        return status, [["CREATE_HANDLE_FAILED", 0, status]]
    meta = json.load(open(os.path.join(example_dir, "meta.json")))
    for code_object in meta["code_objects"]:
        elf = open(os.path.join(example_dir, code_object["file"]), "rb").read()
        isa = json.load(open(os.path.join(example_dir, code_object["file"][:-4] + ".isa.json")))
        marker_id = code_object.get("trace_code_object_id")
        load_id = LOAD_ID if marker_id is None else marker_id
        load_base = code_object.get("load_base") or 0
        size = max(row[0] + row[1] for row in isa["instructions"])
        if "text_section" in isa:
            size = max(size, isa["text_section"]["vaddr"] + isa["text_section"]["size"])
        image = (c_uint8 * len(elf)).from_buffer_copy(elf)
        status = lib.rocprof_trace_decoder_codeobj_load(handle, load_id, load_base, size, image, len(elf))
        if status != gc.SUCCESS:
            lib.rocprof_trace_decoder_destroy_handle(handle)
            return status, [["CODEOBJ_LOAD_FAILED", 0, status]]
    buffer = (c_uint8 * len(data)).from_buffer_copy(data)
    status = lib.rocprof_trace_decoder_parse(handle, buffer, len(data), trace_cb, None)
    lib.rocprof_trace_decoder_destroy_handle(handle)
    return status, callbacks


def ships_code_objects(corpus, golden_path):
    """True when the golden's example has every code object of its meta.json as an ELF."""
    arch = os.path.basename(os.path.dirname(golden_path))
    name = os.path.basename(golden_path).split(".json")[0]
    meta_path = os.path.join(corpus, arch, name, "meta.json")
    if not os.path.isfile(meta_path):
        return False
    objects = json.load(open(meta_path)).get("code_objects") or []
    return bool(objects) and all(o.get("file") and os.path.isfile(os.path.join(corpus, arch, name, o["file"])) for o in objects)


def worker(lib_path, example_dir):
    gc = golden_check()
    lib = ctypes.CDLL(lib_path)
    example = gc.Example(example_dir)
    return [list(decode_one_se(gc, lib, example_dir, data)) for _, data in example.se_data]


def main():
    global SHARED
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--shared", default=SHARED)
    ap.add_argument("--only", default=None)
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    SHARED = os.environ["RTD_SHARED"] = os.path.abspath(args.shared)
    if args.worker:
        sys.stdout.write(json.dumps(worker(os.path.abspath(args.lib), args.worker)))
        return 0
    gc = golden_check()
    corpus = os.path.realpath(os.path.join(args.shared, "corpus"))
    goldens = sorted(glob.glob(os.path.join(corpus, "golden", "*", "*.json*")))
    goldens = [g for g in goldens if ships_code_objects(corpus, g) and (not args.only or args.only in g)]
    passed = failed = 0
    for golden_path in goldens:
        golden = gc.jload(golden_path)
        name = golden["example"]
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--worker", os.path.join(corpus, name)],
            capture_output=True, timeout=300)
        diffs = []
        if child.returncode != 0:
            diffs.append(f"decoder process died (rc={child.returncode}): {child.stderr.decode(errors='replace')[-300:]}")
        else:
            for golden_se, got_se in zip(golden["per_se"], json.loads(child.stdout)):
                found = []
                gc.compare(golden_se, got_se, gc.Tally(), found)
                diffs += [f"[{golden_se['input'][0]}] {d}" for d in found]
        if diffs:
            failed += 1
            print(f"FAIL {name}")
            for d in diffs[:args.show]:
                print(f"     {d}")
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
