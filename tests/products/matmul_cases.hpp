// The matmul cases both backends run: the seed's, every family on 1-D, 2-D and 3-D
// meshes, every output option and variant, and a pool for the randomized test.
#pragma once

#include <complex>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "matmul_support.hpp"

namespace shardwise::testing {

using R = Replicated;
template <fixed_string... N> using S = Split<N...>;
template <fixed_string... N> using P = Partial<N...>;
template <typename... D> using TS = TensorSharding<D...>;
using Rep = replicated_sharding_t<2>;

using Line = Mesh<Axis<"x", dynamic_extent>>;
using Grid = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>>;
using Cube = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>, Axis<"z", dynamic_extent>>;

/// TS<Am, Bn> with a pending sum over the axes of the Split K.
template <typename Sh, typename K> struct partial_of;
template <typename Am, typename Bn, fixed_string... N>
struct partial_of<TS<Am, Bn>, Split<N...>> {
  using type = TS<Am, Bn, Partial<N...>>;
};

/// One case, type-erased: runs on a group mesh and returns this rank's result.
template <typename M>
struct PlanCase {
  std::string name;
  std::function<CaseResult(ProcessGroupMesh<M>&, MatmulShape, std::uint64_t, const CommCounters*)> run;
};

/// The scalar type as a case's name starts: fp64, fp32, complex<fp64>, complex<fp32>.
template <typename Scalar>
constexpr const char* scalar_label() {
  if constexpr (std::is_same_v<Scalar, double>) return "fp64";
  else if constexpr (std::is_same_v<Scalar, float>) return "fp32";
  else if constexpr (std::is_same_v<Scalar, std::complex<double>>) return "complex<fp64>";
  else return "complex<fp32>";
}

template <typename M, typename Scalar, typename ShA, typename ShB, typename ShC = NaturalOutput,
          typename V = variant::Standard>
void add_case(std::vector<PlanCase<M>>& cases) {
  if constexpr (valid_matmul<M, ShA, ShB, ShC, V>) {
    std::ostringstream name;
    name << scalar_label<Scalar>() << " A" << ShA::to_string() << " B"
         << ShB::to_string() << " " << V::name << ": " << matmul_plan<M, ShA, ShB, ShC, V>::describe();
    cases.push_back({name.str(), [](ProcessGroupMesh<M>& g, MatmulShape s, std::uint64_t seed, const CommCounters* c) {
                       return run_case<Scalar, ShA, ShB, ShC, V>(g, s, seed, c);
                     }});
  }
}

/// Every output option the product supports: natural, replicated, and where k is
/// matched, the pending sum kept (Partial) or scattered into the rows or the columns.
template <typename M, typename Scalar, typename ShA, typename ShB>
void add_outputs(std::vector<PlanCase<M>>& cases) {
  using Am = typename ShA::template dim<0>;
  using Bn = typename ShB::template dim<1>;
  add_case<M, Scalar, ShA, ShB>(cases);
  add_case<M, Scalar, ShA, ShB, Rep>(cases);
  add_case<M, Scalar, ShA, ShB, NaturalOutput, variant::Ring>(cases);
  add_case<M, Scalar, ShA, ShB, NaturalOutput, variant::Summa<3>>(cases);
  if constexpr (std::is_same_v<typename ShA::template dim<1>, typename ShB::template dim<0>> &&
                !std::is_same_v<typename ShA::template dim<1>, Replicated>) {
    using K = typename ShA::template dim<1>;
    add_case<M, Scalar, ShA, ShB, typename partial_of<TS<Am, Bn>, K>::type>(cases);
    if constexpr (std::is_same_v<Am, Replicated>) {
      add_case<M, Scalar, ShA, ShB, TS<K, Bn>>(cases);
      add_case<M, Scalar, ShA, ShB, TS<K, Bn>, variant::Ring>(cases);
    }
    if constexpr (std::is_same_v<Bn, Replicated>) {
      add_case<M, Scalar, ShA, ShB, TS<Am, K>>(cases);
      add_case<M, Scalar, ShA, ShB, TS<Am, K>, variant::Ring>(cases);
    }
  }
}

/// Every pair of shardings in the lists, with every output option.
template <typename M, typename Scalar, typename... As>
struct for_pairs {
  template <typename A, typename... Bs>
  static void add_row(std::vector<PlanCase<M>>& cases) {
    (add_outputs<M, Scalar, A, Bs>(cases), ...);
  }
  template <typename... Bs>
  static void add(std::vector<PlanCase<M>>& cases) {
    (add_row<As, Bs...>(cases), ...);
  }
};

// The pools, compiled once (tests/matmul_cases_*.cpp) for both backends' tests.
/// 1-D: every sharding of A and B on one axis, every output option and variant.
std::vector<PlanCase<Line>> line_cases_fp64();
std::vector<PlanCase<Line>> line_cases_fp32();
/// The same in std::complex<double> and (the first half) std::complex<float>.
std::vector<PlanCase<Line>> line_cases_complex();
/// 2-D: the seed's cases, the other families, two-axis splits in both orders.
std::vector<PlanCase<Grid>> grid_cases_fp64();
/// 2-D in fp32: the seed's cases.
std::vector<PlanCase<Grid>> grid_cases_fp32();
/// 2-D in std::complex<double>: the seed's cases, SUMMA, ring and 2.5D-free families.
std::vector<PlanCase<Grid>> grid_cases_complex();
/// 3-D: matched k over one axis with both outer dimensions split; gathers over two axes.
std::vector<PlanCase<Cube>> cube_cases_fp64();
/// 2.5D on layers z, from replicated inputs and from inputs stored once, and the 3-D algorithm.
void add_25d_cases(std::vector<PlanCase<Cube>>& cases);
/// 2.5D on layers z in std::complex<double> (C reduced, scattered or kept Partial; from operands
/// stored once through via) and std::complex<float>: the randomized tests' complex 3-D pool.
std::vector<PlanCase<Cube>> cube_cases_complex();

/// The seed's cases on a 2-D mesh (x, y), each with C replicated as in the seed.
template <typename Scalar>
void add_seed_cases(std::vector<PlanCase<Grid>>& cases) {
  add_case<Grid, Scalar, TS<R, S<"y">>, TS<S<"y">, R>, Rep>(cases);
  add_case<Grid, Scalar, TS<R, S<"x">>, TS<S<"x">, R>, Rep>(cases);
  add_case<Grid, Scalar, TS<R, S<"x", "y">>, TS<S<"x", "y">, R>, Rep>(cases);
  add_case<Grid, Scalar, TS<R, S<"y">>, TS<S<"x">, R>, Rep>(cases);
  add_case<Grid, Scalar, TS<S<"x">, S<"y">>, TS<S<"x">, R>, Rep>(cases);
  add_case<Grid, Scalar, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, Rep>(cases);
}

}  // namespace shardwise::testing
