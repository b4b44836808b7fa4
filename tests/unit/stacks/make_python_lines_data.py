"""Writes python_lines_data.inc: line tables made by real interpreters and
the line of every instruction as the interpreter itself reports it
(code.co_lines()), for tests/unit/stacks/python_lines_test.cpp.

Run it with each interpreter to cover (the .inc in the tree was made with
3.10.13, 3.11.7, 3.12.1 and 3.13.0):
  for py in python3.10 python3.11 python3.12 python3.13; do $py make_python_lines_data.py; done > python_lines_data.inc
"""
import sys

SOURCE = '''
def sample(a, b):
    total = 0

    for i in range(a):
        if i % 2:
            total += i
        else:
            total -= (
                b
                + i)
    squares = [x * x for x in range(b)]
    try:
        total += squares[a]
    except IndexError:
        total = -1
    return total, lambda: total + 1
'''


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            yield from codes(c)


ns = {}
exec(compile(SOURCE, "sample.py", "exec"), ns)
fmt = "pep626" if sys.version_info < (3, 11) else "pep657"
ver = "%d.%d" % sys.version_info[:2]
for c in codes(ns["sample"].__code__):
    table = c.co_linetable
    expect = []
    for start, end, line in c.co_lines():
        for off in range(start, end, 2):
            expect.append((off // 2, -1 if line is None else line))
    print("{\"%s %s\", PyLineTable::%s, %d, \"%s\"sv, {%s}}," % (
        ver, c.co_name, fmt, c.co_firstlineno, "".join("\\x%02x" % b for b in table),
        ", ".join("{%d, %d}" % e for e in expect)))
