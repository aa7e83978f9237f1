# GFLOP/s of the matmul benchmarks, from the data files benchmarks/render_results.py writes.
#
#   gnuplot -e "results='benchmarks/results'; out='benchmarks/gflops.png'; ranks=2" benchmarks/plot.gp
#
# Top: square problems (x: m = n = k), one line per series. Bottom (when there are any): the
# other shapes, clustered bars. Series: the best shardwise run per policy (solid), the best
# hand-written kernel (dashed), the best pdgemm (dash-dot), single-process references (dotted).
if (!exists("results")) results = "benchmarks/results"
if (!exists("out")) out = "benchmarks/gflops.png"
if (!exists("ranks")) ranks = 2
square = results . "/gflops_square.dat"
other = results . "/gflops_other.dat"
# Each file has its own columns: render_results.py leaves out a series without any data there.
header_square = system("head -1 '" . square . "'")
header_other = system("head -1 '" . other . "' 2>/dev/null")
rows_square = int(system("tail -n +2 '" . square . "' | grep -c . || true"))
rows_other = int(system("tail -n +2 '" . other . "' 2>/dev/null | grep -c . || true"))

header = header_square
series(i) = word(header, i)
is_shardwise(i) = strstrt(series(i), "shardwise") == 1
shardwise_colors = "#1f4e9c #2a9d8f #8338ec #06a77d #3a86ff #6a994e"
color(i) = is_shardwise(i) ? word(shardwise_colors, (i - 2) % 6 + 1) : \
           strstrt(series(i), "handwritten") ? "#000000" : strstrt(series(i), "pdgemm") ? "#d62828" : \
           strstrt(series(i), "eigen_single") ? "#f4a261" : strstrt(series(i), "blas_single") ? "#b5838d" : "#777777"
dash(i) = is_shardwise(i) ? 1 : strstrt(series(i), "handwritten") ? 2 : strstrt(series(i), "pdgemm") ? 4 : 3
width(i) = is_shardwise(i) ? 2.5 : 1.8

set terminal pngcairo size 1100, (rows_other > 0 ? 1100 : 620) font "sans,11"
set output out
set datafile missing "?"
set key outside right top vertical Left reverse noenhanced
set grid ytics lc rgb "#dddddd"
set yrange [0:*]
set ylabel "GFLOP/s (2mnk / time)"

if (rows_other > 0) set multiplot layout 2, 1
set title sprintf("Square C = A B, fp64, %d MPI ranks (eigen\\_single, blas\\_single: one core; eigen\\_openmp: all cores)", ranks)
if (rows_square > 0) {
  set xlabel "m = n = k"
  set logscale x 2
  set offsets graph 0.04, graph 0.04, 0, 0
  set xtics (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
  plot for [i=2:words(header)] square skip 1 using 1:i with linespoints lw width(i) dt dash(i) pt 7 ps 1.0 \
       lc rgb color(i) title series(i)
  unset logscale x
  set offsets 0, 0, 0, 0
  set xtics autofreq
}
if (rows_other > 0) {
  set title "Other shapes (m x n x k), same series" noenhanced
  set xlabel ""
  set style data histograms
  set style histogram clustered gap 1
  set style fill solid 0.85 border -1
  set boxwidth 0.9
  set xtics noenhanced
  header = header_other
  plot for [i=2:words(header)] other skip 1 using i:xtic(1) lc rgb color(i) title series(i)
  unset multiplot
}
