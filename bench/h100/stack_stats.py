"""Stack statistics of a capture: events with and without a stack, distinct
stacks (deduplication ratio), depth median/p99 per event, where walks end,
how many reach the Python interpreter, and the deepest PyTorch launch stack.
usage: python3 stack_stats.py CAPTURE"""
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
q = lambda sql, *a: db.execute(sql, a).fetchall()
tables = ["kernel_launches", "ioctls", "memory_ops", "copies", "stream_ops", "syncs", "gpu_modules"]
events = with_stack = 0
for t in tables:
    n, s = q(f"SELECT count(*), count(stack_id) FROM {t}")[0]
    events += n
    with_stack += s
    print(f"{t:16s} {n:>10d} rows, {n - s} without a stack")
distinct = q("SELECT count(*) FROM stacks")[0][0]
print(f"GPU calls and ioctls: {events}, with a stack: {with_stack}, distinct stacks: {distinct}, "
      f"deduplication {with_stack / max(distinct, 1):.0f} events per stored stack")
union = " UNION ALL ".join(f"SELECT stack_id FROM {t} WHERE stack_id IS NOT NULL" for t in tables)
depths = sorted(d for (d,) in q(f"SELECT s.depth FROM ({union}) e JOIN stacks s ON s.id = e.stack_id"))
if depths:
    pick = lambda p: depths[min(len(depths) - 1, int(p * len(depths)))]
    print(f"depth per event: median {pick(0.5)}, p99 {pick(0.99)}, max {depths[-1]}")
for reason, n in q(f"SELECT s.end_reason, count(*) FROM ({union}) e JOIN stacks s ON s.id = e.stack_id GROUP BY 1 ORDER BY 2 DESC"):
    print(f"  walks ending '{reason}': {n}")
py = q(f"""SELECT count(*) FROM ({union}) e WHERE e.stack_id IN
          (SELECT stack_id FROM stack_symbols WHERE symbol LIKE '%PyEval_EvalFrame%' OR symbol = 'PyEval_EvalCode')""")[0][0]
print(f"events whose stack reaches the Python interpreter: {py}")
for name, v in q("SELECT name, value FROM counters WHERE (name LIKE 'dropped%' OR name LIKE 'stack%' OR name LIKE 'frames%'"
                 " OR name LIKE 'modules_without%' OR name LIKE 'decode_bad%') AND value != 0 ORDER BY name"):
    print(f"  counter {name} = {v}")
row = q("""SELECT k.stack_id, count(*) FROM kernel_launches k JOIN processes p ON p.id = k.process_id
           WHERE p.comm LIKE 'python%' GROUP BY 1 ORDER BY 2 DESC LIMIT 1""")
if row:
    sid = row[0][0]
    print(f"most frequent PyTorch launch stack ({row[0][1]} launches):")
    for pos, module, symbol in q("SELECT position, module, symbol FROM stack_symbols WHERE stack_id = ? ORDER BY position", sid):
        print(f"  #{pos:<2d} {(symbol or '?')[:90]}  [{module.rsplit('/', 1)[-1]}]")
