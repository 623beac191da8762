"""Allocation-heavy Python workload for bench/suites/compare.sh and accuracy.sh.

Usage: python3 alloc_heavy.py SCALE

Builds and discards many short-lived objects the way typical Python services
do: records as dicts, string formatting and joins, JSON round trips, sorting,
and a dict-of-lists index. Deterministic for a given SCALE (no randomness;
the suites also set PYTHONHASHSEED=0), so a rate=1 run gives the truth for
sampled runs. The suites run it with PYTHONMALLOC=malloc so that every object
goes through malloc (CPython's own small-object allocator would otherwise
hide most of them from any malloc-level profiler).
"""
import json
import sys


def make_record(i):
    return {
        "id": i,
        "name": "user-%06d" % i,
        "tags": ["t%d" % (i % 7), "g%d" % (i % 13)],
        "score": (i * 2654435761) % 1000 / 10.0,
    }


def build_index(records):
    index = {}
    for r in records:
        for t in r["tags"]:
            index.setdefault(t, []).append(r["id"])
    return index


def render(records):
    lines = []
    for r in records:
        lines.append("%s,%s,%.1f" % (r["id"], r["name"], r["score"]))
    return "\n".join(lines)


def round_trip(records):
    text = json.dumps(records)
    return json.loads(text)


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    checksum = 0
    for batch in range(scale):
        records = [make_record(batch * 5000 + i) for i in range(5000)]
        index = build_index(records)
        csv = render(records)
        back = round_trip(records)
        ranked = sorted(back, key=lambda r: (r["score"], r["name"]))
        checksum += len(csv) + len(index) + ranked[0]["id"]
    print("mode=python scale=%d checksum=%d" % (scale, checksum))


if __name__ == "__main__":
    main()
