import json, sys
# Bytes over the three phases, per round: load 16M puts, updates 8M, mixed 4M (each ratio is per byte put).
puts = {'load': 16, 'updates': 8, 'mixed': 4}
d = json.load(open(sys.argv[1]))
tot = {}
for r in d:
    k = (r['write_memory_mib'], r['round'], r['engine'])
    t = tot.setdefault(k, [0.0, 0.0, 0])
    t[0] += r['device_write_amp'] * puts[r['workload']]
    t[1] += r['write_amp'] * puts[r['workload']]
    t[2] += 1
print("| write memory | round | device bytes part./mono. | flush+compaction part./mono. |")
print("|---|---|---|---|")
for (wm, rd, e), (dev, fc, n) in sorted(tot.items()):
    if e != 'partitioned' or n != 3: continue
    m = tot.get((wm, rd, 'monolithic'))
    if not m: continue
    print(f"| {wm} MiB | {rd} | {dev/m[0]:.2f} | {fc/m[1]:.2f} |")
