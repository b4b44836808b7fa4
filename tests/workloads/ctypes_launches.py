"""A short Python program that loads libcuda with ctypes.CDLL(PATH), as
cuda-python, JAX or Triton load their own copies: no DT_NEEDED entry, no
LD_LIBRARY_PATH, a path gpuobs cannot know before the dlopen (issue 37).

Usage: python3 ctypes_launches.py PATH [LAUNCHES]
Calls cuInit once, then cuLaunchKernel LAUNCHES times (default 300) from one
line (marked "# launch"), prints "done PID" and exits at once.
"""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1])
cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
cuda.cuInit(0)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
for i in range(n):
    cuda.cuLaunchKernel(None, i + 1, 1, 1, 32, 1, 1, 0, None, None, None)  # launch
print("done", os.getpid(), flush=True)
