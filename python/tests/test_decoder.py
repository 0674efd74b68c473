"""Decoder (ctypes bindings) against our library: API behaviour and golden records."""

from __future__ import annotations

import json
import pickle

import pytest
from conftest import CorpusIsa, golden_examples, load_golden, load_json, missing

from rocprof_trace_decoder import Decoder, DecoderError, DecoderStatus, RecordType, TraceRecords
from rocprof_trace_decoder.bindings import DecoderLoadError, merge_records

# Fields new in 0.3.0 (reserved bytes in v0.1.6) and record types v0.1.6 never emits are not compared.
NEW_RECORD_TYPES = {RecordType.EVENT, RecordType.DISPATCH, RecordType.MARKER}


class NoIsa:
    def isa_for_pc(self, pc):
        return None


def golden_shape(records: TraceRecords, decoder: Decoder) -> list:
    """Our batches in the golden file's [type name, count, payload] form."""
    shaped = []
    for kind, batch in records.batches:
        if kind in NEW_RECORD_TYPES:
            continue
        if kind == RecordType.GFXIP:
            shaped.append(["GFXIP", 0, {"pointer_value": batch}])
        elif kind == RecordType.OCCUPANCY:
            rows = [[o.pc.address, o.pc.code_object_id, o.time, o.reserved, o.cu, o.simd, o.wave_id, o.start]
                    for o in batch]  # fmt: skip
            shaped.append(["OCCUPANCY", len(rows), rows])
        elif kind == RecordType.WAVE:
            waves = [
                {"cu": w.cu, "simd": w.simd, "wave_id": w.wave_id, "contexts": w.contexts,
                 "begin_time": w.begin_time, "end_time": w.end_time, "timeline_size": len(w.timeline),
                 "instructions_size": len(w.instructions), "timeline": [[s.type, s.duration] for s in w.timeline],
                 "instructions": [[i.category, i.stall, i.duration, i.time, i.pc.address, i.pc.code_object_id]
                                  for i in w.instructions]}  # fmt: skip
                for w in batch
            ]
            shaped.append(["WAVE", len(waves), waves])
        elif kind == RecordType.REALTIME:
            shaped.append(["REALTIME", len(batch), [[r.shader_clock, r.realtime_clock, r.reserved] for r in batch]])
        elif kind == RecordType.INST_OTHER_SIMD:
            rows = [[r.size, r.time, r.cycles, r.wgp, r.category] for r in batch]
            shaped.append(["INST_OTHER_SIMD", len(rows), rows])
        elif kind == RecordType.INFO:
            shaped.append(["INFO", len(batch), [[code, decoder.info_string(code)] for code in batch]])
        elif kind == RecordType.RT_FREQUENCY:
            shaped.append(["RT_FREQUENCY", 1, [batch]])
        elif kind == RecordType.PERFEVENT:
            rows = [[p.time, p.events0, p.events1, p.events2, p.events3, p.cu, p.bank] for p in batch]
            shaped.append(["PERFEVENT", len(rows), rows])
        elif kind == RecordType.SHADERDATA:
            rows = [[s.time, s.value, s.cu, s.simd, s.wave_id, s.flags, s.reserved] for s in batch]
            shaped.append(["SHADERDATA", len(rows), rows])
    return shaped


def golden_callbacks(entry: dict) -> list:
    shaped = []
    for name, count, payload in entry["callbacks"]:
        if name in ("EVENT", "DISPATCH", "MARKER"):
            continue
        if name == "WAVE":
            payload = [{k: v for k, v in w.items() if not k.startswith("_rsvd") and not k.endswith("_null")}
                       for w in payload]  # fmt: skip
        elif name == "OCCUPANCY":
            payload = [row[:8] for row in payload]
        shaped.append([name, count, payload])
    return shaped


@pytest.mark.decoding
@pytest.mark.parametrize("example", golden_examples())
def test_records_equal_golden(example, corpus, decoder_lib):
    golden = load_golden(example)
    isa = CorpusIsa(corpus / example)
    with Decoder(decoder_lib) as decoder:
        for entry in golden["per_se"]:
            name = entry["input"][0]
            if entry["status"] != 0:
                with pytest.raises(DecoderError) as failure:
                    decoder.parse_file(corpus / example / name, isa=isa)
                assert failure.value.status == entry["status"]
                continue
            records = decoder.parse_file(corpus / example / name, isa=isa)
            got, want = golden_shape(records, decoder), golden_callbacks(entry)
            assert [c[:2] for c in got] == [c[:2] for c in want], f"{name}: callback sequence"
            for index, (ours, theirs) in enumerate(zip(got, want)):
                assert ours == theirs, f"{name}: callback {index} ({theirs[0]}) differs"


def test_handle_lifecycle_and_strings(decoder_lib):
    decoder = Decoder(decoder_lib)
    assert decoder.lib_path == decoder_lib
    assert decoder.status_string(DecoderStatus.SUCCESS)
    assert decoder.status_string(3) == "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_ARGUMENT"
    assert decoder.info_string(3) == "Wave incomplete: The trace was cutoff before all waves ended."
    assert decoder.parse(b"", isa=NoIsa()).batches == []
    decoder.close()
    decoder.close()  # idempotent
    with pytest.raises(DecoderError, match="closed") as closed:
        decoder.parse(b"\x00" * 64)
    assert closed.value.status == DecoderStatus.ERROR_INVALID_ARGUMENT


def test_record_filter_arguments(decoder_lib):
    with Decoder(decoder_lib) as decoder:
        decoder.set_record_filter([RecordType.MARKER, RecordType.SHADERDATA], immediate=[RecordType.MARKER])
        decoder.set_record_filter([])
        decoder.set_record_filter()
        with pytest.raises(ValueError, match="explicit record filter"):
            decoder.set_record_filter(immediate=[RecordType.MARKER])
        with pytest.raises(ValueError, match="must also be requested"):
            decoder.set_record_filter([RecordType.SHADERDATA], immediate=[RecordType.MARKER])
        with pytest.raises(DecoderError) as rejected:  # the library refuses immediate waves
            decoder.set_record_filter([RecordType.WAVE], immediate=[RecordType.WAVE])
        assert rejected.value.status == DecoderStatus.ERROR_INVALID_ARGUMENT


def test_filter_suppresses_records(corpus, decoder_lib):
    example = corpus / "gfx1100/profile_gemm_run_0"
    with Decoder(decoder_lib) as decoder:
        decoder.set_record_filter([RecordType.GFXIP])
        records = decoder.parse_file(example / "se0.att", isa=CorpusIsa(example))
    assert [kind for kind, _ in records.batches] == [RecordType.GFXIP]
    assert records.gfxip == 11


def test_corrupt_trace_raises_with_status(decoder_lib):
    with Decoder(decoder_lib) as decoder, pytest.raises(DecoderError) as failure:
        decoder.parse(bytes(range(256)) * 4, isa=NoIsa())
    assert failure.value.status == DecoderStatus.ERROR_INVALID_SHADER_DATA
    assert str(failure.value) == "ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA"
    copy = pickle.loads(pickle.dumps(failure.value))
    assert (copy.status, str(copy)) == (failure.value.status, str(failure.value))


def test_callback_exception_is_reraised(corpus, decoder_lib):
    example = corpus / "gfx1100/profile_gemm_run_0"

    def explode(kind, batch):
        raise KeyError("from on_batch")

    with Decoder(decoder_lib) as decoder, pytest.raises(KeyError, match="from on_batch"):
        decoder.parse_file(example / "se0.att", isa=CorpusIsa(example), on_batch=explode)


def test_parse_chunks_merges_each_complete_buffer(corpus, decoder_lib):
    example = corpus / "gfx1200/profile_gemm_run_0"
    isa = CorpusIsa(example)
    chunks = [(example / f"se{n}.att").read_bytes() for n in range(2)]
    with Decoder(decoder_lib) as decoder:
        merged = decoder.parse_chunks(chunks, isa=isa)
        separate = [decoder.parse(chunk, isa=isa) for chunk in chunks]
    expected = merge_records(merge_records(TraceRecords(), separate[0]), separate[1])
    assert merged == expected
    assert len(merged.batches) == sum(len(r.batches) for r in separate)


def test_missing_library_is_a_load_error(tmp_path):
    with pytest.raises(DecoderLoadError):
        Decoder(tmp_path / "librocprof-trace-decoder.so")


@pytest.mark.decoding
@pytest.mark.parametrize("example", ["gfx1100/profile_gemm_run_0", "gfx1200/profile_plus_run_0"])
def test_built_in_disassembly_equals_golden(example, corpus, decoder_lib):
    """Code object loaded into the handle, no ISA provider: the library disassembles it itself."""
    meta = json.loads((corpus / example / "meta.json").read_text())
    code_object = meta["code_objects"][0]
    text = load_json(corpus / example / "code_object_0.isa.json")["text_section"]
    golden = load_golden(example)
    with Decoder(decoder_lib) as decoder:
        try:
            decoder.load_code_object(corpus / example / code_object["file"], load_id=1,
                                     load_addr=code_object["load_base"], load_size=text["vaddr"] + text["size"])  # fmt: skip
        except DecoderError as exc:
            if exc.status == DecoderStatus.ERROR_NOT_IMPLEMENTED:
                missing("a disassembler built into the library (libLLVM or COMGR)")
            raise
        for entry in golden["per_se"]:
            records = decoder.parse_file(corpus / example / entry["input"][0])
            assert golden_shape(records, decoder) == golden_callbacks(entry), entry["input"][0]
        decoder.unload_code_object(1)
        with pytest.raises(DecoderError):
            decoder.unload_code_object(1)


def test_package_root_exports():
    import rocprof_trace_decoder as package
    from rocprof_trace_decoder.records import __all__ as record_names

    assert package.__version__ == "0.3.0"
    for name in package.__all__:
        assert hasattr(package, name), name
    assert set(record_names) <= set(package.__all__)
    assert package.InstCategory.VALU.name == "VALU"
    assert package.CodeIndex([]).isa_for_pc(package.Pc(0, 0)) is None
    assert package.Decoder.__module__ == "rocprof_trace_decoder.bindings"  # PMA's is PmaDecoder
