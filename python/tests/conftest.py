"""Shared helpers: corpus location, golden records, rcv_reference inputs and comparison."""

from __future__ import annotations

import csv
import gzip
import json
import os
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))

from rocprof_trace_decoder.records import (  # noqa: E402
    Instruction,
    Occupancy,
    OtherSimdInstruction,
    Pc,
    Realtime,
    RecordType,
    TraceRecords,
    Wave,
    WaveState,
)

CORPUS = Path(os.environ.get("RTD_CORPUS", REPO_ROOT.parent / "shared" / "corpus")).resolve()
DEFAULT_LIB = REPO_ROOT / "target" / "release" / "librocprof_trace_decoder.so"

# The four examples the upstream package's viewer output was recorded for.
RCV_EXAMPLES = [
    "gfx1100/profile_gemm_run_0",
    "gfx1200/profile_gemm_run_0",
    "gfx950/profile_gemm_run_0",
    "gfx950/aiter_study_aggregate_load_AL_BM32_BN128_BK512_nS2_nW4_att_orig",
]


# The one opt-out (shared with the Rust tests) for tests whose data or tools are not installed.
ALLOW_MISSING = os.environ.get("RTD_ALLOW_MISSING") == "1"


def missing(what: str):
    """A test cannot run without `what`: it fails, or is skipped when RTD_ALLOW_MISSING=1."""
    message = f"{what} is missing (set RTD_ALLOW_MISSING=1 to skip the tests that need it)"
    if ALLOW_MISSING:
        pytest.skip(message)
    pytest.fail(message)


def require_corpus() -> Path:
    """The corpus; a test needing it fails when it is missing, unless RTD_ALLOW_MISSING=1 lets it skip."""
    if not (CORPUS / "README.md").is_file():
        missing(f"the corpus at {CORPUS} (set RTD_CORPUS)")
    return CORPUS


@pytest.fixture(scope="session")
def corpus() -> Path:
    return require_corpus()


@pytest.fixture(scope="session")
def decoder_lib() -> str:
    path = os.environ.get("ROCPROF_TRACE_DECODER_LIB") or str(DEFAULT_LIB)
    if not Path(path).is_file():
        missing(f"the decoder library {path} (cargo build --release)")
    return path


def load_json(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)


def golden_path(example: str) -> Path:
    base = require_corpus() / "golden" / example
    plain = base.with_name(base.name + ".json")
    return plain if plain.exists() else base.with_name(base.name + ".json.gz")


def load_golden(example: str) -> dict:
    return load_json(golden_path(example))


def example_names() -> list[str]:
    if not (CORPUS / "golden").is_dir():
        if ALLOW_MISSING:
            return []
        raise FileNotFoundError(f"no goldens at {CORPUS / 'golden'} (set RTD_CORPUS, or RTD_ALLOW_MISSING=1)")
    names = []
    for path in sorted((CORPUS / "golden").glob("*/*.json*")):
        names.append(f"{path.parent.name}/{path.name.split('.json')[0]}")
    return names


def known_differences(check: str) -> set[str]:
    """The examples tests/known_differences.txt lists for `check` (still known to differ)."""
    known = set()
    for line in (REPO_ROOT / "tests" / "known_differences.txt").read_text().splitlines():
        words = line.split("#")[0].split()
        if words and words[0] == check:
            known.add(" ".join(words[1:]))
    return known


def golden_examples() -> list:
    """Every example with a golden; those still known to differ from it (the `real` entries of
    tests/known_differences.txt) are strict expected failures, so one that starts to match fails."""
    known = known_differences("real")
    mark = pytest.mark.xfail(strict=True, reason="listed in tests/known_differences.txt")
    return [pytest.param(name, marks=mark) if name in known else name for name in example_names()]


def records_from_golden(callbacks: list) -> TraceRecords:
    """TraceRecords equivalent to one SE's golden callbacks (fields new in 0.3.0 set to 0)."""
    records = TraceRecords()
    for name, _count, payload in callbacks:
        kind = RecordType[name]
        if kind == RecordType.GFXIP:
            records.gfxip = payload["pointer_value"]
            records.batches.append((kind, records.gfxip))
        elif kind == RecordType.OCCUPANCY:
            batch = [Occupancy(Pc(r[0], r[1]), r[2], r[3], r[4], r[5], r[6], r[7], 0, 0, 0, 0, 0) for r in payload]
            records.occupancy += batch
            records.batches.append((kind, batch))
        elif kind == RecordType.WAVE:
            batch = [
                Wave(w["cu"], w["simd"], w["wave_id"], w["contexts"], 0, 0, 0, 0, 64, w["begin_time"], w["end_time"],
                     [WaveState(t, d) for t, d in w["timeline"]],
                     [Instruction(c, s, d, t, Pc(a, i)) for c, s, d, t, a, i in w["instructions"]])  # fmt: skip
                for w in payload
            ]
            records.waves += batch
            records.batches.append((kind, batch))
        elif kind == RecordType.REALTIME:
            batch = [Realtime(*r) for r in payload]
            records.realtime += batch
            records.batches.append((kind, batch))
        elif kind == RecordType.INST_OTHER_SIMD:
            batch = [OtherSimdInstruction(*r) for r in payload]
            records.other_simd += batch
            records.batches.append((kind, batch))
        else:
            raise AssertionError(f"golden record type {name} not handled by the test helper")
    return records


class CorpusIsa:
    """ISA answers of an example's code_object_*.isa.json, addressed as the decoder asks."""

    def __init__(self, example_dir: Path):
        meta = json.loads((example_dir / "meta.json").read_text())
        self.answers: dict[Pc, tuple[str, int]] = {}
        for code_object in meta["code_objects"]:
            isa_file = code_object.get("isa_file") or code_object["file"][: -len(".elf")] + ".isa.json"
            table = load_json(example_dir / isa_file)["instructions"]
            for vaddr, size, text in table:
                if code_object.get("load_base") is not None:
                    self.answers[Pc(code_object["load_base"] + vaddr, 0)] = (text, size)
                if code_object.get("trace_code_object_id"):
                    self.answers[Pc(vaddr, code_object["trace_code_object_id"])] = (text, size)

    def isa_for_pc(self, pc: Pc) -> tuple[str, int] | None:
        return self.answers.get(pc)


def _kernel_entry_vaddr(example_dir: Path, code_object: dict, table: list) -> int:
    """The kernel's function symbol address. Some examples have no ELF (a rocprofv3 capture with
    ISA answers only) or one pyelftools cannot read (tinygrad's hand-assembled kernels); their ISA
    dumps start at the kernel entry, as every readable example's does."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    first_instruction = min(vaddr for vaddr, _size, _text in table)
    if code_object.get("file") is None:
        return first_instruction
    elf_path = example_dir / code_object["file"]
    try:
        with elf_path.open("rb") as handle:
            symbols = list(ELFFile(handle).get_section_by_name(".symtab").iter_symbols())
    except ELFError:
        return first_instruction
    for symbol in symbols:
        if symbol.name == code_object["name"] and symbol["st_info"]["type"] == "STT_FUNC":
            return int(symbol["st_value"])
    raise AssertionError(f"no function symbol {code_object['name']} in {elf_path}")


def reference_code_json(example_dir: Path) -> dict:
    """The code.json the rcv_reference folders were made from (rules in rcv_reference/README.md)."""
    meta = json.loads((example_dir / "meta.json").read_text())
    code_object = meta["code_objects"][0]
    kernel = code_object["name"]
    table = load_json(example_dir / "code_object_0.isa.json")["instructions"]
    if code_object.get("trace_code_object_id"):
        codeobj, base = code_object["trace_code_object_id"], 0
    else:
        codeobj, base = 0, code_object["load_base"]
    entry = base + _kernel_entry_vaddr(example_dir, code_object, table)
    rows: list[list] = []
    for vaddr, _size, text in sorted(table):
        pc = base + vaddr
        if pc == entry:
            label = f"; {kernel}" if kernel.startswith("_") else f"; _{kernel}"
            rows.append([label, 0, len(rows) + 1, kernel, codeobj, pc, 0, 0, 0, 0])
        rows.append([text, 0, len(rows) + 1, "", codeobj, pc, 0, 0, 0, 0])
    return {
        "code": rows,
        "header": "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle",
        "kernels": [{"address": entry, "codeobj": codeobj, "name": kernel, "demangled": kernel}],
    }


def se_files(example_dir: Path) -> list[tuple[int, Path]]:
    """(shader engine, file) in the order att_tool processes rocprofv3-named files: by file name."""
    files = [(int(p.stem[2:]), p) for p in example_dir.glob("se*.att")]
    return sorted(files, key=lambda item: f"trace_shader_engine_{item[0]}_1.att")


def prepare_rcv_input(example: str, directory: Path) -> Path:
    """An input directory like the one the reference folders were produced from."""
    example_dir = require_corpus() / example
    directory.mkdir(parents=True, exist_ok=True)
    for se, path in se_files(example_dir):
        (directory / f"trace_shader_engine_{se}_1.att").symlink_to(path)
    (directory / "code.json").write_text(json.dumps(reference_code_json(example_dir), indent=2))
    return directory


# JSON keys whose values belong to the writer version or to decoder facts v0.1.6 lacked.
_VOLATILE = {"filenames.json": {"version"}, "occupancy.json": {"version"}}


def _read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


# occupancy.json row columns that hold fields new in the 0.3.0 ABI (me_id, pipe_id, is_ext, workgroup_id,
# cluster_id): v0.1.6 reported zeros there.
_OCCUPANCY_COLUMNS_NEW_IN_0_3 = slice(6, 11)


def as_v016_would_report(name: str, document: dict) -> dict:
    """Drop what only a 0.3.0 decoder reports (EVENT/DISPATCH records, the new occupancy bit fields),
    so a folder written over our library compares with one written over v0.1.6."""
    if name != "occupancy.json":
        return document
    for key, rows in document.items():
        if key.isdigit():
            for row in rows:
                row[_OCCUPANCY_COLUMNS_NEW_IN_0_3] = [0] * 5
    document["events"] = {se: [] for se in document["events"]}
    return document


def compare_viewer_output(ours_root: Path, reference_root: Path, run_name: str = "ui_output_att1", *,
                          only_v016_content: bool = False) -> list[str]:  # fmt: skip
    """Differences between a produced run folder + stats CSV and a reference one."""
    problems = []
    ours, reference = ours_root / run_name, reference_root / run_name
    our_files = sorted(p.name for p in ours.iterdir())
    reference_files = sorted(p.name for p in reference.iterdir())
    if our_files != reference_files:
        problems.append(f"file sets differ: extra {set(our_files) - set(reference_files)}, "
                        f"missing {set(reference_files) - set(our_files)}")  # fmt: skip
    for name in sorted(set(our_files) & set(reference_files)):
        got = json.loads((ours / name).read_text())
        if only_v016_content:
            got = as_v016_would_report(name, got)
        want = json.loads((reference / name).read_text())
        for key in _VOLATILE.get(name, ()):
            got.pop(key, None)
            want.pop(key, None)
        if name == "realtime.json":
            got.get("metadata", {}).pop("frequency", None)
            want.get("metadata", {}).pop("frequency", None)
        if got != want:
            problems.append(f"{name} differs")
        elif json.dumps(got) != json.dumps(want):
            problems.append(f"{name}: key order differs")
    csv_name = f"stats_{run_name}.csv"
    our_csv, reference_csv = ours_root / csv_name, reference_root / csv_name
    if not our_csv.is_file():
        problems.append(f"{csv_name} missing")
    else:
        if _read_csv(our_csv) != _read_csv(reference_csv):
            problems.append(f"{csv_name} rows differ")
        if b"\r\n" not in our_csv.read_bytes():
            problems.append(f"{csv_name} does not use CRLF line ends")
    return problems
