#!/usr/bin/env bash
# libshardwise_scalapack on a real client: Debian's CP2K (2023.1, linked against
# libscalapack-openmpi), run on a few of CP2K's own regression inputs, plain and with the
# drop-in preloaded (LD_PRELOAD), on 1, 2 and 4 ranks. The inputs (benchmarks/cp2k/, copied
# from CP2K's tests/QS/ at v2023.1 with their reference values, see benchmarks/cp2k/README.md):
# a water with ScaLAPACK diagonalization (3 MD steps), diamond with 8 k-points, RI-MP2 and
# RI-RPA on a water; between them they call p?gemm, p?tran and p?gemr2d.
#
#   benchmarks/cp2k_dropin.sh [BUILD_DIR]
#     BUILD_DIR  a Meson build directory of this repository with the drop-in; default
#                build-cp2k/ here, set up when it does not exist (-Ddebug=false
#                -Dscalapack=enabled; tests, examples and benchmarks off). `meson compile ...
#                shardwise_scalapack` runs either way (a no-op when the library is up to date).
#   Environment (all optional):
#     CP2K_RANKS="1 2 4"    rank counts
#     CP2K_INPUTS=REGEX     run only the inputs of benchmarks/cp2k/TEST_FILES matching REGEX
#     CP2K_WORK=DIR         where the runs happen and their outputs stay (default: a new
#                           /tmp/cp2k_dropin.XXXXXX, printed at the end)
#     CP2K_RESULTS=FILE     the Markdown table (default benchmarks/results/cp2k.md)
#     CP2K_MACHINE="..."    the machine's description for the table (default: from lscpu and
#                           /etc/os-release)
#     CP2K_TIMEOUT=SECONDS  per CP2K run (default 1800)
#
# For each input and rank count P, two runs, each in a fresh directory with a copy of the input
# (and its .xyz), one after the other:
#   mpiexec -n P --oversubscribe --mca btl self,vader cp2k.psmp -i INPUT              (plain)
#   the same with -x LD_PRELOAD=BUILD_DIR/libshardwise_scalapack.so -x SHARDWISE_PGEMM_REPORT=1
# OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1. The copy gets `&TIMINGS THRESHOLD 0.0` in &GLOBAL, so
# that CP2K's timing table lists every routine (cp_fm_gemm and friends); it changes nothing
# else. Then it takes the value CP2K's regression test takes (the last line matching the
# pattern of the input's test type, as CP2K's do_regtest.py), and prints one table: the value
# plain and with the drop-in, their relative difference, CP2K's reference check (|value - ref| /
# |ref| <= the tolerance in TEST_FILES) for both, the drop-in's report of rank 0 (p?gemm calls
# computed, of which local, and handed back to ScaLAPACK; the same for p?tran and p?gemr2d, and
# for any other routine the drop-in reports, e.g. p?symm), and CP2K's time for cp_fm_gemm and
# in all (maximum over ranks) in both runs; then, per run, the timing lines of the CP2K
# routines that reach these (cp_fm_gemm, cp_fm_upper_to_full: p?tran, cp_fm_symm,
# cp_fm_write_unformatted: p?gemr2d, ...). The same tables go
# to CP2K_RESULTS as Markdown, with the date, the machine and the library's commit.
#
# Exit status: 1 when a run fails, when the drop-in's value differs from the plain run's by more
# than 1e-12 relative, or when a value misses CP2K's reference; a call handed back to ScaLAPACK
# is printed as a warning (the report does not say why; docs/scalapack.md lists the cases).
#
# Needs: Debian 12 (or a system with the same packages). What is missing is installed with
# apt-get (as root, or through sudo): cp2k and cp2k-data; to build the drop-in, meson,
# ninja-build, g++, pkg-config, libopenmpi-dev, libscalapack-openmpi-dev, libopenblas-dev,
# libeigen3-dev. No network otherwise: the inputs are in benchmarks/cp2k/.
# Takes: about 10 s to 30 s a run on one rank of a 2-core AMD EPYC VM (24 runs: about 10 to
# 15 minutes with the defaults), plus building the drop-in (about 2 minutes, one job).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
inputs_dir=$here/cp2k
build=${1:-$repo/build-cp2k}
ranks=${CP2K_RANKS:-"1 2 4"}
filter=${CP2K_INPUTS:-.}
results=${CP2K_RESULTS:-$repo/benchmarks/results/cp2k.md}
timeout_s=${CP2K_TIMEOUT:-1800}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# ---- what is missing: apt-get ---------------------------------------------------------------
missing=()
for p in cp2k cp2k-data; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [[ ! -e $build/libshardwise_scalapack.so ]]; then
  for p in meson ninja-build g++ pkg-config libopenmpi-dev libscalapack-openmpi-dev libopenblas-dev libeigen3-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  echo "installing ${missing[*]}"
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y "${missing[@]}"
fi
cp2k=$(command -v cp2k.psmp || command -v cp2k)
if ! ldd "$cp2k" | grep -q libscalapack-openmpi; then
  echo "$cp2k is not linked against libscalapack-openmpi; the drop-in would not take its calls" >&2
  exit 1
fi

# ---- the drop-in ----------------------------------------------------------------------------
if [[ ! -d $build ]]; then
  meson setup "$build" "$repo" -Ddebug=false -Dscalapack=enabled -Dtests=disabled -Dexamples=disabled \
    -Dbenchmarks=disabled
fi
meson compile -C "$build" -j "${CP2K_BUILD_JOBS:-1}" shardwise_scalapack
lib=$(cd "$build" && pwd)/libshardwise_scalapack.so
[[ -e $lib ]] || { echo "no $lib after the build" >&2; exit 1; }
source_dir=$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$build/meson-info/meson-info.json" 2>/dev/null || true)
lib_commit=$(git -C "${source_dir:-$repo}" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $lib_commit != unknown && -n $(git -C "${source_dir:-$repo}" status --porcelain -- src include meson.build 2>/dev/null) ]]; then
  lib_commit="$lib_commit with uncommitted changes to src/, include/ or meson.build"
fi

work=${CP2K_WORK:-$(mktemp -d /tmp/cp2k_dropin.XXXXXX)}
mkdir -p "$work"
cp2k_version=$(dpkg-query -W -f '${Version}' cp2k 2>/dev/null || echo '?')
if [[ -n ${CP2K_MACHINE:-} ]]; then
  machine=$CP2K_MACHINE
else
  cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
  # shellcheck source=/dev/null
  os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")
  machine="$(getconf _NPROCESSORS_ONLN)-core ${cpu:-?}, $os, CP2K $cp2k_version (Debian)"
fi

# ---- helpers --------------------------------------------------------------------------------
# The value CP2K's regression test takes: the last line matching the type's pattern, its
# column-th field (CP2K's tests/TEST_TYPES, read by tools/regtesting/do_regtest.py).
value_of() {  # TYPE OUTPUT
  local pattern column
  case $1 in
    1) pattern='Total energy:' column=3 ;;
    11) pattern='ENERGY\| Total FORCE_EVAL' column=9 ;;
    *) echo "test type $1 is not known to this script" >&2; return 1 ;;
  esac
  grep -E "$pattern" "$2" | tail -1 | awk -v c="$column" '{print $c}'
}

rel_diff() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; r = b < 0 ? -b : b; printf "%.1e", (r == 0 ? d : d / r) }'; }
within() { awk -v a="$1" -v t="$2" 'BEGIN { exit !(a + 0 <= t + 0) }'; }

# The timing line of ROUTINE in CP2K's table: "calls max_total_time", or "- -".
timing_of() {  # ROUTINE OUTPUT
  awk -v r="$1" '/^ SUBROUTINE +CALLS/ { table = 1 } table && $1 == r && $2 ~ /^[0-9]+$/ { line = $2 " " $NF } END { print (line == "" ? "- -" : line) }' "$2"
}

# The drop-in's report of rank 0 for ROUTINES ("p?gemm", "p?tran", "p?gemr2d"):
# "calls computed local handed" (computed: not handed back; local: p?gemm's, else "-").
report_of() {  # ROUTINES STDERR
  local line
  line=$(grep -F "shardwise $1 (rank 0):" "$2" | tail -1 || true)
  if [[ -z $line ]]; then echo "0 0 - 0"; return; fi
  local calls handed local_calls=-
  calls=$(sed -E 's/.*\(rank 0\): ([0-9]+) calls.*/\1/' <<<"$line")
  handed=$(sed -E 's/.* ([0-9]+) handed to ScaLAPACK.*/\1/' <<<"$line")
  [[ $1 == "p?gemm" ]] && local_calls=$(sed -E 's/.*; ([0-9]+) local.*/\1/' <<<"$line")
  echo "$calls $((calls - handed)) $local_calls $handed"
}

# The drop-in's other report lines (routines it serves besides p?gemm, p?tran and p?gemr2d,
# e.g. p?symm/p?hemm, p?syrk/p?herk): "NAME calls: computed, handed" joined by "; ", or "-".
report_others() {  # STDERR
  sed -nE 's/^shardwise (.+) \(rank 0\): ([0-9]+) calls:.* ([0-9]+) handed to ScaLAPACK.*/\1 \2 \3/p' "$1" |
    awk '$1 != "p?gemm" && $1 != "p?tran" && $1 != "p?gemr2d" { s = s (s == "" ? "" : "; ") $1 " " $2 ": " $2 - $3 ", " $3 }
         END { print (s == "" ? "-" : s) }'
}

# Calls of rank 0 handed back to ScaLAPACK, over every report line.
handed_total() {  # STDERR
  sed -nE 's/^shardwise .* \(rank 0\): .* ([0-9]+) handed to ScaLAPACK.*/\1/p' "$1" | awk '{ n += $1 } END { print n + 0 }'
}

# A working copy of INPUT in DIR with `&TIMINGS THRESHOLD 0.0` in &GLOBAL (an input's own
# &TIMINGS gets its THRESHOLD set to 0.0), and the input's .xyz files.
prepare() {  # INPUT DIR
  mkdir -p "$2"
  cp "$(dirname "$1")"/*.xyz "$2"/ 2>/dev/null || true
  awk '
    toupper($1) == "&TIMINGS" { in_timings = 1; has_timings = 1 }
    in_timings && toupper($1) == "THRESHOLD" { sub(/THRESHOLD.*/, "THRESHOLD 0.0"); seen_threshold = 1 }
    in_timings && toupper($1) == "&END" { if (!seen_threshold) print "    THRESHOLD 0.0"; in_timings = 0 }
    { print }
    toupper($1) == "&GLOBAL" { global_line = NR }
    END { if (!global_line) exit 2 }
  ' "$1" >"$2/in.inp.tmp"
  if ! grep -qi '^ *&TIMINGS' "$2/in.inp.tmp"; then
    awk 'toupper($1) == "&GLOBAL" && !done { print; print "  &TIMINGS"; print "    THRESHOLD 0.0"; print "  &END TIMINGS"; done = 1; next } { print }' \
      "$2/in.inp.tmp" >"$2/in.inp"
  else
    mv "$2/in.inp.tmp" "$2/in.inp"
  fi
  rm -f "$2/in.inp.tmp"
}

run_cp2k() {  # DIR P MODE(plain|dropin)
  local extra=()
  [[ $3 == dropin ]] && extra=(-x "LD_PRELOAD=$lib" -x SHARDWISE_PGEMM_REPORT=1)
  local start end rc=0
  start=$(date +%s.%N)
  (cd "$1" && timeout "$timeout_s" mpiexec -n "$2" --oversubscribe --mca btl self,vader --mca pml ob1 \
    --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS "${extra[@]}" \
    "$cp2k" -i in.inp </dev/null >out 2>err) || rc=$?
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }' >"$1/wall"
  return $rc
}

# ---- the runs -------------------------------------------------------------------------------
routines="cp_fm_gemm cp_cfm_gemm cp_fm_transpose cp_fm_upper_to_full cp_fm_syrk cp_fm_symm cp_fm_triangular_multiply cp_cfm_triangular_multiply cp_fm_redistribute_start cp_fm_write_unformatted"
status=0
rows=()
timing_rows=()
warnings=()
while read -r -u 3 input type tolerance reference; do
  [[ -z $input || $input == \#* ]] && continue
  [[ $input =~ $filter ]] || continue
  name=${input%.inp}
  for p in $ranks; do
    declare -A value=() ok=() out=()
    for mode in plain dropin; do
      dir=$work/${name//\//_}/np$p-$mode
      rm -rf "$dir"
      prepare "$inputs_dir/$input" "$dir"
      echo "== $input, $p rank(s), $mode ($dir)"
      if ! run_cp2k "$dir" "$p" "$mode"; then
        echo "   CP2K failed; the end of its output:" >&2
        tail -20 "$dir/out" "$dir/err" >&2 || true
        status=1
      fi
      value[$mode]=$(value_of "$type" "$dir/out" || true)
      [[ -n ${value[$mode]} ]] || value[$mode]=none
      if [[ ${value[$mode]} != none ]] && within "$(rel_diff "${value[$mode]}" "$reference")" "$tolerance"; then
        ok[$mode]=OK
      else
        ok[$mode]="WRONG ($(rel_diff "${value[$mode]}" "$reference" 2>/dev/null || echo -))"
        status=1
      fi
      out[$mode]=$dir
      echo "   value ${value[$mode]}, reference ${ok[$mode]}, $(cat "$dir/wall") s"
    done
    if [[ ${value[plain]} == none || ${value[dropin]} == none ]]; then
      diff=-
      status=1
    else
      diff=$(rel_diff "${value[dropin]}" "${value[plain]}")
      within "$diff" 1e-12 || status=1
    fi
    read -r g_calls g_computed g_local g_handed <<<"$(report_of 'p?gemm' "${out[dropin]}/err")"
    read -r t_calls t_computed _ t_handed <<<"$(report_of 'p?tran' "${out[dropin]}/err")"
    read -r r_calls r_computed _ r_handed <<<"$(report_of 'p?gemr2d' "${out[dropin]}/err")"
    others=$(report_others "${out[dropin]}/err")
    handed=$(handed_total "${out[dropin]}/err")
    ((handed == 0)) || warnings+=("$input on $p rank(s): $handed call(s) of rank 0 handed back to ScaLAPACK (${out[dropin]}/err)")
    read -r _ gemm_plain <<<"$(timing_of cp_fm_gemm "${out[plain]}/out")"
    read -r _ gemm_dropin <<<"$(timing_of cp_fm_gemm "${out[dropin]}/out")"
    read -r _ total_plain <<<"$(timing_of CP2K "${out[plain]}/out")"
    read -r _ total_dropin <<<"$(timing_of CP2K "${out[dropin]}/out")"
    rows+=("| $input | $p | ${value[plain]} | ${value[dropin]} | $diff | ${ok[plain]} / ${ok[dropin]} | $g_calls: $g_computed ($g_local local), $g_handed | $t_calls: $t_computed, $t_handed | $r_calls: $r_computed, $r_handed | $others | $gemm_plain / $gemm_dropin | $total_plain / $total_dropin |")
    for r in $routines; do
      read -r c_plain s_plain <<<"$(timing_of "$r" "${out[plain]}/out")"
      read -r c_dropin s_dropin <<<"$(timing_of "$r" "${out[dropin]}/out")"
      [[ $c_plain == - && $c_dropin == - ]] && continue
      timing_rows+=("| $input | $p | $r | $c_plain / $c_dropin | $s_plain / $s_dropin |")
    done
    unset value ok out
  done
done 3<"$inputs_dir/TEST_FILES"  # fd 3: mpiexec reads its stdin

if ((${#rows[@]} == 0)); then echo "no input of $inputs_dir/TEST_FILES matches '$filter'" >&2; exit 1; fi

# ---- the tables -----------------------------------------------------------------------------
table_header="| input | P | value, plain | value, drop-in | rel. diff. | CP2K's reference (plain / drop-in) | p?gemm calls: computed (local), handed back | p?tran: computed, handed back | p?gemr2d: computed, handed back | other routines: computed, handed back | cp_fm_gemm s, plain / drop-in | CP2K s, plain / drop-in |
|---|---:|---:|---:|---:|---|---|---|---|---|---:|---:|"
timing_header="| input | P | CP2K routine | calls, plain / drop-in | time s (max over ranks), plain / drop-in |
|---|---:|---|---:|---:|"
{
  echo "$table_header"
  printf '%s\n' "${rows[@]}"
  echo
  echo "$timing_header"
  printf '%s\n' "${timing_rows[@]}"
} >"$work/tables.md"
echo
cat "$work/tables.md"
for w in "${warnings[@]}"; do echo "warning: $w"; done

mkdir -p "$(dirname "$results")"
{
  echo "# CP2K with libshardwise_scalapack preloaded"
  echo
  echo "Written by \`benchmarks/cp2k_dropin.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'); $machine;"
  echo "libshardwise_scalapack of commit $lib_commit (\`$(basename "$build")\`), ScaLAPACK"
  echo "$(dpkg-query -W -f '${Version}' libscalapack-openmpi2.2 2>/dev/null || echo '?'), OpenMPI $(dpkg-query -W -f '${Version}' openmpi-bin 2>/dev/null || echo '?'), \`OMPI_MCA_btl=self,vader\`, 1 thread per rank."
  echo "Inputs: CP2K's regression inputs (\`benchmarks/cp2k/\`, from CP2K v2023.1's \`tests/QS/\`)."
  echo
  echo "The value is the one CP2K's regression test compares (the last \`Total energy:\` line, type 1,"
  echo "or \`ENERGY| Total FORCE_EVAL\`, type 11); \"rel. diff.\" is |drop-in - plain| / |plain|; the"
  echo "reference check is CP2K's, with the tolerance in \`benchmarks/cp2k/TEST_FILES\`. The drop-in's"
  echo "counts are rank 0's (\`SHARDWISE_PGEMM_REPORT=1\`): calls, then those computed by shardwise"
  echo "(of which local: one process holds the product) and those handed back to ScaLAPACK. Times"
  echo "are CP2K's timing table (total time of the routine, maximum over ranks) on a machine shared"
  echo "with other work, so they are indicative only."
  echo
  cat "$work/tables.md"
  if ((${#warnings[@]})); then
    echo
    for w in "${warnings[@]}"; do echo "- warning: ${w% (*}"; done
  fi
} >"$results"
echo
echo "outputs: $work; table: $results"
if ((status)); then echo "FAILED: a run failed, a value differs beyond 1e-12 relative, or misses CP2K's reference" >&2; fi
exit $status
