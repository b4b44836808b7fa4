"""Launches through the fake libcuda from Python, at known lines (issue 18).

tests/integration/python_stacks_test.cpp records this script under each
CPython it finds and checks every launch's Python frames: qualified name,
file and line. Each launch site ends with a "# launch:NAME" marker; the test
reads the expected lines from those markers, so moving code cannot make it
pass by accident. Launch counts per site are fixed (printed as they happen).
Usage: python3 python_launches.py /path/to/libcuda.so.1 [LINGER_S]
LINGER_S: seconds to live after the last launch (gpuobs reads each code
object once, while the process lives; a test that unwinds in user space,
slower, gives it time).
"""
import ctypes
import sys
import threading
import time

cuda = ctypes.CDLL(sys.argv[1])
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3


def launch(grid):
    # The one call site of cuLaunchKernel: every stack's innermost Python frame.
    cuda.cuLaunchKernel(None, grid, 1, 1, 1, 1, 1, 0, None, None, None)  # launch:launch


def nested_inner():
    launch(2)  # launch:nested_inner


def nested_outer():
    nested_inner()  # launch:nested_outer


def recurse(n):
    if n == 0:
        launch(3)  # launch:recurse_base
        return
    recurse(n - 1)  # launch:recurse_step


def generator():
    for _ in range(2):
        launch(4)  # launch:generator
        yield


class Model:
    def forward(self):
        launch(5)  # launch:Model.forward

    @classmethod
    def build(cls):
        launch(6)  # launch:Model.build


def from_thread():
    launch(7)  # launch:from_thread


EXEC_SOURCE = "def made_by_exec():\n    launch(8)\n"


def sorted_key(x):
    # Python called back from C (sorted): a new interpreter entry.
    launch(9)  # launch:sorted_key
    return x


def main():
    nested_outer()  # launch:main_nested
    recurse(3)  # launch:main_recurse
    for _ in generator():  # launch:main_generator
        pass
    Model().forward()  # launch:main_forward
    Model.build()  # launch:main_build
    t = threading.Thread(target=from_thread)
    t.start()
    t.join()
    (lambda: launch(10))()  # launch:lambda
    scope = {"launch": launch}
    exec(EXEC_SOURCE, scope)
    scope["made_by_exec"]()  # launch:main_exec
    sorted([1], key=sorted_key)  # launch:main_sorted


if __name__ == "__main__":
    main()  # launch:module
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
