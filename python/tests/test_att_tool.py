"""att_tool.py end to end: reference viewer folders, exit codes, all-or-nothing output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PYTHON_DIR, RCV_EXAMPLES, compare_viewer_output, missing, prepare_rcv_input, reference_code_json
from rcv_schema import viewer_schema_problems

from rocprof_trace_decoder import AttTrace
from rocprof_trace_decoder.cli import ProgressBar, build_parser, traces_from_names

TOOL = PYTHON_DIR / "att_tool.py"


def run_tool(*args, lib=None, cwd=None, rocm=None):
    env = dict(os.environ)
    if lib is not None:
        env["ROCPROF_TRACE_DECODER_LIB"] = lib
    if rocm is not None:
        env.pop("ROCM_HOME", None)
        env["ROCM_PATH"] = str(rocm)
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)  # fmt: skip


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.mark.decoding
@pytest.mark.parametrize("example", RCV_EXAMPLES)
def test_viewer_folder_equals_reference(example, corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(example, tmp_path / "input")
    result = run_tool("--base-name", "att", inputs, lib=decoder_lib)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip() == str(inputs / "ui_output_att1")
    # The reference folders were written over v0.1.6; content only 0.3.0 reports is left out.
    assert compare_viewer_output(inputs, corpus / "rcv_reference" / example, only_v016_content=True) == []
    assert leftovers(inputs) == []


def test_parallel_and_serial_decoding_write_the_same_files(corpus, decoder_lib, tmp_path):
    from rocprof_trace_decoder import CodeIndex, generate_att_outputs

    inputs = prepare_rcv_input(RCV_EXAMPLES[1], tmp_path / "input")
    index = CodeIndex.from_code_json(inputs / "code.json", load_counts=False)
    traces = [AttTrace(p, int(p.stem.split("_")[3]), 1) for p in sorted(inputs.glob("*.att"))]
    outputs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        (run_dir,) = generate_att_outputs(traces, code_index=index, output_dir=out, lib_path=decoder_lib, jobs=jobs)
        outputs[jobs] = {p.name: p.read_bytes() for p in sorted(run_dir.iterdir())}
        assert run_dir == out
    assert outputs[1] == outputs[2]


def test_missing_input(tmp_path):
    result = run_tool(tmp_path / "nothing.att")
    assert result.returncode == 1
    assert f"Input does not exist: {tmp_path / 'nothing.att'}" in result.stderr


def test_unreadable_input(tmp_path):
    # Root reads files whatever their mode, so the unreadable input is one the kernel refuses to read.
    trace = tmp_path / "x_shader_engine_0_1.att"
    trace.symlink_to("/proc/self/mem")
    result = run_tool(trace)
    assert result.returncode == 1
    assert f"Input is not readable: {trace}" in result.stderr
    assert "Traceback" not in result.stderr


def test_perfetto_without_traces(tmp_path):
    (tmp_path / "code.json").write_text("{}")
    result = run_tool("--perfetto", tmp_path / "t.pftrace", tmp_path / "code.json")
    assert result.returncode == 1
    assert "--perfetto needs .att traces" in result.stderr


def test_perfetto_without_the_perfetto_package(tmp_path):
    shadow = tmp_path / "shadow" / "perfetto"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n")
    (tmp_path / "a.att").write_bytes(b"\0" * 64)
    env = dict(os.environ, PYTHONPATH=str(shadow.parent))
    result = subprocess.run([sys.executable, str(TOOL), "--perfetto", str(tmp_path / "t.pftrace"),
                             str(tmp_path / "a.att")], capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert result.returncode == 1
    assert "pip install 'rocprof-trace-decoder[perfetto]'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.att", "shadow"]


def test_perfetto_into_a_missing_directory(tmp_path):
    (tmp_path / "a.att").write_bytes(b"\0" * 64)
    result = run_tool("--perfetto", tmp_path / "no" / "t.pftrace", tmp_path / "a.att")
    assert result.returncode == 1
    assert f"Cannot write {tmp_path / 'no' / 't.pftrace'}" in result.stderr


def test_unsupported_input(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    result = run_tool(tmp_path / "notes.txt")
    assert result.returncode == 1
    assert "Unsupported input type" in result.stderr


def test_directory_without_inputs(tmp_path):
    (tmp_path / "notes.txt").write_text("x")  # unknown files inside a directory are ignored
    result = run_tool(tmp_path)
    assert result.returncode == 1
    assert "No .att files, code.json, or code object files were provided or discovered." in result.stderr


def test_bad_formats(tmp_path):
    (tmp_path / "a.att").write_bytes(b"\0" * 64)
    result = run_tool("--formats", "json,xml", tmp_path / "a.att")
    assert result.returncode == 1
    assert "Unsupported output format(s): xml" in result.stderr


def test_command_line_usage_error():
    assert run_tool().returncode == 2
    help_text = run_tool("--help")
    assert help_text.returncode == 0 and "Exit status:" in help_text.stdout


def test_runs_as_a_module_too():
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    result = subprocess.run([sys.executable, "-m", "rocprof_trace_decoder", "--help"], capture_output=True, text=True,
                            env=env, timeout=60)  # fmt: skip
    assert result.returncode == 0
    assert result.stdout.startswith("usage: python3 -m rocprof_trace_decoder [-h]")


def test_unloadable_library(tmp_path):
    (tmp_path / "a_shader_engine_0_1.att").write_bytes(b"\0" * 64)
    result = run_tool("--lib", tmp_path / "missing.so", tmp_path)
    assert result.returncode == 3
    assert "decoder library could not be loaded" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_shader_engine_0_1.att"]


def test_corrupt_trace_writes_nothing(corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / "input")
    (inputs / "trace_shader_engine_9_1.att").write_bytes(bytes(range(256)) * 8)
    before = sorted(p.name for p in inputs.iterdir())
    result = run_tool("--base-name", "att", inputs, lib=decoder_lib)
    assert result.returncode == 4, result.stderr
    assert "could not be decoded" in result.stderr
    assert sorted(p.name for p in inputs.iterdir()) == before


def test_rerun_replaces_the_previous_run(corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / "input")
    run_dir = inputs / "ui_output_att1"
    run_dir.mkdir()
    (run_dir / "se9_sm0_sl0_wv0.json").write_text("stale")
    assert run_tool("--base-name", "att", inputs, lib=decoder_lib).returncode == 0
    assert not (run_dir / "se9_sm0_sl0_wv0.json").exists()
    assert (run_dir / "code.json").is_file()
    assert leftovers(inputs) == []


def test_output_dir_keeps_existing_files(corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / "input")
    out = tmp_path / "viewer"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    result = run_tool("-d", out, "--formats", "csv", inputs, lib=decoder_lib)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["code.json", "mine.txt"]
    assert (tmp_path / "stats_viewer.csv").is_file()


def test_code_objects_alone_write_code_json(corpus, tmp_path):
    from rocprof_trace_decoder.codegen import llvm_objdump

    try:
        llvm_objdump()
    except FileNotFoundError:
        missing("llvm-objdump (apt-get install llvm-19)")
    elf = tmp_path / "kernel_code_object_id_3.hsaco"
    elf.write_bytes((corpus / "gfx1100/profile_gemm_run_0/code_object_0.elf").read_bytes())
    result = run_tool(elf)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path)
    document = json.loads((tmp_path / "code.json").read_text())
    assert document["kernels"][0]["codeobj"] == 3 and document["code"][0][0] == "; _r_32_32_16_2"


def test_trace_names_give_shader_engine_and_run():
    paths = [Path("x/1_2_shader_engine_1_1.att"), Path("x/odd.att"), Path("x/1_2_SHADER_ENGINE_0_2.att"),
             Path("x/other.att"), Path("x/1_2_shader_engine_0_1.att")]  # fmt: skip
    assert traces_from_names(paths) == [
        AttTrace(paths[0], 1, 1),
        AttTrace(paths[1], 2, 1),
        AttTrace(paths[2], 0, 2),
        AttTrace(paths[3], 3, 1),
        AttTrace(paths[4], 0, 1),
    ]



class FakeTerminal:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal_and_not_quiet():
    terminal = FakeTerminal(True)
    update = ProgressBar(terminal).step("Decoding", "traces", 4)
    assert terminal.text.endswith("Decoding [" + "." * 30 + "] 0/4 traces")
    update(1, 4)
    assert terminal.text.endswith("] 1/4 traces") and "#" * 7 in terminal.text
    update(4, 4)
    assert terminal.text.endswith("\r")  # the line is cleared when done
    interrupted = FakeTerminal(True)
    bar = ProgressBar(interrupted)
    bar.step("Decoding", "traces", 4)(2, 4)
    bar.clear()
    assert interrupted.text.endswith("\r" + " " * len("Decoding [] 2/4 traces" + "#" * 15 + "." * 15) + "\r")
    for stream, quiet in ((FakeTerminal(False), False), (FakeTerminal(True), True)):
        ProgressBar(stream, quiet=quiet).step("Decoding", "traces", 4)(1, 4)
        assert stream.text == ""


def test_runs_get_their_own_folders_and_statistics(corpus, decoder_lib, tmp_path):
    example = corpus / "gfx1100/profile_gemm_run_0"
    for run in (1, 2):
        for se in (0, 1):
            (tmp_path / f"x_shader_engine_{se}_{run}.att").symlink_to(example / f"se{se}.att")
    (tmp_path / "code.json").write_text(json.dumps(reference_code_json(example)))
    result = run_tool("--base-name", "k", tmp_path, lib=decoder_lib)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(tmp_path / "ui_output_k1"), str(tmp_path / "ui_output_k2")]
    assert viewer_schema_problems(tmp_path / "ui_output_k1") == viewer_schema_problems(tmp_path / "ui_output_k2") == []
    one, two = ((tmp_path / f"stats_ui_output_k{run}.csv").read_text() for run in (1, 2))
    assert one == two and one.count("\n") > 100
    hits = sum(row[6] for row in json.loads((tmp_path / "ui_output_k1" / "code.json").read_text())["code"])
    assert hits == 590  # this run's counts only: SE0 and SE1 each executed 295 instructions


def test_no_decode_markers_flag():
    assert build_parser().parse_args(["a.att"]).decode_markers is True
    assert build_parser().parse_args(["--no-decode-markers", "a.att"]).decode_markers is False


def test_output_folder_permissions_follow_umask(corpus, decoder_lib, tmp_path):
    inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / "input")
    assert run_tool("--base-name", "att", inputs, lib=decoder_lib).returncode == 0
    mode = (inputs / "ui_output_att1").stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o777 & ~umask


def test_failure_in_a_worker_process_writes_nothing(corpus, decoder_lib, tmp_path):
    from rocprof_trace_decoder import CodeIndex, DecoderError, generate_att_outputs

    inputs = prepare_rcv_input(RCV_EXAMPLES[0], tmp_path / "input")
    garbage = inputs / "trace_shader_engine_9_1.att"
    garbage.write_bytes(bytes(range(256)) * 8)
    traces = [AttTrace(p, int(p.stem.split("_")[3]), 1) for p in sorted(inputs.glob("*.att"))]
    index = CodeIndex.from_code_json(inputs / "code.json", load_counts=False)
    before = sorted(p.name for p in inputs.iterdir())
    with pytest.raises(DecoderError) as failure:
        generate_att_outputs(traces, code_index=index, lib_path=decoder_lib, jobs=2)
    assert failure.value.status == 4
    assert sorted(p.name for p in inputs.iterdir()) == before


def test_code_json_alone(corpus, tmp_path):
    """Without traces: a code.json alone writes nothing; with -d it is copied there with its snapshots."""
    source = tmp_path / "source"
    source.mkdir()
    document = reference_code_json(corpus / RCV_EXAMPLES[0])
    (source / "code.json").write_text(json.dumps(document))
    (source / "snapshots.json").write_text(json.dumps({"/": {"k.cpp": "source_0_k.cpp"}}))
    (source / "source_0_k.cpp").write_text("kernel")
    before = sorted(p.name for p in source.iterdir())

    alone = run_tool(source / "code.json")
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.strip() == str(source)
    assert sorted(p.name for p in source.iterdir()) == before

    out = tmp_path / "out"
    copied = run_tool("-d", out, source / "code.json")
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.strip() == str(out)
    assert sorted(p.name for p in out.iterdir()) == before
    assert json.loads((out / "code.json").read_text())["code"] == document["code"]


def test_crashing_llvm_objdump_is_reported_without_its_backtrace(corpus, tmp_path):
    rocm = tmp_path / "rocm"
    (rocm / "bin").mkdir(parents=True)
    objdump = rocm / "bin" / "llvm-objdump"
    objdump.write_text("#!/bin/sh\n"
                       "echo 'LLVM ERROR: Disassembly not yet supported for subtarget' >&2\n"
                       "echo 'PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/' >&2\n"
                       "echo 'Stack dump:' >&2\n"
                       "echo ' #0 0x00007f99edab73c6 llvm::sys::PrintStackTrace' >&2\n"
                       "kill -ABRT $$\n")  # fmt: skip
    objdump.chmod(0o755)
    elf = tmp_path / "capture_code_object_id_4.out"
    elf.write_bytes((corpus / "gfx1100/profile_gemm_run_0/code_object_0.elf").read_bytes())
    result = run_tool(elf, rocm=rocm)
    assert result.returncode == 5
    assert "LLVM ERROR: Disassembly not yet supported for subtarget" in result.stderr
    assert "Stack dump" not in result.stderr and "PrintStackTrace" not in result.stderr
    assert "hint: give the traced kernels' code.json" in result.stderr
