"""Launches from threads that run no Python (issue 18, the main thread's frames).

tests/integration/python_stacks_test.cpp records this script: the main
thread calls into a C library (tests/workloads/native_thread_launcher.c)
through ctypes, which releases the GIL, and waits there while a thread the
library creates launches on the fake libcuda: first a thread with no
interpreter state (3 launches, grid 20..22), then one holding an idle
interpreter state, as PyTorch's autograd worker does (2 launches, grid
20..21). Those launches' stacks carry the main thread's Python frames,
innermost at the "# wait:NAME" line. The main thread launches once itself
(grid 1) so that the two kinds can be told apart. Last, a thread with no
interpreter state launches twice (grid 30..31) while the main thread runs
Python (a busy loop): it is not waiting on that thread, so those launches
carry no Python frames.
Usage: python3 python_native_threads.py LIBCUDA LAUNCHER_LIB [LINGER_S]
"""
import ctypes
import sys
import time

cuda = ctypes.CDLL(sys.argv[1])
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
launcher = ctypes.CDLL(sys.argv[2])
launch_fn = ctypes.cast(cuda.cuLaunchKernel, ctypes.c_void_p)
launcher.start_plain_thread.restype = ctypes.c_void_p
launcher.start_plain_thread.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
launcher.join_plain_thread.argtypes = [ctypes.c_void_p]


def own_launch():
    cuda.cuLaunchKernel(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)  # wait:own_launch


def wait_plain():
    return launcher.launch_on_plain_thread(launch_fn, 3)  # wait:wait_plain


def wait_idle():
    return launcher.launch_on_idle_python_thread(launch_fn, 2)  # wait:wait_idle


def spin_while_launching():
    handle = launcher.start_plain_thread(launch_fn, 2, 50)
    end = time.monotonic() + 0.4
    while time.monotonic() < end:  # on the CPU the whole time the thread launches
        pass
    return launcher.join_plain_thread(ctypes.c_void_p(handle))


def step():
    own_launch()  # wait:step_own
    plain = wait_plain()  # wait:step_plain
    idle = wait_idle()  # wait:step_idle
    spin = spin_while_launching()
    print(f"own 1 plain {plain} idle {idle} spin {spin}", flush=True)


if __name__ == "__main__":
    step()  # wait:module
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)
