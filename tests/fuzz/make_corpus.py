#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets: tests/fuzz/corpus/<target>/.

A few valid inputs per target, in the layouts the targets' headers describe
(tests/fuzz/README.md), so the fuzzers start from records the decoders accept
instead of having to find the format by chance. Run it again after a layout
change (bpf/events.h, a fuzz target's input format) and commit the result:
    tests/fuzz/make_corpus.py
The unwind seeds are two small shared objects compiled here with gcc (one with
.eh_frame, one with .debug_frame only); everything else is built byte by byte.
Regression inputs (files named regress-*) are kept; the rest is rewritten.
"""
import os
import pathlib
import struct
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


def write(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def clear(target):
    d = ROOT / target
    if d.exists():
        for f in d.iterdir():
            if not f.name.startswith("regress-"):
                f.unlink()


# ---- event records (bpf/events.h) -----------------------------------------
EV_LAUNCH, EV_IOCTL, EV_FORK, EV_EXEC, EV_EXIT, EV_API = 1, 2, 3, 4, 5, 6
STACK_F_AT_ENTRY, STACK_F_AT_SYSCALL, STACK_F_COPY = 2, 4, 32


def hdr(type_, size, ts=1_000_000, tgid=4242, tid=4243):
    return struct.pack("<IIQII", type_, size, ts, tgid, tid)


def stack(ips, cap, flags, sp_word=0x401234, copy=None):
    """[regs][copy][copy_hdr] ips[cap] trailer, as the BPF side appends them."""
    out = b""
    if copy is not None:
        regs = struct.pack("<QQQQ", 0x401100, 0x7FFD00000000, 0x7FFD00000040, 0)
        cap_copy = (len(copy) + 7) // 8 * 8
        out += regs + copy.ljust(cap_copy, b"\0") + struct.pack("<II", len(copy), cap_copy)
        flags |= STACK_F_COPY
    out += b"".join(struct.pack("<Q", ip) for ip in ips).ljust(cap * 8, b"\0")
    out += struct.pack("<QHHI", sp_word, len(ips), cap, flags)
    return out


def record(type_, body, trailer=b""):
    size = 24 + len(body) + len(trailer)
    return hdr(type_, size) + body + trailer


def launch_body(api=1):
    return struct.pack("<QQQQ", 0x5555AAAA0000, 0, 0x7FFD1000, 0) + struct.pack(
        "<10I", 128, 1, 1, 256, 1, 1, 0, api, 0, 0)


def ioctl_body(cmd, driver, head, aux=b"", ret=0):
    b = struct.pack("<QQqIIIiIHHII", 1500, 0x7FFD2000, ret, cmd, 195, 0, 3, driver, len(head), len(aux), 0, 0)
    return b + head.ljust(256, b"\0") + aux.ljust(256, b"\0")


def proc_body(comm, filename=b"", ppid=1, exit_code=0):
    return struct.pack("<QIi", 123456789, ppid, exit_code) + comm.ljust(16, b"\0")[:16] + filename.ljust(256, b"\0")[:256]


def api_body(api, args, blob=b"", flags=1, blob_kind=0, ret=0, out_value=0):
    fixed = struct.pack("<8Q", *args) + struct.pack("<qQQIIII", ret, 2500, out_value, api, flags, len(blob), blob_kind)
    padded = blob.ljust((len(blob) + 7) // 8 * 8, b"\0")
    return fixed + padded


def decoder_seeds():
    t = "fuzz_decoder"
    write(t, "launch", record(EV_LAUNCH, launch_body(), stack([0x401000, 0x402000], 4, STACK_F_AT_ENTRY)))
    write(t, "launch-nostack", record(EV_LAUNCH, launch_body(2), stack([], 0, 0)))
    rm_alloc = struct.pack("<IIIIQQIII", 0xC1D00040, 0x5C000002, 0x5C00001C, 0x80, 0x7FFC12340000, 0, 0, 0, 0).ljust(48, b"\0")
    write(t, "ioctl-nvidia", record(EV_IOCTL, ioctl_body(0xC030462B, 1, rm_alloc), stack([0x7F0000001000], 2, STACK_F_AT_SYSCALL)))
    write(t, "ioctl-kfd", record(EV_IOCTL, ioctl_body(0xC0104B25, 3, bytes(16), ret=-22), stack([], 1, STACK_F_AT_SYSCALL)))
    write(t, "fork", record(EV_FORK, proc_body(b"python3")))
    write(t, "exec", record(EV_EXEC, proc_body(b"train", b"/usr/bin/train")))
    write(t, "exit", record(EV_EXIT, proc_body(b"train", exit_code=256)))
    name = b"_Z6kernelPfi\0"
    write(t, "api-string-blob", record(EV_API, api_body(111, [0x7FFD3000, 0x5555B000, 0x5555C000, 0, 0, 0, 0, 0], name,
                                                          flags=3, blob_kind=1, out_value=0x5555D000),
                                       stack([0x401000], 8, STACK_F_AT_ENTRY)))
    copy = struct.pack("<8Q", 0x401200, 0, 0x7FFD00000080, 0x401300, 0, 0, 0, 0)
    # Python frames (GPUOBS_STACK_F_PYTHON = 256) between ips and the trailer.
    py = struct.pack("<QII", 0x7F0000300000, 196, 0) + struct.pack("<QII", 0x7F0000300400, 210, 1)
    py += struct.pack("<HHI", 2, 0, 0)
    ips = struct.pack("<Q", 0x401000)
    trailer = struct.pack("<QHHI", 0x401234, 1, 1, STACK_F_AT_ENTRY | 128 | 256)
    write(t, "launch-python", record(EV_LAUNCH, launch_body(), ips + py + trailer))
    write(t, "api-stack-copy", record(EV_API, api_body(11, [0x7FFD3000, 1 << 20, 0, 0, 0, 0, 0, 0], flags=3,
                                                         out_value=0x7F0000200000),
                                      stack([0x401100], 4, STACK_F_AT_ENTRY, copy=copy)))
    write(t, "api-no-stack", record(EV_API, api_body(109, [0] * 8), stack([], 0, 0)))
    # GPU job records (type 9, 10): struct gpuobs_gpu_trace, no stack.
    write(t, "gpu-job-queue", record(9, struct.pack("<IHH", 1, 192, 0) + bytes(192)))
    write(t, "fence-signal", record(10, struct.pack("<IHH", 4, 192, 0) + bytes(192)))


# ---- ioctl argument images (fuzz_ioctl.cpp) -------------------------------
DRV_NVIDIA, DRV_UVM, DRV_KFD, DRV_I915, DRV_XE, DRV_AMDGPU = 1, 2, 3, 4, 5, 6


def ioctl_input(driver, cmd, head, aux=b"", version=7, ret=0):
    return struct.pack("<BIHBq", driver, cmd, len(head), version, ret) + head + aux


def nv_cmd(nr, size):
    return 0xC0000000 | size << 16 | 0x46 << 8 | nr


def kfd_cmd(direction, nr, size):
    return direction << 30 | size << 16 | 0x4B << 8 | nr


def drm_cmd(direction, nr, size):
    return direction << 30 | size << 16 | 0x64 << 8 | nr


def ioctl_seeds():
    t = "fuzz_ioctl"
    alloc = struct.pack("<IIIIQQIII", 0xC1D00040, 0x5C000002, 0x5C00001C, 0x80, 0x7FFC12340000, 0, 0, 0, 0).ljust(48, b"\0")
    write(t, "nv-rm-alloc-device", ioctl_input(DRV_NVIDIA, nv_cmd(0x2B, 48), alloc, struct.pack("<II", 0, 0).ljust(56, b"\0")))
    mem = struct.pack("<IIII", 0xC1D00040, 0x5C000002, 0x5C000030, 0x3E).ljust(48, b"\0")
    write(t, "nv-rm-alloc-memory", ioctl_input(DRV_NVIDIA, nv_cmd(0x2B, 48), mem, bytes(32) + struct.pack("<Q", 1 << 21) + bytes(80)))
    write(t, "nv-rm-free", ioctl_input(DRV_NVIDIA, nv_cmd(0x29, 16), struct.pack("<IIII", 0xC1D00040, 0x5C000002, 0x5C00001C, 0)))
    ctrl = struct.pack("<IIIIQII", 0xC1D00040, 0x5C000003, 0x20800110, 0, 0x7FFC0000, 16, 0).ljust(32, b"\0")
    write(t, "nv-rm-control", ioctl_input(DRV_NVIDIA, nv_cmd(0x2A, 32), ctrl, bytes(16)))
    write(t, "nv-check-version", ioctl_input(DRV_NVIDIA, nv_cmd(0xD2, 72), struct.pack("<II", 0, 0) + b"580.159.04".ljust(64, b"\0")))
    write(t, "nv-old-driver", ioctl_input(DRV_NVIDIA, nv_cmd(0x2B, 40), alloc[:40], version=1))
    write(t, "uvm-register-gpu", ioctl_input(DRV_UVM, 37, bytes(16) + struct.pack("<IIII", 0, 0, 7, 0)))
    write(t, "uvm-map-external", ioctl_input(DRV_UVM, 33, struct.pack("<QQQ", 0x7F0000000000, 1 << 21, 0).ljust(64, b"\0"), bytes(64)))
    write(t, "uvm-initialize", ioctl_input(DRV_UVM, 0x30000001, struct.pack("<QI", 4, 0).ljust(16, b"\0")))
    write(t, "kfd-alloc-memory", ioctl_input(DRV_KFD, kfd_cmd(3, 0x16, 40), struct.pack("<QQQQII", 0x7F0000000000, 1 << 20, 0, 0, 0x1234, 4)))
    write(t, "kfd-create-queue", ioctl_input(DRV_KFD, kfd_cmd(3, 0x02, 96), bytes(96)))
    write(t, "kfd-wait-events", ioctl_input(DRV_KFD, kfd_cmd(3, 0x0C, 24), struct.pack("<QIII", 0x7FFD0000, 1, 1, 1000)))
    execbuf = struct.pack("<QIIIIIIQQQQ", 0x7F0000002000, 3, 0, 4096, 0, 0, 0, 0, 1 | 1 << 11, 5, 0)
    write(t, "i915-execbuffer2", ioctl_input(DRV_I915, drm_cmd(1, 0x69, 64), execbuf))
    bind = struct.pack("<QIHHQQQIIII", 0, 4, 0, 0, 0, 0x10000, 0x200000, 0, 0, 0, 0).ljust(80, b"\0")
    vm_bind = struct.pack("<QIIII", 0, 1, 0, 0, 2) + struct.pack("<Q", 0x7F0000005000).ljust(80, b"\0") + bytes(32)
    write(t, "xe-vm-bind-array", ioctl_input(DRV_XE, drm_cmd(1, 0x45, 136), vm_bind, bind + bind))
    cs_in = struct.pack("<IIIIQ", 0x55, 0, 2, 0, 0x7F0000008000)
    ib = struct.pack("<IIQIIII", 0, 0, 0x800000000, 256, 1, 0, 0)
    cs_aux = struct.pack("<QII", 3, 2, 3) + struct.pack("<II", 1, 8) + ib + struct.pack("<II", 2, 2) + bytes(32)
    write(t, "amdgpu-cs", ioctl_input(DRV_AMDGPU, drm_cmd(3, 0x44, 24), cs_in, cs_aux))


# ---- API calls (fuzz_api_args.cpp) ----------------------------------------
def call(api, args, blob=b"", op=0, process=0, flags=3, ret=0, duration=1000, out_value=0):
    args = (list(args) + [0] * 8)[:8]
    return struct.pack("<BHBI8QqQQH", op, api, process, flags, *args, ret, duration, out_value, len(blob)) + blob


def api_seeds():
    t = "fuzz_api_args"
    fn = 0x5555D000
    write(t, "cuda-name-then-launch",
          call(111, [0x7FFD3000, 0x5555B000, 0x5555C000], b"_ZN5torch6kernelIfEEvPT_i\0", out_value=fn)
          + call(1, [fn, 0, 0, 0, 0, 0, 0, 0], op=1)
          + call(1, [fn, 0, 0, 0, (1 << 32) | 128, 1 | (256 << 32), (1 << 32) | 1, 0], op=1))
    write(t, "cuda-alloc-free",
          call(11, [0x7FFD3000, 1 << 20], out_value=0x7F0000200000)
          + call(20, [0x7F0000200000]) + call(20, [0x7F0000200000], op=2))
    write(t, "cuda-mem-create-release", call(24, [0x7FFD3000, 1 << 21, 0x7FFD4000, 0], out_value=0x99) + call(25, [0x99]))
    desc2d = bytearray(128)
    struct.pack_into("<I", desc2d, 16, 1)
    struct.pack_into("<I", desc2d, 72, 2)
    struct.pack_into("<QQ", desc2d, 112, 1024, 64)
    desc3d = bytearray(200)
    struct.pack_into("<I", desc3d, 32, 2)
    struct.pack_into("<I", desc3d, 120, 3)
    struct.pack_into("<QQQ", desc3d, 176, 256, 16, 4)
    write(t, "cuda-copies", call(48, [0x7FFD5000], bytes(desc2d)) + call(52, [0x7FFD6000], bytes(desc3d))
          + call(80, [0x7F0000200000, 7, 1024]))
    cfg = struct.pack("<6IIIQQII", 64, 2, 1, 128, 1, 1, 4096, 0, 0x5555E000, 0x7FFD7000, 2, 0)
    attr_coop = struct.pack("<IIi", 2, 0, 1).ljust(72, b"\0")
    attr_cluster = struct.pack("<II3I", 4, 0, 2, 1, 1).ljust(72, b"\0")
    write(t, "cuda-launch-ex", call(5, [0x7FFD7000, fn, 0x7FFD8000, 0], cfg + attr_coop + attr_cluster, flags=0))
    write(t, "cuda-kernel-lookups",
          call(112, [0x7FFD3000, 0x6000, 0x7000], b"_Z3fooi\0", out_value=0x6100)
          + call(113, [0x7FFD3000, 0x6100], out_value=0x6200) + call(109, []))
    write(t, "hip-launch-dim3",
          call(1073, [0, 0x401500, 0x7000, 0x7100], b"_Z6vecaddPfS_S_i\0", flags=1)
          + call(1001, [0x401500, (2 << 32) | 64, 1, (1 << 32) | 256, 1, 0x7FFD9000, 0, 0], flags=0))
    write(t, "hip-memory", call(1014, [0x7FFD3000, 4096], out_value=0x7F0000300000)
          + call(1026, [0x7F0000300000, 0x7FFDA000, 4096, 1]) + call(1022, [0x7F0000300000])
          + call(1008, [0x5555F000, 1024, 1, 1, 256, 1, 1, 0], op=1))


# ---- unwind (ELF files) ---------------------------------------------------
SOURCE = r"""
__attribute__((noinline)) int leaf(int x) { volatile int a[8]; a[x & 7] = x; return a[(x + 1) & 7] + x; }
__attribute__((noinline)) int middle(int x) { return leaf(x) * 3 + leaf(x + 1); }
int outer(int x) { int s = 0; for (int i = 0; i < x; ++i) s += middle(i); return s; }
"""


def build_elf(tmp, name, flags):
    src = pathlib.Path(tmp) / "unwind_seed.c"
    src.write_text(SOURCE)
    out = pathlib.Path(tmp) / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-nostdlib", "-O1", *flags, "-Wl,--eh-frame-hdr",
                    "-Wl,-z,max-page-size=4096", "-Wl,-z,noseparate-code", "-Wl,--build-id=none",
                    "-o", str(out), str(src)], check=True)
    subprocess.run(["strip", "--strip-unneeded", "--keep-section=.debug_frame", str(out)], check=True)
    return out.read_bytes(), out


def symbol_offset(path, sym):
    """File offset of a symbol (vaddr mapped through the PT_LOAD that holds it)."""
    nm = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True, capture_output=True, text=True).stdout
    vaddr = next(int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1] == sym)
    ph = subprocess.run(["readelf", "-lW", str(path)], check=True, capture_output=True, text=True).stdout
    for l in ph.splitlines():
        f = l.split()
        if f and f[0] == "LOAD":
            off, va, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if va <= vaddr < va + filesz:
                return vaddr - va + off
    raise SystemExit(f"{sym} not in a PT_LOAD of {path}")


def unwind_seeds():
    with tempfile.TemporaryDirectory() as tmp:
        eh, eh_path = build_elf(tmp, "eh.so", ["-fasynchronous-unwind-tables"])
        dbg, dbg_path = build_elf(tmp, "dbg.so", ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g1"])
        write("fuzz_unwind_table", "eh_frame.so", eh)
        write("fuzz_unwind_table", "debug_frame_only.so", dbg)
        for name, elf, path in (("eh", eh, eh_path), ("dbg", dbg, dbg_path)):
            leaf, middle = symbol_offset(path, "leaf"), symbol_offset(path, "middle")
            sp = 0x7FFD00000000
            # leaf's caller is middle: the return address sits where leaf's CFA rule says.
            copy = b"".join(struct.pack("<Q", v) for v in (middle + 9, sp + 0x40, middle + 20, 0, 0, 0, 0, 0, 0))
            prefix = struct.pack("<QQQH", leaf + 4, sp, sp + 0x30, len(copy))
            write("fuzz_cfi_unwind", f"{name}-leaf", prefix + copy + elf)
            write("fuzz_cfi_unwind", f"{name}-no-copy", struct.pack("<QQQH", leaf, sp, 0, 0) + elf)


# ---- gpuobsd configuration files (fuzz_config.cpp) ------------------------
def python_lines_seeds():
    t = "fuzz_python_lines"
    # 3.11+ location tables (one-line, no-column, long and no-location
    # entries) and a 3.10 pair table, each after (format, firstlineno).
    loc = bytes([0x80 | (13 << 3) | 3, 0, 0x80 | (10 << 3) | 1, 4, 9, 0x80 | (14 << 3) | 7, 2, 0, 5, 9,
                 0x80 | (15 << 3) | 0, 0x80 | (0 << 3) | 2, 7])
    write(t, "pep657", struct.pack("<Bi", 0, 12) + loc)
    write(t, "pep626", struct.pack("<Bi", 1, 3) + bytes([4, 1, 12, 2, 8, 0x80, 6, 0xFF]))


def activity_file_seeds():
    # record --gpu-time's CUPTI file (userspace/gpu_time/activity_format.h):
    # 96-byte slots, a header per process, then records.
    t = "fuzz_activity_file"
    magic = 0x544753424F555047

    def header(pid, clock_kind=1, mono=0, cupti=0, version=2):
        return struct.pack("<QIIIIIIQQQII4Q", magic, version, 96, pid, clock_kind, 1, 130001, mono, cupti,
                           1_700_000_000_000_000_000, 0x1F, 0, 0, 0, 0, 0)

    def record(kind, pid, corr, start, end, tid=0, nbytes=0, stream=7):
        return struct.pack("<IIQQQQIIIIII3I3IBBBBI", kind, pid, start, end, nbytes, 0, 0, 1, stream, corr, tid, 0,
                           1, 1, 1, 32, 1, 1, 1 if kind == 2 else 0, 0, 0, 0, 0)

    calls = b"".join(record(5, 100, 10 + k, 1000 + k * 100, 1080 + k * 100, tid=100) +
                     record(4, 100, 11 + k, 1030 + k * 100, 1060 + k * 100, tid=100) +
                     record(1, 100, 10 + k, 5000 + k * 500, 5400 + k * 500) for k in range(0, 6, 2))
    write(t, "runtime-launches", header(100) + calls)
    write(t, "driver-copy", header(7) + record(4, 7, 3, 900, 950, tid=7) + record(2, 7, 3, 2000, 2500, nbytes=4096))
    write(t, "clock-pair", header(9, 2, 5_000_000, 1_000_000) + record(4, 9, 1, 1_000_100, 1_000_200, tid=9) +
          record(3, 9, 1, 1_001_000, 1_001_050, nbytes=64))


def config_seeds():
    t = "fuzz_config"
    shipped = pathlib.Path(__file__).resolve().parents[2] / "config" / "gpuobsd.conf"
    write(t, "shipped.conf", shipped.read_bytes())
    write(t, "units.conf", b'segment_max_bytes = "512MB"\nsegment_max_age = "15min"\nkeep_bytes = "2GB"\n'
                           b'max_age = "30d"\nlibrary_rescan = "500ms"\nring_mb = 64\n')
    write(t, "lists.conf", b'libcuda = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/cuda/libcuda.so.1"]\n'
                           b'watch_dev = ["nvidia=/dev/nvidia0"]\ngpu_devices = false\nunwind = "dwarf"\n'
                           b'stack_copy = 8192\nstack_depth = 32\n')
    write(t, "ini.conf", b"[default]\nstate-dir=/var/lib/gpuobs\nlog-level=debug\nmetrics_listen=127.0.0.1:9464\n"
                         b"status_file = '/run/gpuobs/status.json'\n# comment\n")


def gpu_trace_seeds():
    # u8 selector (bit 7: fdinfo text; else the recorded format 0..4), u16 raw_len, then the bytes.
    t = "fuzz_gpu_trace"
    raw = bytearray(192)
    def loc(off, at, s):
        struct.pack_into("<I", raw, off, ((len(s) + 1) << 16) | at)
        raw[at:at + len(s) + 1] = s + b"\0"
    loc(8, 48, b"gfx_0.0.0")
    struct.pack_into("<Ii", raw, 12, 3, 5)
    loc(20, 58, b"0000:03:00.0")
    struct.pack_into("<QQQ", raw, 24, 1234, 56, 91)
    write(t, "queue-6.18", bytes([0]) + struct.pack("<H", 192) + bytes(raw))
    raw = bytearray(192)
    loc(8, 24, b"drm_sched")
    loc(12, 34, b"gfx_0.0.0")
    struct.pack_into("<II", raw, 16, 1234, 56)
    write(t, "fence", bytes([4]) + struct.pack("<H", 192) + bytes(raw))
    fixtures = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "fdinfo"
    for name in ("xe", "i915"):
        write(t, "fdinfo-" + name, bytes([0x80, 0, 0]) + (fixtures / (name + ".txt")).read_bytes())


if __name__ == "__main__":
    for target in ("fuzz_decoder", "fuzz_ioctl", "fuzz_api_args", "fuzz_unwind_table", "fuzz_cfi_unwind", "fuzz_config",
                   "fuzz_python_lines", "fuzz_activity_file", "fuzz_gpu_trace"):
        clear(target)
    decoder_seeds()
    ioctl_seeds()
    api_seeds()
    unwind_seeds()
    config_seeds()
    python_lines_seeds()
    activity_file_seeds()
    gpu_trace_seeds()
    total = sum(f.stat().st_size for f in ROOT.rglob("*") if f.is_file())
    print(f"{sum(1 for f in ROOT.rglob('*') if f.is_file())} seeds, {total} bytes in {ROOT}")
