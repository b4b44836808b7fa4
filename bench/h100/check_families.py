"""Compare a capture with what a program says it called, and summarize a capture.

  check_families.py CAPTURE TRUTH.json   per probed symbol: calls made vs recorded (must be equal)
  check_families.py CAPTURE              per family: calls, failures, kernel-name coverage

Exit status 1 when made != recorded for any probed symbol, or a launch has no name.
"""
import json
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
probed = {r[0] for r in db.execute("SELECT symbol FROM probes WHERE status = 'attached'")}
bad = False

if len(sys.argv) > 2:
    truth = json.load(open(sys.argv[2]))
    pid = truth["pid"]
    got = dict(db.execute("SELECT api, count(*) FROM api_calls WHERE tgid = ? GROUP BY api", (pid,)).fetchall())
    print(f"{'symbol':32s} {'made':>7s} {'recorded':>9s}")
    for sym in sorted(set(truth["counts"]) | set(got)):
        made = truth["counts"].get(sym, 0)
        rec = got.get(sym, 0)
        if sym not in probed:
            print(f"{sym:32s} {made:7d} {'(not probed)':>9s}")
            continue
        mark = "" if made == rec else "   MISMATCH"
        bad |= made != rec
        print(f"{sym:32s} {made:7d} {rec:9d}{mark}")
    made_total = sum(v for k, v in truth["counts"].items() if k in probed)
    print(f"probed calls made {made_total}, recorded {sum(got.values())}")

print("\nper family:")
for fam, calls, fails, ret in db.execute(
        "SELECT family, count(*), sum(result IS NOT NULL AND result != 0), sum(result IS NOT NULL)"
        " FROM api_calls GROUP BY family ORDER BY family"):
    print(f"  {fam:8s} calls {calls:8d}  with result {ret:8d}  failed {fails:6d}")
launches, named = db.execute("SELECT count(*), count(kernel_name) FROM kernel_launches").fetchone()
share = 100.0 * named / launches if launches else 100.0
print(f"launches {launches}, with a kernel name {named} ({share:.2f}%)")
bad |= named != launches
sync = db.execute("SELECT count(*), min(blocked_ns), sum(blocked_ns) FROM syncs").fetchone()
print(f"syncs {sync[0]}, min blocked {sync[1]} ns, total blocked {sync[2]} ns")
print("leaks:", db.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM leaks").fetchone())
for row in db.execute("SELECT name, value FROM counters WHERE value != 0 AND (name LIKE 'dropped%' OR name LIKE "
                      "'%stale%' OR name LIKE '%without%' OR name LIKE 'decode%') "):
    print("counter", row)
    bad = True
print("\ntop kernels:")
for name, n, api in db.execute("SELECT coalesce(kernel_name, '(unknown)'), count(*), group_concat(DISTINCT api)"
                               " FROM kernel_launches GROUP BY 1 ORDER BY 2 DESC LIMIT 8"):
    print(f"  {n:7d}  {api:30s} {name[:110]}")
sys.exit(1 if bad else 0)
