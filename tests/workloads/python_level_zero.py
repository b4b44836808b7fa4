"""Level Zero from Python through ctypes, as a Python binding over the loader
would call it: zeInit, one context, command list, module and kernel, then
zeCommandListAppendLaunchKernel LAUNCHES times from one line of launch()
(marked "# launch"), called from main() (marked "# call").

Usage: ZE_ENABLE_ALT_DRIVERS=FAKE python3 python_level_zero.py [LAUNCHES]
"""
import ctypes
import sys

ze = ctypes.CDLL("libze_loader.so.1")
P = ctypes.c_void_p


class GroupCount(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("next", P), ("flags", ctypes.c_uint32), ("name", ctypes.c_char_p)]


def check(result, what):
    if result != 0:
        sys.exit("%s returned 0x%x" % (what, result))


def handle(fn, *args):
    out = P()
    check(fn(*args, ctypes.byref(out)), fn.__name__)
    return out


def launch(lst, kernel, i):
    groups = GroupCount(i + 1, 1, 1)
    check(ze.zeCommandListAppendLaunchKernel(lst, kernel, ctypes.byref(groups), None, 0, None), "launch")  # launch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    check(ze.zeInit(0), "zeInit")
    count = ctypes.c_uint32(1)
    driver = P()
    check(ze.zeDriverGet(ctypes.byref(count), ctypes.byref(driver)), "zeDriverGet")
    device = P()
    check(ze.zeDeviceGet(driver, ctypes.byref(count), ctypes.byref(device)), "zeDeviceGet")
    desc = (ctypes.c_uint64 * 8)()  # zeroed descriptors: the fake reads none of them
    context = handle(ze.zeContextCreate, driver, desc)
    lst = handle(ze.zeCommandListCreate, context, device, desc)
    module = P()
    check(ze.zeModuleCreate(context, device, desc, ctypes.byref(module), None), "zeModuleCreate")
    kdesc = KernelDesc(0x1d, None, 0, b"vector_add")  # ZE_STRUCTURE_TYPE_KERNEL_DESC
    kernel = handle(ze.zeKernelCreate, module, ctypes.byref(kdesc))
    check(ze.zeKernelSetGroupSize(kernel, 128, 1, 1), "zeKernelSetGroupSize")
    for i in range(n):
        launch(lst, kernel, i)  # call


main()
