// The fp64 local GEMMs of the nn layers (detail::gemm ends every call in these three, all with a
// column-major C) are instantiated once, in nn_reference.cpp; every other test translation
// unit includes this header and links to them instead of compiling its own copies.
#pragma once

#include "shardwise/kernels/gemm.hpp"

namespace shardwise::detail {
extern template void gemm<double, Eigen::RowMajor, Eigen::ColMajor, Eigen::ColMajor>(
    double*, block_ref<double, Eigen::RowMajor>, block_ref<double, Eigen::ColMajor>, bool, std::int64_t);
extern template void gemm<double, Eigen::ColMajor, Eigen::RowMajor, Eigen::ColMajor>(
    double*, block_ref<double, Eigen::ColMajor>, block_ref<double, Eigen::RowMajor>, bool, std::int64_t);
extern template void gemm<double, Eigen::ColMajor, Eigen::ColMajor, Eigen::ColMajor>(
    double*, block_ref<double, Eigen::ColMajor>, block_ref<double, Eigen::ColMajor>, bool, std::int64_t);
}  // namespace shardwise::detail
