#!/usr/bin/env python3
"""Renders Google Benchmark JSON files (benchmarks/run writes them) into RESULTS.md and gnuplot data.

  benchmarks/render_results.py [--results DIR] [--output FILE] [--plot-ranks N]

Reads DIR/*.json (one file per program and rank count, named <program>_np<ranks>.json),
DIR/machine.txt and DIR/compile_time*.txt ("key: value" lines, written by the runner: one file
per compiler), and writes
FILE plus DIR/gflops_square.dat and DIR/gflops_other.dat for benchmarks/plot.gp.
Python 3 standard library only.
"""
import argparse, glob, json, os, re, statistics

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
KIND_ORDER = ["shardwise", "handwritten", "pdgemm", "eigen_single", "blas_single", "eigen_openmp"]
TARGET_SIZES, TARGET_RANKS = (2048, 4096), 2
CONTENDED = 0.9  # rank 0's CPU / wall time below this: shared cores, see cpu_share()


def parse_name(name):
    """'pdgemm/nb:64/grid:1x2/m:8/n:8/k:8/manual_time' -> ('pdgemm', {'nb': '64', ..., 'm': 8, ...})."""
    parts = [p for p in name.split("/") if p not in ("manual_time", "real_time")]
    family = "/".join(p for p in parts if ":" not in p)
    keys = dict(p.split(":", 1) for p in parts if ":" in p)
    for d in "mnk":
        if d in keys:
            keys[d] = int(keys[d])
    return family, keys


def load(results):
    """One record per benchmark run name and file: the median over repetitions when there are several."""
    records, contexts = [], {}
    for path in sorted(glob.glob(os.path.join(results, "*.json"))):
        try:
            with open(path) as f:
                data = json.load(f)
        except ValueError as error:
            print(f"render_results: skipping {path}: {error}")
            continue
        if not isinstance(data, dict) or "benchmarks" not in data:
            continue
        source = os.path.basename(path)
        contexts[source] = data.get("context", {})
        match = re.search(r"_np(\d+)\.json$", source)
        groups = {}
        for b in data["benchmarks"]:
            if b.get("error_occurred"):
                continue
            groups.setdefault(b.get("run_name", b["name"]), []).append(b)
        for run_name, entries in groups.items():
            medians = [b for b in entries if b.get("aggregate_name") == "median"]
            iterations = sorted((b for b in entries if b.get("run_type", "iteration") == "iteration"),
                                key=lambda b: b["real_time"])
            if not medians and not iterations:
                continue
            b = medians[0] if medians else iterations[(len(iterations) - 1) // 2]
            family, keys = parse_name(run_name)
            rec = dict(b, name=re.sub(r"/iterations:\d+|/(manual|real)_time$", "", run_name), family=family, keys=keys,
                       kind=family.split("/")[0], source=source, ms=b["real_time"] * UNIT_MS[b.get("time_unit", "ns")])
            rec["np"] = int(match.group(1)) if match else int(b.get("ranks", 1))
            rec["shape"] = tuple(keys[d] for d in "mnk") if all(d in keys for d in "mnk") else None
            records.append(rec)
    return records, contexts


def read_keys(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)


def is_fp32(r):
    return "fp32" in r["name"] or "float" in r["name"]


def best(records, **match):
    """The record with the most GFLOP/s among those whose fields equal `match`."""
    hits = [r for r in records if all(r.get(k) == v for k, v in match.items()) and "GFLOPs" in r]
    return max(hits, key=lambda r: r["GFLOPs"], default=None)


def single(records, kind, shape, np):
    """A single-rank reference for `shape`: from the same rank count if measured there, else any."""
    return best(records, kind=kind, shape=shape, np=np) or best(records, kind=kind, shape=shape)


def natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def cpu_share(r):
    """Rank 0's CPU time over the (manual) wall time: ranks compute or poll all the time, so well
    below 1 means the process was descheduled (other load on the machine) and the time inflated."""
    return r["cpu_time"] / r["real_time"] if r.get("real_time") else None


def flag(r):
    share = cpu_share(r)
    return f" ⚠ CPU/wall {share:.2f}" if share is not None and share < CONTENDED else ""


def fmt(x, digits=2):
    return "–" if x is None else f"{x:,.{digits}f}"


def shape_text(s):
    return f"{s[0]}³" if s[0] == s[1] == s[2] else f"m={s[0]} n={s[1]} k={s[2]}"


def shape_sort(s):
    return (s[0] != s[1] or s[1] != s[2], s)


def matmul_tables(records, out):
    matmul = [r for r in records if r["shape"]]
    notes = set()
    for np in sorted({r["np"] for r in matmul}):
        out.append(f"\n## {np} rank{'s' if np > 1 else ''}\n")
        for shape in sorted({r["shape"] for r in matmul if r["np"] == np}, key=shape_sort):
            rows = [r for r in matmul if r["np"] == np and r["shape"] == shape]
            rows.sort(key=lambda r: (KIND_ORDER.index(r["kind"]) if r["kind"] in KIND_ORDER else 99,
                                     natural(r["name"])))
            eigen = single(records, "eigen_single", shape, np)
            pd = best(records, kind="pdgemm", shape=shape, np=np)
            mark = ""
            if eigen and eigen["source"] != rows[0]["source"]:
                mark = " †"
                notes.add(f"† eigen_single measured in `{eigen['source']}`.")
            out.append(f"### {shape_text(shape)} ({np} rank{'s' if np > 1 else ''})\n")
            out.append(f"| benchmark | time (ms) | GFLOP/s | comm MiB / rank | × eigen_single{mark} | × best pdgemm"
                       " | peak RSS / model (MiB) | CPU / wall |")
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
            for r in rows:
                g = r.get("GFLOPs")
                vs_eigen = g / eigen["GFLOPs"] if g and eigen else None
                vs_pd = g / pd["GFLOPs"] if g and pd else None
                mem = (f"{fmt(r.get('peak_rss_MiB'), 0)} / {fmt(r.get('model_MiB'), 0)}"
                       if "peak_rss_MiB" in r or "model_MiB" in r else "")
                name = re.sub(r"/[mnk]:\d+", "", r["name"])
                name = f"**{name}**" if r is pd else name
                mib = r["bytes_per_rank"] / 2**20 if "bytes_per_rank" in r else None
                share = cpu_share(r)
                warn = " ⚠" if share is not None and share < CONTENDED else ""
                out.append(f"| {name} | {fmt(r['ms'], 3)} | {fmt(g, 1)} | {fmt(mib, 1)} | {fmt(vs_eigen)} "
                           f"| {fmt(vs_pd)} | {mem} | {fmt(share)}{warn} |")
            out.append("")
    out.extend(sorted(notes))


EINSUM_KINDS = ("einsum", "matmul", "attention", "blas_single_batched")


def einsum_tables(records, out):
    """einsum_bench: the batched product against the single-core batched GEMMs, rank-2 einsum
    against matmul for the same plan, attention sharded against unsharded (ratios in one run)."""
    recs = {r["name"]: r for r in records if r["kind"] in EINSUM_KINDS and not r["shape"]}
    if not recs:
        return
    out.append("\n## einsum (einsum_bench, 2 ranks, fp64)\n")
    out.append("| benchmark | time (ms) | GFLOP/s | plan | CPU / wall |\n|---|---:|---:|---|---:|")
    for name in sorted(recs, key=natural):
        r = recs[name]
        out.append(f"| {name} | {fmt(r['ms'], 1)} | {fmt(r.get('GFLOPs'), 1)} | {r.get('label', '')} | "
                   f"{fmt(cpu_share(r))}{' ⚠' if (cpu_share(r) or 1) < CONTENDED else ''} |")
    batched, single_core = recs.get("einsum/batched/b_split"), recs.get("blas_single_batched")
    out.append("")
    if batched and single_core:
        ratio = batched["GFLOPs"] / (2 * single_core["GFLOPs"])
        out.append(f"- batched `bmk,bkn->bmn`, b split over the 2 ranks: {fmt(batched['GFLOPs'], 1)} GFLOP/s = "
                   f"{fmt(ratio, 3)} × 2 × the same GEMMs on one core ({fmt(single_core['GFLOPs'], 1)}) "
                   f"(≥ 0.9: {verdict(ratio >= 0.9)})")
    for plan in ("Outer", "MatchedInner"):
        e, m = recs.get(f"einsum/rank2/{plan}"), recs.get(f"matmul/{plan}")
        if e and m:
            out.append(f"- rank-2 einsum / matmul, {plan} (the same schedule): {fmt(e['ms'], 1)} / {fmt(m['ms'], 1)} ms "
                       f"= {fmt(e['ms'] / m['ms'], 3)}")
    sharded, whole = recs.get("attention/heads_over_x"), recs.get("attention/unsharded")
    if sharded and whole:
        out.append(f"- attention forward + backward, heads over the 2 ranks: {fmt(sharded['ms'], 1)} ms against "
                   f"{fmt(whole['ms'], 1)} ms unsharded: {fmt(whole['ms'] / sharded['ms'], 2)}× faster")


def other_tables(records, out):
    overhead = [r for r in records if r["kind"] == "overhead"]
    cg = [r for r in records if r["kind"] == "cg"]
    rest = [r for r in records if not r["shape"] and r["kind"] not in ("overhead", "cg") + EINSUM_KINDS]
    if overhead:
        out.append("\n## Per-call overhead (overhead_bench)\n\n| benchmark | ranks | time (µs) |\n|---|---:|---:|")
        out.extend(f"| {r['name']} | {r['np']} | {fmt(r['ms'] * 1e3, 3)} |" for r in overhead)
    if cg:
        out.append("\n## One CG iteration against the handwritten MPI + BLAS one (cg_bench)\n\n"
                   "`cg/side_by_side` runs the handwritten, unchecked and checked iterations in turn, so its "
                   "ratios (shardwise's time / the handwritten one's) come from one run; the other rows ran one "
                   "after another.\n\n| benchmark | ranks | n | time (ms) | ratio | ratio, unchecked |\n"
                   "|---|---:|---:|---:|---:|---:|")
        out.extend(f"| {r['name']} | {r['np']} | {fmt(r.get('n'), 0)} | {fmt(r['ms'], 3)}{flag(r)} | {fmt(r.get('ratio'))} | "
                   f"{fmt(r.get('ratio_unchecked'))} |" for r in cg)
    if rest:
        out.append("\n## Other benchmarks\n\n| benchmark | file | time (ms) |\n|---|---|---:|")
        out.extend(f"| {r['name']} | {r['source']} | {fmt(r['ms'], 4)} |" for r in rest)


def verdict(ok):
    return "**MET**" if ok else "**NOT MET**"


def targets(records, out):
    out.append(f"\n## Targets ({TARGET_RANKS} ranks, fp64, square {' and '.join(map(str, TARGET_SIZES))})\n")
    recs = [r for r in records if r["np"] == TARGET_RANKS and not is_fp32(r)]
    lines = {"a": [], "b": [], "c": [], "d": []}
    met = {"a": True, "b": True, "c": True, "d": True}
    for size in TARGET_SIZES:
        shape = (size, size, size)
        sw = best([r for r in recs if r.get("distributed") == 1], kind="shardwise", shape=shape)
        pd = best(recs, kind="pdgemm", shape=shape)
        singles = [s for s in (single(records, k, shape, TARGET_RANKS) for k in ("eigen_single", "blas_single")) if s]
        if sw and pd:
            ratio = sw["GFLOPs"] / pd["GFLOPs"]
            met["a"] &= ratio >= 1.25
            lines["a"].append(f"- {size}: {sw['name']} {fmt(sw['GFLOPs'], 1)} / {pd['name']} {fmt(pd['GFLOPs'], 1)}"
                              f" GFLOP/s = {fmt(ratio, 3)} (≥ 1.25: {verdict(ratio >= 1.25)}){flag(sw)}{flag(pd)}")
        if sw and singles:
            ref = max(singles, key=lambda s: s["GFLOPs"])
            ratio = sw["GFLOPs"] / (2 * ref["GFLOPs"])
            met["b"] &= ratio >= 0.93
            lines["b"].append(f"- {size}: {sw['name']} {fmt(sw['GFLOPs'], 1)} / (2 × {ref['name']} "
                              f"{fmt(ref['GFLOPs'], 1)}, from {ref['source']}) = {fmt(ratio, 3)} "
                              f"(≥ 0.93: {verdict(ratio >= 0.93)}){flag(sw)}{flag(ref)}")
        for r in (r for r in recs if r["kind"] == "shardwise" and r["shape"] == shape):
            hw = next((h for h in recs if h["name"] == "handwritten/" + r["name"][len("shardwise/"):]), None)
            if hw:
                ratio = r["ms"] / hw["ms"]
                met["c"] &= ratio <= 1.03
                lines["c"].append(f"- {r['name']}: {fmt(r['ms'], 3)} ms / handwritten {fmt(hw['ms'], 3)} ms = "
                                  f"{fmt(ratio, 3)} (≤ 1.03: {verdict(ratio <= 1.03)}){flag(r)}{flag(hw)}")
    for r in (r for r in records if r["name"].startswith("overhead/shardwise/")):
        raw = next((x for x in records if x["np"] == r["np"] and x["name"] == "overhead/raw/" + r["name"][19:]), None)
        if raw:
            diff_us = (r["ms"] - raw["ms"]) * 1e3
            met["d"] &= diff_us <= 2.0
            lines["d"].append(f"- {r['name'][19:]} ({r['np']} ranks): {fmt(r['ms'] * 1e3, 3)} µs − raw "
                              f"{fmt(raw['ms'] * 1e3, 3)} µs = {fmt(diff_us, 3)} µs "
                              f"(≤ 2 µs: {verdict(diff_us <= 2.0)})")
    titles = {"a": "(a) best shardwise ≥ 1.25 × best pdgemm (GFLOP/s)",
              "b": "(b) best shardwise ≥ 0.93 × 2 × max(eigen_single, blas_single) (GFLOP/s)",
              "c": "(c) every shardwise/X within 3 % of handwritten/X (time)",
              "d": "(d) overhead/shardwise/P − overhead/raw/P ≤ 2 µs"}
    for key, title in titles.items():
        status = verdict(met[key]) if lines[key] else "**NO DATA**"
        out.append(f"**{title}**: {status}\n")
        out.extend(lines[key] or ["- no matching benchmarks in these results"])
        out.append("")


def plot_data(records, results, np):
    """GFLOP/s per series: best shardwise per policy, handwritten, pdgemm, single-rank references."""
    recs = [r for r in records if r["shape"] and "GFLOPs" in r and not is_fp32(r)]
    series = sorted({"shardwise " + r["family"].split("/")[1] for r in recs
                     if r["kind"] == "shardwise" and r["np"] == np and "/" in r["family"]})
    series += ["handwritten (best)", "pdgemm (best)", "eigen_single", "blas_single", "eigen_openmp"]

    def value(name, shape):
        if name.startswith("shardwise "):
            hit = best([r for r in recs if r["family"].split("/")[:2] == ["shardwise", name[10:]]], shape=shape, np=np)
        elif name.endswith(" (best)"):
            hit = best(recs, kind=name.split()[0], shape=shape, np=np)
        else:
            hit = single(recs, name, shape, np)
        return f"{hit['GFLOPs']:.2f}" if hit else "?"

    shapes = sorted({r["shape"] for r in recs if r["np"] == np}, key=shape_sort)
    for file, chosen, label in (("gflops_square.dat", [s for s in shapes if s[0] == s[1] == s[2]], lambda s: s[0]),
                                ("gflops_other.dat", [s for s in shapes if not s[0] == s[1] == s[2]],
                                 lambda s: f"{s[0]}x{s[1]}x{s[2]}")):
        table = {name: [value(name, s) for s in chosen] for name in series}
        present = [name for name in series if any(v != "?" for v in table[name])]  # no empty columns
        with open(os.path.join(results, file), "w") as f:
            f.write("shape " + " ".join(f'"{name}"' for name in present) + "\n")
            for i, s in enumerate(chosen):
                f.write(f"{label(s)} " + " ".join(table[name][i] for name in present) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=os.path.join(here, "results"))
    parser.add_argument("--output", default=os.path.join(here, "RESULTS.md"))
    parser.add_argument("--plot-ranks", type=int, default=TARGET_RANKS)
    parser.add_argument("--plot-image", default="gflops.png", help="image path written into RESULTS.md")
    args = parser.parse_args()
    records, contexts = load(args.results)
    if not records:
        raise SystemExit(f"render_results: no Google Benchmark JSON in {args.results}")
    machine = read_keys(os.path.join(args.results, "machine.txt"))
    out = ["# shardwise benchmark results", "", "Generated by `benchmarks/run` (benchmarks/render_results.py); "
           "times are the slowest rank's (manual time), GFLOP/s = 2mnk / time.", "", "| setting | value |", "|---|---|"]
    out.extend(f"| {k} | {v} |" for k, v in machine.items())
    for source, c in contexts.items():
        load_avg = " ".join(f"{x:.2f}" for x in c.get("load_avg", []))
        out.append(f"| {source} | {c.get('date', '?')}, load average at start {load_avg}, "
                   f"Google Benchmark library build: {c.get('library_build_type', '?')} |")
    out.append(f"\n![GFLOP/s by problem size, {args.plot_ranks} ranks]({args.plot_image})\n")
    out.append("Tables name benchmarks without their shape. comm MiB / rank: the counter `bytes_per_rank` (for "
               "pdgemm an estimate: what a rank receives in a stationary-C SUMMA). × columns are GFLOP/s ratios; "
               "the best pdgemm (over block size and grid) is in bold. CPU / wall: rank 0's CPU time over the "
               f"wall time; below {CONTENDED} (⚠) the process was descheduled (other load on the cores), "
               "so the time is inflated.")
    targets(records, out)
    matmul_tables(records, out)
    einsum_tables(records, out)
    scaling = os.path.join(args.results, "scaling.md")
    if os.path.exists(scaling):
        out.append("\n## Beyond one node: modeled bytes per rank at P up to 4096 (benchmarks/scaling_model)\n")
        out.append("m = n = k, fp64, at most 4 GiB per rank, every operand stored once; the lower bound is the "
                   "memory-independent one, 3 (n³/P)^(2/3) − 3 n²/P words (Al Daas et al., SPAA 2022).\n")
        with open(scaling) as f:
            out.append(f.read())
    other_tables(records, out)
    # compile_time.txt (the build's compiler), compile_time_<name>.txt (others, e.g. clang)
    for path in sorted(glob.glob(os.path.join(args.results, "compile_time*.txt")), key=lambda p: (len(p), p)):
        compile_time = read_keys(path)
        if compile_time:
            compiler = compile_time.get("compiler", "?")
            out.append(f"\n## Compile time, {compiler} (benchmarks/compile_time.sh, {os.path.basename(path)})\n\n"
                       "| measurement | value |\n|---|---|")
            out.extend(f"| {k} | {v} |" for k, v in compile_time.items())
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")
    plot_data(records, args.results, args.plot_ranks)
    print(f"render_results: {len(records)} benchmarks -> {args.output}")


if __name__ == "__main__":
    main()
