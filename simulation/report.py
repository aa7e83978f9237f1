#!/usr/bin/env python3
"""simulation/results/simulated.md from the cells of `simulation/simulate table`.

    simulation/report.py CELLS_TSV OUTPUT
    simulation/report.py --left-out        the cells LEFT_OUT names, one a line: PLATFORM P SHAPE PLAN REASON

CELLS_TSV is the one results table, a row per cell (simulation/simulate cell writes it):
platform, P, shape, plan, the simulation driver's line (or FAILED ...), the wall time, the
simulator's peak private memory, the load average at the start, the cores and the date.
The report has, per platform, a summary (per P and shape: simulated seconds and % of peak of the
planner's best plan, 2-D SUMMA, 2.5D and PDGEMM at its best NB; the best plan's bytes over the
lower bound), the goals of issue 25 as far as the cells allow, every cell's full line, the cells
left out (LEFT_OUT: marked "needs a larger machine" with the reason, or "would not change the
table") and the cells not run otherwise, with the commands that fill them; and the time model's
prediction for every best, SUMMA and 2.5D cell next to its simulated time, with the plans the
planner picks by predicted time (from `simulation/simulate predict`: the planner and the model
only, no simulation). Then the strong-scaling series (STRONG_SHAPES on STRONG_PROCS ranks, issue
40): the table's plans and "time" (PLATFORM-P-SHAPE-time.md, the planner's plan by predicted time
on the platform's machine), each with its prediction and speed-up over PDGEMM, and the goals.
Then the drop-in beside PDGEMM (cells dropinNB, issue 39): the same pdgemm_ call, in ScaLAPACK's
layout on PDGEMM's grid and NB, computed by libshardwise_scalapack instead of PBLAS; and the same
for p?tran and p?gemr2d (cells pdtranNB, pdgemr2dNB, dropintranNB, dropingemr2dNB on copy8k).
"""
import math
import os
import re
import subprocess
import sys

PLATFORMS = [("fat_tree", "Fat tree (`simulation/platforms/fat_tree_cluster.xml`: InfiniBand HDR, 25 GB/s per port)"),
             ("torus", "3-D torus (`simulation/platforms/torus_cluster.xml`: Tofu D links, 6.8 GB/s)")]
PROCS = [64, 127, 256, 512, 1024, 4096]
SHAPES = [("square", "square 32768³"), ("tall", "tall-skinny 2²¹ x 2¹² x 2¹²"),
          ("large_k", "large-k 2¹² x 2²¹ x 2¹²"), ("flat", "flat 2¹⁷ x 2¹¹ x 2¹⁷")]
PLANS = ["best", "summa", "25d", "pdgemm64", "pdgemm128", "pdgemm256"]
# The strong-scaling series (issue 40): a fixed product on 64 to 4096 ranks, with the plan chosen
# by predicted time ("time", run where it differs from best) beside the table's plans.
STRONG_PROCS = [64, 256, 1024, 4096]
STRONG_SHAPES = [("square8k", "square 8192³"), ("square16k", "square 16384³"), ("tall8k", "tall-skinny 2¹⁹ x 2¹⁰ x 2¹⁰"),
                 ("large_k8k", "large-k 2¹⁰ x 2¹⁹ x 2¹⁰"), ("flat8k", "flat 2¹⁵ x 2⁹ x 2¹⁵")]
STRONG_PLANS = ["best", "time", "summa", "25d"]
# Not cells of the table: PDGEMM on a grid of down to 3/4 of the ranks (`simulate_pdgemm
# --allow-idle`), run where P's only full grids are 1-D; the PDGEMM column takes them into account.
IDLE_PDGEMM = ["pdgemm64idle", "pdgemm128idle", "pdgemm256idle"]
PDGEMM_NBS = ("pdgemm64", "pdgemm128", "pdgemm256")
BOTH = ("fat_tree", "torus")
# The cells of the table that this project's machines (2 cores, 24 GiB) leave out, kept here
# only: the report marks them (by reason) instead of "not run", and `simulation/simulate table`
# skips them unless --include-left-out (it reads them from `simulation/report.py --left-out`).
# Entries: platforms, P, shape, plans, reason. A cell that has a result shows its result.
LEFT_OUT = [
    (BOTH, (1024, 4096), "large_k", PDGEMM_NBS, "memory"),
    (BOTH, (512,), "large_k", PDGEMM_NBS, "memory, hours"),
    (BOTH, (1024, 4096), "large_k", ("summa",), "hours"),
    (BOTH, (4096,), "large_k", ("25d",), "hours"),
    (("torus",), (512,), "large_k", ("summa",), "hours"),
    (("fat_tree",), (127, 256), "large_k", ("pdgemm64", "pdgemm128"), "hours"),
    (("torus",), (127, 256), "large_k", PDGEMM_NBS, "hours"),
    (("torus",), (4096,), "tall", ("best",), "hours"),
    (BOTH, (1024, 4096), "square", ("pdgemm64", "pdgemm256"), "same"),
]
# Per reason: the mark in the summary and the legend's words.
LEFT_OUT_REASONS = {
    "memory": ("needs a larger machine (memory)",
               "PDGEMM on the large-k shape keeps about 38 MiB private per simulated rank: about 38 GiB "
               "at P = 1024 and 154 GiB at P = 4096, more than 24 GiB"),
    "memory, hours": ("needs a larger machine (memory, hours)",
                      "PDGEMM on the large-k shape at P = 512: about 19 GiB, at the limit of 24 GiB, and "
                      "hours each"),
    "hours": ("needs a larger machine (hours)",
              "an hour or more each on one of the 2 cores: large-k's 2²¹ / 128 panel steps (SUMMA, 2.5D, "
              "PDGEMM) and P = 4096 tall-skinny's 1024-rank AllGathers are millions of simulated messages"),
    "same": ("would not change the table",
             "PDGEMM's NB 64 and 256 on the square shape at P = 1024 and 4096, where NB 128 ran: on this "
             "shape's square grids (P = 64, 256, 512, both platforms) NB 64, 128 and 256 gave the same "
             "simulated time to the microsecond"),
}


def left_out_cells():
    """{(platform, P, shape, plan): reason} for every cell LEFT_OUT names."""
    cells = {}
    for platforms, procs, shape, plans, reason in LEFT_OUT:
        for platform in platforms:
            for p in procs:
                for plan in plans:
                    cells[(platform, p, shape, plan)] = reason
    return cells


LEFT = left_out_cells()
COLUMNS = ["P", "m", "k", "n", "plan", "mesh", "shardings", "seconds", "gflops", "peak", "sent", "model", "equal",
           "bound", "over_bound", "C"]


def read_cells(table):
    """The cells of the results table (a TSV file: platform, P, shape, plan, the driver's row or
    FAILED ..., wall seconds, the simulator's peak private MiB, load, cores, date)."""
    cells = {}
    if not os.path.isfile(table):
        return cells
    with open(table, encoding="utf-8") as f:
        rows = f.read().splitlines()[1:]
    for row in rows:
        fields = row.split("\t")
        if len(fields) != 10:
            continue
        platform, p, shape, plan, line, wall, memory = fields[:7]
        cell = {"line": line, "note": ""}
        if wall and memory:
            cell["wall"], cell["memory"] = int(wall), int(memory)
        if line.startswith("| "):
            values = [x.strip() for x in line.strip().strip("|").split("|")]
            cell.update(dict(zip(COLUMNS, values)))
            cell["ok"] = cell.get("seconds", "") not in ("", "-")
        else:
            cell["ok"] = False
            cell["failed"] = line
        cells[(platform, int(p), shape, plan)] = cell
    return cells


def number(text):
    try:
        return float(text.split()[0])
    except (ValueError, IndexError, AttributeError):
        return None


def best_pdgemm(cells, platform, p, shape):
    """The PDGEMM cell with the shortest time over the NBs and grids run, whether it is a cell on
    fewer ranks (`pdgemmNBidle`), and what ran: the NBs on all ranks, then those on fewer."""
    runs = [(number(cells[(platform, p, shape, plan)]["seconds"]), plan) for plan in PLANS[3:] + IDLE_PDGEMM
            if (platform, p, shape, plan) in cells and cells[(platform, p, shape, plan)]["ok"]]
    if not runs:
        return None, False, ""
    seconds, plan = min(runs)
    full = [r[1][6:] for r in runs if not r[1].endswith("idle")]
    fewer = [r[1][6:-4] for r in runs if r[1].endswith("idle")]
    if not full:
        tried = "/".join(fewer) + " on fewer ranks only"
    else:
        tried = "/".join(full) + ("; on fewer ranks " + "/".join(fewer) if fewer else "")
    return cells[(platform, p, shape, plan)], plan.endswith("idle"), tried


MODELED = ("best", "summa", "25d")  # the plans the time model reads; PDGEMM's schedule is ScaLAPACK's


def predictions():
    """From `simulation/simulate predict`: {(platform, P, shape, plan): (predicted s, GEMM s)} for
    the best, summa and 25d cells, and {(platform, P, shape): the plan chosen by time}; both empty
    (with a warning) where it cannot run."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simulate")
    try:
        text = subprocess.run([script, "predict"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"simulate_report: no predictions ({error})", file=sys.stderr)
        return {}, {}
    cells, by_time = {}, {}
    for line in text.splitlines():
        f = line.split("\t")
        if f[0] == "cell":
            cells[(f[1], int(f[2]), f[3], f[4])] = (float(f[5]), float(f[6]))
        elif f[0] == "time":
            by_time[(f[1], int(f[2]), f[3])] = {"same_as": f[4], "seconds": float(f[5]), "gemm": float(f[6]),
                                                "mesh": f[7], "shardings": f[8], "bytes_plan_seconds": float(f[9])}
    return cells, by_time


def emit_predicted(emit, cells, predicted, by_time):
    """The section "Predicted against simulated"."""
    emit("## Predicted against simulated")
    emit("")
    if not predicted:
        emit("No predictions: `simulation/simulate predict` did not run (a C++20 compiler is needed).")
        emit("")
        return
    emit("The time model (`include/shardwise/plan/time_model.hpp`) reads each plan's steps on the platform's "
         "machine (`sw::machines::simulated_fat_tree`, `simulated_torus`: the XML's link bandwidth and latency "
         "and host speed, SMPI's binomial broadcast): GEMM flops at the host speed, ring collectives by their "
         "bytes and messages, ring variants overlapped, SUMMA's panels one after the other with "
         "ceil(log2 p) messages a broadcast; on the torus every message routed, paying the longest route's "
         "latency and the busiest link's shared bandwidth. PDGEMM's cells run ScaLAPACK's schedule, which it "
         "does not read.")
    emit("")
    rows = []
    for key, cell in cells.items():  # the table's cells; the strong-scaling series has its own count
        if key[3] in MODELED and cell["ok"] and key in predicted and key[2] in [x for x, _ in SHAPES]:
            rows.append((predicted[key][0] / number(cell["seconds"]), key, cell))
    within = [r for r in rows if abs(r[0] - 1) <= 0.1]
    per_platform = []
    for platform, _ in PLATFORMS:
        mine = [r for r in rows if r[1][0] == platform]
        per_platform.append(f"{platform.replace('_', ' ')} {len([r for r in mine if abs(r[0] - 1) <= 0.1])} of {len(mine)}")
    if not rows:
        emit("No cell to compare.")
        emit("")
        return
    ratios = sorted(r[0] for r in rows)
    emit(f"- Within 10 % of the simulated time: {len(within)} of the {len(rows)} best, SUMMA and 2.5D cells run "
         f"({', '.join(per_platform)}); predicted / simulated from {ratios[0]:.3f} to {ratios[-1]:.3f}, median "
         f"{ratios[len(ratios) // 2]:.3f}.")
    worst = sorted(rows, key=lambda r: -abs(math.log(r[0])))[:10]
    emit("- The worst: " + "; ".join(
        f"{k[0].replace('_', ' ')} P = {k[1]} {k[2]} {k[3]} ({c['mesh']}): {predicted[k][0]:.3f} s predicted, "
        f"{number(c['seconds']):.3f} s simulated ({r:.2f})" for r, k, c in worst) + ".")
    emit("")

    emit("### The fastest simulated plan, by the model and by the simulation")
    emit("")
    emit("Per platform, P and shape with two or more of best, SUMMA and 2.5D simulated: the one the model predicts "
         "fastest and the one the simulation ran fastest.")
    emit("")
    agree, differ = 0, []
    for platform, _ in PLATFORMS:
        for p in PROCS:
            for shape, _ in SHAPES:
                run = [plan for plan in MODELED if (platform, p, shape, plan) in cells and
                       cells[(platform, p, shape, plan)]["ok"] and (platform, p, shape, plan) in predicted]
                if len(run) < 2:
                    continue
                model = min(run, key=lambda plan: predicted[(platform, p, shape, plan)][0])
                simulated = min(run, key=lambda plan: number(cells[(platform, p, shape, plan)]["seconds"]))
                if model == simulated:
                    agree += 1
                else:
                    differ.append((platform, p, shape, model, simulated))
    emit(f"- The same plan in {agree} of {agree + len(differ)}" + ("." if not differ else "; not in:"))
    for platform, p, shape, model, simulated in differ:
        def seconds(plan):
            key = (platform, p, shape, plan)
            return f"{plan} {predicted[key][0]:.3f} s predicted, {number(cells[key]['seconds']):.3f} s simulated"
        emit(f"  - {platform.replace('_', ' ')} P = {p} {shape}: model {model}, simulation {simulated} "
             f"({seconds(model)}; {seconds(simulated)})")
    emit("")

    emit("### Plans by time against plans by bytes")
    emit("")
    emit("`plan_matmul_any_mesh(P, problem, {.allow_idle = true, .machine = ...})` on each platform's machine "
         "against the planner by bytes (the best cell's plan). \"Simulated\": whether the table ran the plan "
         "chosen by time (as its SUMMA or 2.5D cell) and what that says; a plan it did not run is marked "
         "\"not simulated\".")
    emit("")
    table_shapes = [x for x, _ in SHAPES]
    table_by_time = {key: choice for key, choice in by_time.items() if key[2] in table_shapes and key[1] in PROCS}
    changed = [(key, choice) for key, choice in sorted(table_by_time.items(), key=lambda kv: (
        [x for x, _ in PLATFORMS].index(kv[0][0]), kv[0][1], table_shapes.index(kv[0][2])))
        if choice["same_as"] != "best"]
    emit(f"The plan differs in {len(changed)} of {len(table_by_time)} platforms, P and shapes (the table's; the "
         "strong-scaling series has its own, under \"Strong scaling\").")
    # Where 1-D rings on all ranks are chosen by time, the nearest evidence: those the table ran.
    def one_d_ring(mesh, shardings):
        return shardings.endswith(", ring") and re.fullmatch(r"\d+", mesh)
    rings = [(key, cell) for key, cell in sorted(cells.items()) if key[3] in MODELED and cell["ok"] and
             key in predicted and key[2] in table_shapes and one_d_ring(cell["mesh"], cell["shardings"])]
    if rings and any(one_d_ring(choice["mesh"], choice["shardings"]) for _, choice in changed):
        emit("The 1-D rings on all ranks the table did run: " + "; ".join(
            f"{k[0].replace('_', ' ')} P = {k[1]} {k[2]}, {predicted[k][0]:.6f} s predicted, "
            f"{number(c['seconds']):.6f} s simulated (GEMMs {predicted[k][1]:.6f} s)" for k, c in rings) + ".")
    emit("")
    if changed:
        emit("| platform | P | shape | by bytes: mesh, predicted s, simulated s | by time: mesh, shardings | "
             "predicted s | predicted gain | simulated |")
        emit("|---|---:|---|---|---|---:|---:|---|")
        for (platform, p, shape), choice in changed:
            best = cells.get((platform, p, shape, "best"))
            simulated_best = f"{number(best['seconds']):.3f}" if best and best["ok"] else "not run"
            verdict = "not simulated"
            same = (platform, p, shape, choice["same_as"])
            if (platform, p, shape, "time") in cells and cells[(platform, p, shape, "time")]["ok"]:
                same = (platform, p, shape, "time")  # the time cell: the plan chosen by time, simulated
            if ((choice["same_as"] in MODELED or same[3] == "time") and same in cells and cells[same]["ok"] and best
                    and best["ok"]):
                faster = number(cells[same]["seconds"]) < number(best["seconds"])
                verdict = (f"{same[3]} cell {number(cells[same]['seconds']):.3f} s: "
                           + ("faster, as predicted" if faster else "slower: the model is wrong here"))
            gain = 1 - choice["seconds"] / choice["bytes_plan_seconds"] if choice["bytes_plan_seconds"] > 0 else 0
            emit(f"| {platform} | {p} | {shape} | {best['mesh'] if best and best['ok'] else '–'}, "
                 f"{choice['bytes_plan_seconds']:.3f}, {simulated_best} | {choice['mesh']}: {choice['shardings']} | "
                 f"{choice['seconds']:.3f} | {100 * gain:.1f} % | {verdict} |")
        emit("")


def time_plan_cell(cells, by_time, platform, p, shape):
    """The simulated cell of the plan chosen by time and what it is: its own cell ("time"), or the
    best, SUMMA or 2.5D cell when the planner by time chose that plan; (None, reason) if not run."""
    own = cells.get((platform, p, shape, "time"))
    if own is not None and own["ok"]:
        return own, "time"
    choice = by_time.get((platform, p, shape))
    if choice is None:
        return None, "no prediction"
    same = cells.get((platform, p, shape, choice["same_as"]))
    if choice["same_as"] in MODELED and same is not None and same["ok"]:
        return same, choice["same_as"]
    return None, ("not run (the same plan as " + choice["same_as"] + ")" if choice["same_as"] in MODELED
                  else "not run")


def seconds_text(seconds):
    return f"{seconds:.4g}"


def emit_strong(emit, cells, predicted, by_time):
    """The section "Strong scaling": per platform and shape of STRONG_SHAPES with a cell, per P the
    best (by bytes), time, SUMMA, 2.5D and PDGEMM cells; then the goals of issue 40."""
    emit("## Strong scaling")
    emit("")
    emit("A fixed product on P = 64 to 4096 ranks (issue 40): n = 8192 and 16384 squared (`square8k`, "
         "`square16k`) and the table's rectangular shapes at the flops of n = 8192 (`tall8k`, `large_k8k`, "
         "`flat8k`). Every cell is `simulation/simulate cell PLATFORM P SHAPE PLAN`, as the table's. By bytes: "
         "the `best` cell (the planner's plan of fewest bytes); by time: the `time` cell, the planner's plan of "
         "least predicted time on the platform's `sw::Machine` (`plan_matmul_any_mesh` with `.machine`; "
         "within 1 % of the fastest prediction, the fewest bytes), run only where it is another plan than best "
         "(\"= best\": the same plan, the best cell's time). Each entry: simulated seconds, % of peak, the "
         "time model's prediction, and PDGEMM's time over it (the speed-up over PDGEMM at its best NB and grid).")
    emit("")
    pdgemm_cells = {}
    rows_run = []  # (platform, p, shape, plan, simulated s, predicted s) of every shardwise cell run
    for platform, title in PLATFORMS:
        for shape, shape_title in STRONG_SHAPES:
            if not any((platform, p, shape, plan) in cells for p in STRONG_PROCS
                       for plan in STRONG_PLANS + PLANS[3:] + IDLE_PDGEMM):
                continue
            emit(f"### {title.split(' (')[0]}, {shape_title}")
            emit("")
            emit("| P | by bytes (best) | by time | 2-D SUMMA | 2.5D | PDGEMM (NB) | meshes: bytes, time |")
            emit("|---:|---|---|---|---|---|---|")
            for p in STRONG_PROCS:
                keys = {plan: (platform, p, shape, plan) for plan in STRONG_PLANS}
                if not any(k in cells for k in keys.values()) and not any(
                        (platform, p, shape, plan) in cells for plan in PLANS[3:] + IDLE_PDGEMM):
                    continue
                pd, on_fewer, tried = best_pdgemm(cells, platform, p, shape)
                pd_seconds = number(pd["seconds"]) if pd is not None else None
                pdgemm_cells[(platform, p, shape)] = pd
                entries = {}
                for plan in STRONG_PLANS:
                    key = keys[plan]
                    if plan == "time":
                        cell, what = time_plan_cell(cells, by_time, platform, p, shape)
                        model = by_time.get((platform, p, shape), {}).get("seconds")
                    else:
                        cell, what = cells.get(key), plan
                        model = predicted.get(key, (None,))[0]
                    if cell is None or not cell["ok"]:
                        entries[plan] = summary_entry(cell, key) if plan != "time" else what
                        continue
                    seconds = number(cell["seconds"])
                    if what == plan:
                        rows_run.append((platform, p, shape, plan, seconds, model, cell["mesh"]))
                    text = f"{seconds_text(seconds)} s, {cell['peak']} %"
                    if model is not None:
                        text += f"; pred. {seconds_text(model)} s"
                    if pd_seconds is not None:
                        text += f"; {pd_seconds / seconds:.2f}x"
                    if plan == "time" and what != "time":
                        text = f"= {what}"
                    entries[plan] = text
                if pd is not None:
                    nb = pd["plan"].split(":")[1] + (f" on {pd['mesh']}" if on_fewer else "")
                    pd_text = f"{seconds_text(pd_seconds)} s, {pd['peak']} % (NB {nb} of {tried} run; {pd['mesh']})"
                else:
                    pd_text = "not run"
                best = cells.get(keys["best"])
                choice = by_time.get((platform, p, shape))
                meshes = (best["mesh"] if best is not None and best["ok"] else "–") + ", " + (
                    choice["mesh"] if choice else "–")
                emit(f"| {p} | {entries['best']} | {entries['time']} | {entries['summa']} | {entries['25d']} | "
                     f"{pd_text} | {meshes} |")
            emit("")

    emit("### The goals of issue 40, as far as the cells run tell")
    emit("")
    series = {key: choice for key, choice in by_time.items() if key[2] in [x for x, _ in STRONG_SHAPES]}
    differ = [key for key, choice in series.items() if choice["same_as"] != "best"]
    if series:
        emit(f"- The plan by time is another than the plan by bytes in {len(differ)} of the series' {len(series)} "
             f"platforms, P and shapes (`simulation/simulate predict`); the same in: "
             + (", ".join(f"{k[0].replace('_', ' ')} P = {k[1]} {k[2]}" for k in sorted(series) if k not in differ)
                or "none") + ".")
    for platform in ("torus", "fat_tree"):
        key = (platform, 4096, "square8k")
        pd = pdgemm_cells.get(key)
        line = f"- {platform.replace('_', ' ').capitalize()}, P = 4096, n = 8192: "
        parts = []
        for plan in ("best", "time"):
            if plan == "time":
                cell, what = time_plan_cell(cells, by_time, *key)
            else:
                cell, what = cells.get(key + ("best",)), "best"
            if cell is None or not cell["ok"]:
                parts.append(f"{plan} not run")
                continue
            seconds = number(cell["seconds"])
            text = f"{plan} {seconds_text(seconds)} s ({cell['mesh']}), {cell['peak']} % of peak"
            if plan == "time" and what != "time":
                text = f"time = {what}"
            elif pd is not None:
                speedup = number(pd["seconds"]) / seconds
                text += (f", {speedup:.2f} x PDGEMM: >= 2 x {'met' if speedup >= 2 else 'not met'}, "
                         f">= 60 % {'met' if number(cell['peak']) >= 60 else 'not met'}")
            parts.append(text + f" (`simulation/simulate cell {platform} 4096 square8k {what}`)")
        if pd is not None:
            parts.append(f"PDGEMM {seconds_text(number(pd['seconds']))} s, {pd['peak']} % ({pd['plan'].split(':')[1]}, "
                         f"{pd['mesh']}; `simulation/simulate cell {platform} 4096 square8k "
                         f"pdgemm{pd['plan'].split(':')[1]}`)")
        else:
            parts.append("PDGEMM not run")
        emit(line + "; ".join(parts) + ".")
    with_model = [r for r in rows_run if r[5] is not None]
    if with_model:
        within = [r for r in with_model if abs(r[5] / r[4] - 1) <= 0.1]
        worst = sorted(with_model, key=lambda r: -abs(math.log(r[5] / r[4])))
        emit(f"- Predicted within 10 % of simulated: {len(within)} of the {len(with_model)} best, time, SUMMA and "
             f"2.5D cells run; the worst: " + "; ".join(
                 f"{r[0].replace('_', ' ')} P = {r[1]} {r[2]} {r[3]} ({r[6]}): {seconds_text(r[5])} s predicted, "
                 f"{seconds_text(r[4])} s simulated ({r[5] / r[4]:.2f})" for r in worst[:6]) + ".")
    # The plan by bytes and the plan by time against the fastest simulated plan.
    compared, best_loses, time_loses, time_unknown = 0, [], [], []
    for platform, _ in PLATFORMS:
        for shape, _ in STRONG_SHAPES:
            for p in STRONG_PROCS:
                run = {}
                for plan in ("best", "summa", "25d", "time"):
                    cell = cells.get((platform, p, shape, plan))
                    if cell is not None and cell["ok"]:
                        run[plan] = number(cell["seconds"])
                pd = pdgemm_cells.get((platform, p, shape))
                if pd is not None:
                    run["pdgemm " + pd["plan"].split(":")[1]] = number(pd["seconds"])
                if "best" not in run or len(run) < 2:
                    continue
                compared += 1
                fastest = min(run, key=run.get)
                name = f"{platform.replace('_', ' ')} P = {p} {shape}"
                if fastest != "best" and run[fastest] < run["best"]:
                    best_loses.append(f"{name}: best {seconds_text(run['best'])} s, {fastest} "
                                      f"{seconds_text(run[fastest])} s ({100 * (run['best'] / run[fastest] - 1):.1f} % slower)")
                cell, what = time_plan_cell(cells, by_time, platform, p, shape)
                if cell is None:
                    time_unknown.append(name)
                    continue
                seconds = number(cell["seconds"])
                if seconds > 1.03 * run[fastest]:
                    time_loses.append(f"{name}: time ({what}) {seconds_text(seconds)} s, {fastest} "
                                      f"{seconds_text(run[fastest])} s ({100 * (seconds / run[fastest] - 1):.1f} % slower)")
    if compared:
        emit(f"- The fastest simulated plan (of best, time, SUMMA, 2.5D and PDGEMM at its best NB), over the "
             f"{compared} platform, P and shape triples with best and another plan run. By bytes, best is not the fastest in "
             f"{len(best_loses)}" + (": " + "; ".join(best_loses) if best_loses else "") + ". "
             f"By time, the time plan is more than 3 % slower than the fastest in {len(time_loses)}"
             + (": " + "; ".join(time_loses) if time_loses else "")
             + (f"; not known (the time plan not run) in {len(time_unknown)}: " + ", ".join(time_unknown)
                if time_unknown else "") + ".")
    emit("")


DROPIN_PROCS = [64, 256, 1024]
DROPIN_SHAPES = ["square8k", "tall8k", "large_k8k", "flat8k"]


def emit_dropin(emit, cells):
    """The drop-in's cells (dropinNB by bytes, dropinNBtime by predicted time) beside PDGEMM's at
    the same NB: the same call and layout."""
    emit("## The drop-in beside PDGEMM")
    emit("")
    emit("The same `pdgemm_` call (`simulation/drivers/simulate_pdgemm.cpp`: A, B and C block-cyclic on PDGEMM's "
         "grid, the cell's NB), computed by ScaLAPACK's PDGEMM (`pdgemmNB` cells) and by the drop-in, "
         "`src/scalapack_dropin.cpp` compiled for SMPI and linked in its place "
         "(`simulation/simulate cell PLATFORM P SHAPE dropin128`). The drop-in decides per call whether to compute "
         "in place or to redistribute to the planner's plan and back: by its cost model in bytes, its default "
         "(`dropinNB` cells), or by predicted time on the platform's machine (`dropinNBtime`: "
         "SHARDWISE_PGEMM_MACHINE=simulated_fat_tree or simulated_torus). The redistribution's messages are in "
         "the drop-in's time. Speed-up: PDGEMM's time over the drop-in's.")
    emit("")
    emit("| platform | P | shape | PDGEMM grid, NB | PDGEMM s | drop-in s (by bytes) | its way | MiB sent per call, "
         "busiest rank | speed-up | drop-in s (by time) | its way | speed-up |")
    emit("|---|---:|---|---|---:|---:|---|---:|---:|---:|---|---:|")
    rows = []

    def way_of(cell):
        return cell["mesh"].partition(" (")[2].rstrip(")")

    for platform, _ in PLATFORMS:
        for p in DROPIN_PROCS:
            for shape in DROPIN_SHAPES:
                for nb in ("64", "128", "256"):
                    by_bytes = cells.get((platform, p, shape, "dropin" + nb))
                    by_time = cells.get((platform, p, shape, "dropin" + nb + "time"))
                    if by_bytes is None and by_time is None:
                        continue
                    pd = cells.get((platform, p, shape, "pdgemm" + nb))
                    pd_s = number(pd["seconds"]) if pd is not None and pd["ok"] else None
                    name = platform.replace("_", " ")
                    grid = next((c["mesh"].partition(" (")[0] for c in (by_bytes, by_time, pd)
                                 if c is not None and c["ok"]), "?")
                    fields = [name, str(p), shape, f"{grid}, {nb}", pd["seconds"] if pd_s else "not run"]
                    for which, cell in (("bytes", by_bytes), ("time", by_time)):
                        if cell is None:
                            fields += ["not run", "", ""] if which == "bytes" else ["not run", "", ""]
                            if which == "bytes":
                                fields.insert(-1, "")
                            continue
                        if not cell["ok"]:
                            fields += [cell["line"][:80].replace("|", "/"), "", ""] + ([""] if which == "bytes" else [])
                            continue
                        seconds = number(cell["seconds"])
                        speedup = pd_s / seconds if pd_s else None
                        rows.append((platform, p, shape, which, speedup))
                        fields += [cell["seconds"], way_of(cell)]
                        if which == "bytes":
                            fields.append(f"{number(cell['model']):.3f}")
                        fields.append(f"{speedup:.2f}" if speedup else "–")
                    emit("| " + " | ".join(fields) + " |")
    emit("")
    for which in ("bytes", "time"):
        done = [r for r in rows if r[3] == which and r[4] is not None and r[1] in (256, 1024)]  # the goal's P
        if not done:
            continue
        shaped = [r for r in done if r[2] in ("tall8k", "large_k8k")]
        square = [r for r in done if r[2] == "square8k"]
        others = [r for r in done if r[4] < 1.0]
        short = [r for r in shaped if r[4] < 1.2]
        slower = [r for r in square if r[4] < 1.0]

        def describe(r):
            return f"{r[0].replace('_', ' ')} P = {r[1]} {r[2]} ({r[4]:.2f})"

        emit(f"- By {which}, at P = 256 and 1024: the drop-in >= 1.2 x faster than PDGEMM on the large-k and tall-skinny shapes in "
             f"{len(shaped) - len(short)} of the {len(shaped)} cells compared"
             + (": below, " + ", ".join(describe(r) for r in short) if short else "")
             + f"; never slower on the square shape in {len(square) - len(slower)} of {len(square)}"
             + (": slower, " + ", ".join(describe(r) for r in slower) if slower else "")
             + f"; slower than PDGEMM in {len(others)} of all {len(done)} cells compared"
             + (": " + ", ".join(describe(r) for r in others) if others else "") + ".")
    emit("")


COPY_PROCS = [64, 256, 1024]
COPY_ROUTINES = [("tran", "p?tran, C = A^T"), ("gemr2d", "p?gemr2d, NB to 2 NB")]


def emit_copies(emit, cells):
    """The layout routines (cells pdtranNB, pdgemr2dNB on the shape copy8k) beside the drop-in's
    (dropintranNB, dropingemr2dNB): the same call on the same grid and NB."""
    emit("## p?tran and p?gemr2d beside ScaLAPACK's")
    emit("")
    emit("An 8192 x 8192 fp64 matrix, block-cyclic on the squarest grid of P ranks (`simulation/drivers/simulate_pdgemm.cpp "
         "--routine tran` or `gemr2d`): C = A^T by PBLAS's PDTRAN (`pdtranNB` cells), and a copy to blocks of 2 NB on "
         "the same grid by ScaLAPACK's PDGEMR2D (`pdgemr2dNB`), beside the drop-in computing the same call "
         "(`dropintranNB`, `dropingemr2dNB`: one message per pair of processes that share elements). As in every "
         "cell, the local work (packing, transposing) is not charged: the times are the messages'. "
         "Speed-up: ScaLAPACK's time over the drop-in's.")
    emit("")
    emit("| platform | P | routine | grid, NB | ScaLAPACK s | drop-in s | MiB sent per call, busiest rank | speed-up |")
    emit("|---|---:|---|---|---:|---:|---:|---:|")
    rows = []

    def seconds_of(cell):
        if cell is None:
            return None, "not run"
        if not cell["ok"]:
            return None, "failed"
        return number(cell["seconds"]), cell["seconds"]

    for platform, _ in PLATFORMS:
        for p in COPY_PROCS:
            for routine, title in COPY_ROUTINES:
                for nb in ("64", "128", "256"):
                    theirs = cells.get((platform, p, "copy8k", "pd" + routine + nb))
                    ours = cells.get((platform, p, "copy8k", "dropin" + routine + nb))
                    if theirs is None and ours is None:
                        continue
                    theirs_s, theirs_text = seconds_of(theirs)
                    ours_s, ours_text = seconds_of(ours)
                    grid = next((c["mesh"].partition(" (")[0] for c in (ours, theirs) if c is not None and c["ok"]), "?")
                    speedup = theirs_s / ours_s if theirs_s and ours_s else None
                    if speedup is not None:
                        rows.append((platform, p, routine, speedup))
                    sent = f"{number(ours['model']):.3f}" if ours_s else "–"
                    emit(f"| {platform.replace('_', ' ')} | {p} | {title} | {grid}, {nb} | {theirs_text} | {ours_text} | "
                         f"{sent} | {f'{speedup:.2f}' if speedup else '–'} |")
    emit("")
    done = [r for r in rows if r[1] in (256, 1024)]  # the goal's P
    if done:
        slower = [r for r in done if r[3] <= 1.0]
        emit(f"- At P = 256 and 1024, the drop-in is faster than ScaLAPACK's routine in {len(done) - len(slower)} of the "
             f"{len(done)} cells compared (speed-up {min(r[3] for r in done):.2f} to {max(r[3] for r in done):.2f})"
             + (": not faster in " + ", ".join(f"{r[0].replace('_', ' ')} P = {r[1]} {r[2]} ({r[3]:.2f})" for r in slower)
                if slower else "") + ".")
        emit("")


def summary_entry(cell, key=None):
    if cell is None:
        return LEFT_OUT_REASONS[LEFT[key]][0] if key in LEFT else "not run"
    if not cell["ok"]:
        if "P is no q x q x c" in cell["line"]:
            return "none (P is no q² c)"
        if "fits" in cell["line"]:
            return "none fits 4 GiB"
        if "exit status 137" in cell["line"] and cell.get("memory"):
            # SIGKILL: on this machine the kernel's out-of-memory killer; the simulator's own
            # (unfolded) memory, not the simulated ranks' 4 GiB.
            return f"killed at {cell['memory'] / 1024:.0f} GiB of simulator memory"
        return "failed"
    return f"{number(cell['seconds']):.3f} s, {cell['peak']} %"


def emit_commands(emit, keys, option=""):
    """One `simulation/simulate table` command per platform, P and set of shapes for keys."""
    by_group = {}
    for platform, p, shape, plan in keys:
        by_group.setdefault((platform, p), {}).setdefault(plan, []).append(shape)
    for (platform, p), plans in sorted(by_group.items(), key=lambda kv: ([x for x, _ in PLATFORMS].index(kv[0][0]), kv[0][1])):
        groups = {}
        for plan, shapes in plans.items():
            groups.setdefault(tuple(shapes), []).append(plan)
        for shapes, plan_list in groups.items():
            plan_text = ",".join(plan_list)
            if set(plan_list) >= set(PDGEMM_NBS):
                plan_text = ",".join([x for x in plan_list if not x.startswith("pdgemm")] + ["pdgemm"])
            emit(f"- `simulation/simulate table{option} --platforms {platform} --procs {p} --shapes {','.join(shapes)} "
                 f"--plans {plan_text}`")


def main():
    if sys.argv[1:] == ["--left-out"]:
        for (platform, p, shape, plan), reason in LEFT.items():
            print(platform, p, shape, plan, reason.replace(", ", ","))
        return
    table, output = sys.argv[1], sys.argv[2]
    cells = read_cells(table)
    predicted, by_time = predictions()
    out = []
    emit = out.append
    emit("<!-- Written by simulation/report.py from simulation/results/cells.tsv "
         "(simulation/simulate table); do not edit. -->")
    emit("# Simulated time of the matmul plans: the table of issue 25")
    emit("")
    emit("Every cell is one simulation (`simulation/simulate cell PLATFORM P SHAPE PLAN`), folded and not "
         "computed, fp64, at most 4 GiB per rank. Shapes of 2⁴⁵ multiply-adds each (those of n = 32768). "
         "Seconds are simulated, of the slowest rank; % of peak is 2mnk per simulated second over P hosts at "
         "37.5 GFLOP/s (idle ranks count). Best: the planner's cheapest plan over every mesh of P ranks, or of "
         "down to 3/4 of them (the others idle); SUMMA: 2-D SUMMA on the squarest grid; 2.5D: q x q x c with "
         "its best c; PDGEMM: ScaLAPACK's, on the grid of least SUMMA-estimate bytes (P x 1 for tall-skinny, else the squarest), the best of the NBs in brackets; where P's only full grids are 1-D, also on a 2-D grid of down to 3/4 of the ranks, weighed as the best plan's meshes (\"on fewer ranks\", cells `pdgemmNBidle`). "
         "bytes/bound: the best plan's busiest rank's modeled bytes (equal to what every rank counted "
         "sending) over the memory-independent lower bound on P ranks (SPAA 2022, rectangular).")
    emit("")
    emit("\"Needs a larger machine\": a cell this project's machines (2 cores, 24 GiB) do not run "
         "(docs/simulation.md, \"Cells for a larger machine\"; the list is at the end), for")
    emit("")
    for reason in ("memory", "memory, hours", "hours"):
        emit(f"- {reason}: {LEFT_OUT_REASONS[reason][1]};" if reason != "hours" else
             f"- {reason}: {LEFT_OUT_REASONS[reason][1]}.")
    emit("")
    missing = []
    for platform, title in PLATFORMS:
        emit(f"## {title}")
        emit("")
        emit("| P | shape | best | best's mesh | 2-D SUMMA | 2.5D | PDGEMM (NB) | best bytes / bound | PDGEMM s / best s |")
        emit("|---:|---|---|---|---|---|---|---:|---:|")
        for p in PROCS:
            for shape, shape_title in SHAPES:
                keys = [(platform, p, shape, plan) for plan in PLANS]
                for key in keys:
                    if key not in cells or not cells[key]["ok"] and "no plan of this kind" not in cells[key]["line"]:
                        missing.append(key)
                if all(key not in cells for key in keys):
                    continue
                best = cells.get(keys[0])
                pd, on_fewer, tried = best_pdgemm(cells, platform, p, shape)
                pd_text = "not run"
                pd_left = [LEFT[k] for k in keys[3:] if k in LEFT and k not in cells]
                if pd_left and len(pd_left) == len([k for k in keys[3:] if k not in cells]):
                    pd_text = LEFT_OUT_REASONS[pd_left[0]][0]
                if pd is not None:
                    nb = pd["plan"].split(":")[1] + (f" on {pd['mesh']}" if on_fewer else "")
                    pd_text = f"{number(pd['seconds']):.3f} s, {pd['peak']} % ({nb} of {tried})"
                elif any(k in cells for k in keys[3:]):
                    pd_text = "failed"
                ratio = "–"
                if best is not None and best["ok"] and pd is not None:
                    ratio = f"{number(pd['seconds']) / number(best['seconds']):.2f}"
                bound = best["over_bound"] if best is not None and best["ok"] else "–"
                mesh = best["mesh"] if best is not None and best["ok"] else "–"
                twofive_text = summary_entry(cells.get(keys[2]), keys[2])
                emit(f"| {p} | {shape_title} | {summary_entry(best, keys[0])} | {mesh} | "
                     f"{summary_entry(cells.get(keys[1]), keys[1])} | "
                     f"{twofive_text} | {pd_text} | {bound} | {ratio} |")
        emit("")

    emit("## The goals, as far as the cells run tell")
    emit("")
    over = [(k, cells[k]) for k in cells if k[3] == "best" and cells[k]["ok"] and k[2] in [x for x, _ in SHAPES]]
    worst = max(over, key=lambda kc: number(kc[1]["over_bound"]), default=None)
    if worst:
        above = [f"{k[0]} P = {k[1]} {k[2]} ({c['over_bound']})" for k, c in over if number(c["over_bound"]) > 1.1]
        emit(f"- Best plan <= 1.1 x the lower bound for every P and shape: over the {len(over)} cells run, the "
             f"largest is {worst[1]['over_bound']} ({worst[0][0]}, P = {worst[0][1]}, {worst[0][2]}); "
             + ("above 1.1: " + ", ".join(above) + "." if above else "none above 1.1.")
             + " The bytes do not depend on the platform.")
    key = ("fat_tree", 4096, "square", "best")
    pd, _, _ = best_pdgemm(cells, "fat_tree", 4096, "square")
    if key in cells and cells[key]["ok"]:
        emit(f"- Fat tree, P = 4096, n = 32768: the best plan at {cells[key]['peak']} % of peak "
             f"({number(cells[key]['seconds']):.3f} s)"
             + (f"; PDGEMM {number(pd['seconds']):.3f} s, {number(pd['seconds']) / number(cells[key]['seconds']):.2f}"
                " times the best plan's time" if pd is not None else "; PDGEMM not run")
             + ".")
    else:
        emit("- Fat tree, P = 4096, n = 32768 (>= 60 % of peak, >= 2 x PDGEMM): not run here.")
    emit("")

    emit_strong(emit, cells, predicted, by_time)

    emit_dropin(emit, cells)
    emit_copies(emit, cells)

    emit_predicted(emit, cells, predicted, by_time)

    emit("## Every cell")
    emit("")
    emit("| platform | P | shape | plan | mesh | shardings, variant | simulated s | GFLOP/s | % of peak | MiB sent, "
         "busiest rank | model MiB | bytes == model, all ranks | bound MiB | model / bound | wall s | "
         "simulator's private MiB | predicted s | predicted / simulated |")
    emit("|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    every = [(p, shape) for p in PROCS for shape, _ in SHAPES] + [
        (p, shape) for shape, _ in STRONG_SHAPES for p in STRONG_PROCS]
    for platform, _ in PLATFORMS:
        for p, shape in every:
            for plan in ["best", "time"] + PLANS[1:] + IDLE_PDGEMM:
                cell = cells.get((platform, p, shape, plan))
                if cell is None:
                    continue
                model = predicted.get((platform, p, shape, plan))
                if plan == "time" and (platform, p, shape) in by_time:
                    model = (by_time[(platform, p, shape)]["seconds"], by_time[(platform, p, shape)]["gemm"])
                if cell["ok"]:
                    digits = 6 if shape in [x for x, _ in STRONG_SHAPES] else 3  # n = 8192: milliseconds
                    model_text = (f"{model[0]:.{digits}f} | {model[0] / number(cell['seconds']):.3f}" if model
                                  else "– | –")
                    emit(f"| {platform} | {p} | {shape} | {cell['plan']} | {cell['mesh']} | {cell['shardings']} | "
                         f"{cell['seconds']} | {cell['gflops']} | {cell['peak']} | {cell['sent']} | "
                         f"{cell['model']} | {cell['equal']} | {cell['bound']} | {cell['over_bound']} | "
                         f"{cell.get('wall', '?')} | {cell.get('memory', '?')} | {model_text} |")
                else:
                    text = cell["line"].replace("|", "/")[:200]
                    emit(f"| {platform} | {p} | {shape} | {plan} | {text} | | | | | | | | | | "
                         f"{cell.get('wall', '?')} | {cell.get('memory', '?')} | | |")
    emit("")

    left = [key for key in missing if key in LEFT]
    missing = [key for key in missing if key not in LEFT]
    emit("## Cells left out")
    emit("")
    if not left:
        emit("None.")
    else:
        emit(f"{len(left)} cells, named in `simulation/report.py` (LEFT_OUT); `simulation/simulate table` "
             "skips them unless `--include-left-out`. Per reason, platform and P:")
        for reason in LEFT_OUT_REASONS:
            keys = [key for key in left if LEFT[key] == reason]
            if not keys:
                continue
            emit("")
            emit(f"{LEFT_OUT_REASONS[reason][0][0].upper()}{LEFT_OUT_REASONS[reason][0][1:]}: {len(keys)} cells "
                 f"({LEFT_OUT_REASONS[reason][1]}).")
            emit("")
            emit_commands(emit, keys, " --include-left-out")
    emit("")

    emit("## Cells not run")
    emit("")
    if not missing:
        emit("None.")
    else:
        emit(f"{len(missing)} cells. `simulation/simulate table --jobs N` runs every cell that has no result "
             "yet (the largest P first); per platform and P, the missing ones are:")
        emit("")
        emit_commands(emit, missing)
    emit("")
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    table_cells = len([key for key in cells if key[3] in PLANS and key[2] in [x for x, _ in SHAPES]])
    print(f"simulate_report: {output} ({table_cells} cells of the table, {len(left)} left out, "
          f"{len(missing)} not run; {len(cells) - table_cells} more)", file=sys.stderr)


if __name__ == "__main__":
    main()
