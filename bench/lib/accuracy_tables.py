"""Turn accuracy.sh's raw results into accuracy.json, the plot data and the
"## Accuracy" section of BENCHMARKS.md (stdout).

Usage: accuracy_tables.py DATA_DIR SEEDS QUICK "WORKLOADS" JSON_OUT PLOT_DIR DESCS

DATA_DIR holds, per workload W: truth_W.json (allocprof report --json of a
rate=1 run over glibc), truthje_W.json (rate=1 over jemalloc, usable
sizes), ap_W_K.json (allocprof at the default rate, seed K) and je_W_K.txt
(jeprof --text --alloc_space --show_bytes of jemalloc's profile, run K);
cross.txt ("TOOL objects bytes" lines) and sim.jsonl (bench/stride_bench).
DESCS: "workload<TAB>description" lines. Python standard library only.
"""
import json
import math
import os
import statistics
import sys

TOP = 5  # sites per workload in the tables
MIN_SHARE = 0.002  # ... among those with at least 0.2% of the allocated bytes


def site_name(s):
    return s.get("function") or s.get("name") or "?"


def load_report(path):
    with open(path) as f:
        d = json.load(f)
    sites = {}
    for s in d["sites"]:
        # Several rows can share a function name (different files): add.
        e = sites.setdefault(site_name(s), {"bytes": 0.0, "lo": 0.0, "hi": 0.0, "samples": 0})
        e["bytes"] += s["bytes"]
        e["lo"] += s["bytes_lo"]
        e["hi"] += s["bytes_hi"]
        e["samples"] += s["samples"]
    return d["total"], sites


def load_jeprof(path):
    total, sites = None, {}
    with open(path) as f:
        for line in f:
            if line.startswith("Total:"):
                total = float(line.split()[1])
                continue
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[0].isdigit():
                sites[parts[5].strip()] = sites.get(parts[5].strip(), 0.0) + float(parts[0])
    return total, sites


def rel(est, truth):
    return est / truth - 1.0 if truth > 0 else float("nan")


def pct(x):
    return "-" if x is None or math.isnan(x) else "%+.1f%%" % (100.0 * x)


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%.0f %s" if unit == "B" else "%.2f %s") % (n, unit)
        n /= 1024.0
    return str(n)


def analyse_workload(data, w, seeds):
    truth_total, truth = load_report(os.path.join(data, "truth_%s.json" % w))
    _, truth_je = load_report(os.path.join(data, "truthje_%s.json" % w))
    big = [k for k in truth if truth[k]["bytes"] >= MIN_SHARE * truth_total["bytes"]]
    top = sorted(big, key=lambda k: -truth[k]["bytes"])[:TOP]
    runs = []
    for k in range(1, seeds + 1):
        ap_total, ap = load_report(os.path.join(data, "ap_%s_%d.json" % (w, k)))
        je_total, je = load_jeprof(os.path.join(data, "je_%s_%d.txt" % (w, k)))
        rows = []
        for name in top + ["(total)"]:
            if name == "(total)":
                t = truth_total["bytes"]
                a = {"bytes": ap_total["bytes"], "lo": ap_total["bytes_lo"],
                     "hi": ap_total["bytes_hi"], "samples": ap_total["samples"]}
                j = je_total
                tu = sum(v["bytes"] for v in truth_je.values())
            else:
                t = truth[name]["bytes"]
                a = ap.get(name, {"bytes": 0.0, "lo": 0.0, "hi": 0.0, "samples": 0})
                j = je.get(name)
                tu = truth_je.get(name, {}).get("bytes")
            rows.append({
                "site": name, "truth": t, "truth_usable_je": tu,
                "allocprof": a["bytes"], "lo": a["lo"], "hi": a["hi"], "samples": a["samples"],
                "allocprof_err": rel(a["bytes"], t),
                # A site with no sample is absent from the report: it states no
                # interval, so it is counted apart ("reported"), not as covered.
                "reported": a["samples"] > 0,
                "covered": a["samples"] > 0 and a["lo"] <= t <= a["hi"],
                "jemalloc": j,
                "jemalloc_err": None if j is None else rel(j, t),
                "jemalloc_err_usable": None if j is None or not tu else rel(j, tu),
            })
        runs.append(rows)
    return {"truth_total": truth_total, "top": top, "runs": runs}


def summary(res):
    site_rows = [r for rows in res["runs"] for r in rows if r["site"] != "(total)"]
    ap = [abs(r["allocprof_err"]) for r in site_rows]
    je = [abs(r["jemalloc_err"]) for r in site_rows if r["jemalloc_err"] is not None]
    jeu = [abs(r["jemalloc_err_usable"]) for r in site_rows
           if r["jemalloc_err_usable"] is not None]
    med = lambda v: statistics.median(v) if v else float("nan")
    return {"sites": len(site_rows), "intervals": sum(r["reported"] for r in site_rows),
            "covered": sum(r["covered"] for r in site_rows),
            "allocprof_median_abs_err": med(ap), "jemalloc_median_abs_err": med(je),
            "jemalloc_median_abs_err_usable": med(jeu), "jemalloc_matched": len(je)}


def write_plot_data(plot_dir, results, sims):
    os.makedirs(plot_dir, exist_ok=True)
    with open(os.path.join(plot_dir, "points.dat"), "w") as f:
        f.write("# samples abs_rel_err (allocprof, real runs, every site and seed)\n")
        for res in results.values():
            for rows in res["runs"]:
                for r in rows:
                    if r["site"] != "(total)" and r["samples"] > 0:
                        f.write("%d %.6g\n" % (r["samples"], abs(r["allocprof_err"])))
    curve = [s for s in sims if s["kind"] == "curve"]
    with open(os.path.join(plot_dir, "curve.dat"), "w") as f:
        f.write("# expected_samples mean_samples rms mean_abs coverage reps\n")
        for s in curve:
            f.write("%d %.6g %.6g %.6g %.6g %d\n" % (s["expected_samples"], s["mean_samples"],
                                                     s["rms"], s["mean_abs"], s["coverage"],
                                                     s["reps"]))
    # Coverage of real runs in bins of sample counts.
    bins = [(1, 9), (10, 99), (100, 999), (1000, 10**12)]
    with open(os.path.join(plot_dir, "real_coverage.dat"), "w") as f:
        f.write("# bin_center coverage n\n")
        for lo, hi in bins:
            rows = [r for res in results.values() for rows in res["runs"] for r in rows
                    if lo <= r["samples"] <= hi]
            if rows:
                f.write("%.6g %.6g %d\n" % (math.sqrt(lo * min(hi, lo * 10)),
                                            sum(r["covered"] for r in rows) / len(rows),
                                            len(rows)))


def main():
    data, seeds, quick, workloads, json_out, plot_dir, descs = sys.argv[1:8]
    seeds = int(seeds)
    wl = workloads.split()
    desc = dict(line.split("\t", 1) for line in descs.splitlines() if "\t" in line)
    results = {w: analyse_workload(data, w, seeds) for w in wl}
    sims = [json.loads(line) for line in open(os.path.join(data, "sim.jsonl"))]
    cross = {}
    for line in open(os.path.join(data, "cross.txt")):
        f = line.split()
        if len(f) == 3:
            cross[f[0]] = {"objects": int(f[1]), "bytes": int(f[2])}
    sums = {w: summary(results[w]) for w in wl}
    with open(json_out, "w") as f:
        json.dump({"quick": quick == "1", "seeds": seeds, "workloads": results,
                   "summary": sums, "cross_check": cross, "simulations": sims}, f, indent=1)
    write_plot_data(plot_dir, results, sims)

    out = []
    p = out.append
    p("## Accuracy\n")
    p("Generated by `bench/suites/accuracy.sh`. Truth: allocprof at rate=1 (every allocation"
      " recorded) over glibc, `allocprof report --alloc --json`. allocprof: default rate"
      " (512 KiB), %d runs with seeds 1..%d; the interval is the reported 95%% interval."
      " jemalloc: `prof:true,prof_accum:true,lg_prof_sample:19` (the same mean interval),"
      " %d runs, `jeprof --text --alloc_space --show_bytes`. Sites are the %d largest by"
      " true allocated bytes among those with >= 0.2%% of the total, matched by function name; jemalloc records usable sizes (its"
      " size classes), so its error is given against requested bytes and against a rate=1"
      " allocprof run over jemalloc read with `--usable`. \"-\": jeprof names the site"
      " differently (static functions of a stripped binary).%s\n" % (
          seeds, seeds, seeds, TOP,
          " **Quick run: few runs; coverage and error figures are indicative only.**"
          if quick == "1" else ""))
    p("### Summary over all runs\n")
    p("| workload | sites x runs | intervals reported | allocprof's interval covers the"
      " truth | allocprof median abs error | jemalloc median abs error: requested / usable"
      " (sites matched) |")
    p("|---|---|---|---|---|---|")
    for w in wl:
        s = sums[w]
        p("| %s | %d | %d | %d (%.1f%%) | %s | %s / %s (%d) |" % (
            w, s["sites"], s["intervals"], s["covered"],
            100.0 * s["covered"] / max(s["intervals"], 1),
            pct(s["allocprof_median_abs_err"]).lstrip("+"),
            pct(s["jemalloc_median_abs_err"]).lstrip("+"),
            pct(s["jemalloc_median_abs_err_usable"]).lstrip("+"), s["jemalloc_matched"]))
    tot_i = sum(sums[w]["intervals"] for w in wl)
    tot_c = sum(sums[w]["covered"] for w in wl)
    p("\nAll workloads: %d of %d reported intervals (%.1f%%) contain the truth; nominal 95%%." % (
        tot_c, tot_i, 100.0 * tot_c / max(tot_i, 1)))
    p("")
    for w in wl:
        res = results[w]
        p("### %s (run 1)\n\n%s; %s allocated in %d objects.\n" % (
            w, desc.get(w, w), human(res["truth_total"]["bytes"]), res["truth_total"]["objects"]))
        p("| site | truth | allocprof [95% interval] | samples | error | covers | jemalloc |"
          " error | vs usable |")
        p("|---|---|---|---|---|---|---|---|---|")
        for r in res["runs"][0]:
            p("| %s | %s | %s [%s, %s] | %d | %s | %s | %s | %s | %s |" % (
                r["site"], human(r["truth"]), human(r["allocprof"]), human(r["lo"]),
                human(r["hi"]), r["samples"], pct(r["allocprof_err"]),
                "yes" if r["covered"] else ("**no**" if r["reported"] else "no sample"),
                "-" if r["jemalloc"] is None else human(r["jemalloc"]), pct(r["jemalloc_err"]),
                pct(r["jemalloc_err_usable"])))
        p("")
    xt = results.get("xthread")
    if xt and cross:
        t = xt["truth_total"]
        p("### Cross-check of the truth (xthread)\n")
        p("| recorder | objects | bytes | bytes vs allocprof rate=1 |")
        p("|---|---|---|---|")
        p("| allocprof rate=1 | %d | %d | - |" % (t["objects"], t["bytes"]))
        for tool, v in cross.items():
            p("| %s | %d | %d | %s |" % (tool, v["objects"], v["bytes"],
                                         "%+.4f%%" % (100 * rel(v["bytes"], t["bytes"]))))
        p("")
    stride = [s for s in sims if s["kind"] == "stride"]
    if stride:
        s0 = stride[0]
        p("### Fixed stride against per-byte random sampling (simulation)\n")
        p("`bench/stride_bench.c`: a loop allocates %d x %d B from one site, then %d x %d B"
          " from another, %d times: the pattern repeats every %d bytes. A fixed-stride sampler"
          " (one sample per %d allocated bytes charged to the allocation that crosses it, as"
          " .NET's AllocationTick) against allocprof's sampler (`ap_sampler_*`, estimates and"
          " intervals from `estimate.h`) at the same mean interval, %d replications." % (
              stride[0]["per_iter"], stride[0]["size"], stride[1]["per_iter"] if len(stride) > 1
              else 0, stride[1]["size"] if len(stride) > 1 else 0, s0["iters"], s0["stride"],
              s0["stride"], s0["reps"]))
        p("")
        p("| site | truth | stride, counter starting at the stride: error | stride, random"
          " phase: mean error / RMS | allocprof: mean error / RMS | allocprof coverage |"
          " allocprof samples |")
        p("|---|---|---|---|---|---|---|")
        for s in stride:
            p("| %s | %s | %s | %s / %.1f%% | %s / %.1f%% | %.1f%% | %.0f |" % (
                s["site"], human(s["truth"]), pct(s["stride_fixed"]["rel_err"]),
                pct(s["stride_random_phase"]["bias"]), 100 * s["stride_random_phase"]["rms"],
                pct(s["allocprof"]["bias"]), 100 * s["allocprof"]["rms"],
                100 * s["allocprof"]["coverage"], s["allocprof"]["mean_samples"]))
        p("")
        p("The stride locks onto the period: every sample falls at the same place in the"
          " pattern, so one site is charged with everything and the other with nothing however"
          " long the program runs; a random starting phase only turns that into an"
          " all-or-nothing lottery whose error never shrinks. allocprof's estimate is unbiased"
          " (mean error within the Monte Carlo noise) and its intervals cover at the nominal"
          " rate.\n")
    curve = [s for s in sims if s["kind"] == "curve"]
    if curve:
        p("### Error and coverage against the number of samples (simulation)\n")
        p("Small objects (16-256 B, uniform) at R = %d, %d replications per point; theory: relative"
          " sd ~ 1/sqrt(s) for objects much smaller than R.\n" % (curve[0]["rate"],
                                                                  curve[0]["reps"]))
        p("| expected samples | mean samples | RMS error | 1/sqrt(s) | mean error (bias) |"
          " interval coverage |")
        p("|---|---|---|---|---|---|")
        for s in curve:
            p("| %d | %.1f | %.1f%% | %.1f%% | %s | %.1f%% |" % (
                s["expected_samples"], s["mean_samples"], 100 * s["rms"],
                100 / math.sqrt(s["expected_samples"]), pct(s["bias"]), 100 * s["coverage"]))
        p("")
    p("![relative error against samples](bench/plots/error_vs_samples.png)\n")
    p("![interval coverage against samples](bench/plots/coverage.png)\n")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
