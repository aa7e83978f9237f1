// shardwise/plan/describe.hpp: a schedule in words, read off its steps.
//
//   "AllGather A along k over y -> AllGather B along k over x -> local GEMM"
//
// Operands and their dimensions are named by the plan (A, B, C and m, k, n for a matmul; an
// einsum's index letters); mesh axes by the mesh. Not templates: one copy serves every plan.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "shardwise/detail/text.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/step.hpp"

namespace shardwise::detail {

/// How describe() names the operands of a plan and their dimensions.
struct plan_names {
  std::array<std::string_view, 3> operands{"A", "B", "C"};
  /// The index letter of each dimension of A, B and C.
  std::array<std::array<char, max_tensor_rank>, 3> dims{};
};

/// A[m, k] * B[k, n] = C[m, n].
inline constexpr plan_names matmul_names{{"A", "B", "C"}, {{{'m', 'k'}, {'k', 'n'}, {'m', 'n'}}}};

/// Mesh axes by name: "-" for none, "x" for one, "(x,y)" for several.
inline std::string axes_text_of(const axis_list& axes, std::span<const std::string_view> axis_names) {
  static_vector<std::string_view, max_mesh_axes> names;
  for (int a : axes) names.push_back(axis_names[static_cast<std::size_t>(a)]);
  return axes_text(names);
}

/// "AllGather X along m over y", "ReduceScatter Y along m over y", "AllReduce Y over tp".
inline std::string collective_text(StepKind kind, std::string_view tensor, std::string_view dim,
                                   const std::string& axes) {
  switch (kind) {
    case StepKind::all_gather: return cat("AllGather ", tensor, " along ", dim, " over ", axes);
    case StepKind::reduce_scatter: return cat("ReduceScatter ", tensor, " along ", dim, " over ", axes);
    case StepKind::all_reduce: return cat("AllReduce ", tensor, " over ", axes);
    default: return {};
  }
}

inline std::string describe_step(const Step& s, const plan_names& names, std::span<const std::string_view> axis_names) {
  const std::string_view operand = names.operands[index_of(s.operand)];
  const char letter = s.dim >= 0 ? names.dims[index_of(s.operand)][static_cast<std::size_t>(s.dim)] : ' ';
  const std::string_view dim(&letter, 1);
  const std::string axes = axes_text_of(s.axes, axis_names);
  switch (s.kind) {
    case StepKind::all_gather:
    case StepKind::reduce_scatter:
    case StepKind::all_reduce:
      return collective_text(s.kind, operand, dim, axes);
    case StepKind::local_gemm:
      return "local GEMM";
    case StepKind::slice:
      return cat("slice ", operand, " along ", dim, " over ", axes);
    case StepKind::ring_all_gather_gemm:
      return cat("ring AllGather ", operand, " along ", dim, " over ", axes, " overlapped with the local GEMM");
    case StepKind::ring_gemm_reduce_scatter:
      return cat("local GEMM overlapped with ring ReduceScatter ", operand, " along ", dim, " over ", axes);
    case StepKind::summa_gemm:
      return cat(s.layers.empty() ? std::string("SUMMA: ")
                                  : cat("2.5D SUMMA, each layer over ", axes_text_of(s.layers, axis_names), " 1/c of ",
                                        std::string_view(&names.dims[0][1], 1), ": "),
                 "Broadcast ", names.operands[0], " panels along ", std::string_view(&names.dims[0][1], 1), " over ",
                 axes, " and ", names.operands[1], " panels along ", std::string_view(&names.dims[1][0], 1), " over ",
                 axes_text_of(s.b_axes, axis_names), ", GEMM per panel");
  }
  return {};
}

/// The steps joined by " -> ".
inline std::string describe_schedule(std::span<const Step> steps, const plan_names& names,
                                     std::span<const std::string_view> axis_names) {
  std::string text;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i) text.append(" -> ");
    text.append(describe_step(steps[i], names, axis_names));
  }
  return text;
}

}  // namespace shardwise::detail
