// The typed einsum pool (einsum_typed_cases.hpp), on a dp x tp mesh of any extents.
#include "einsum_typed_cases.hpp"

namespace shardwise::testing {

namespace {
using R = Replicated;
template <fixed_string... N> using S = Split<N...>;
template <fixed_string... N> using P = Partial<N...>;
template <typename... D> using TS = TensorSharding<D...>;
}  // namespace

std::vector<TypedEinsumCase> typed_einsum_cases() {
  std::vector<TypedEinsumCase> cases;
  // Attention, heads over tp and batch over dp (odd extents: uneven blocks).
  const IndexExtents attention{{'b', 3}, {'s', 5}, {'q', 5}, {'k', 5}, {'m', 7}, {'h', 5}, {'d', 3}};
  add_typed_case<"bsm,mhd->bhsd", TS<S<"dp">, R, R>, TS<R, S<"tp">, R>>(cases, attention);          // Q, K, V
  add_typed_case<"bhqd,bhkd->bhqk", TS<S<"dp">, S<"tp">, R, R>, TS<S<"dp">, S<"tp">, R, R>>(cases, attention);
  add_typed_case<"bhqk,bhkd->bhqd", TS<S<"dp">, S<"tp">, R, R>, TS<S<"dp">, S<"tp">, R, R>>(cases, attention);
  add_typed_case<"bhsd,hdm->bsm", TS<S<"dp">, S<"tp">, R, R>, TS<S<"tp">, R, R>>(cases, attention);  // AllReduce
  add_typed_case<"bhsd,hdm->bsm", TS<S<"dp">, S<"tp">, R, R>, TS<S<"tp">, R, R>, TS<S<"dp">, R, R, P<"tp">>>(
      cases, attention);                                                                               // kept Partial
  add_typed_case<"bhsd,hdm->bsm", TS<S<"dp">, S<"tp">, R, R>, TS<S<"tp">, R, R>, TS<S<"dp">, S<"tp">, R>>(
      cases, attention);                                                                               // ReduceScatter
  add_typed_case<"bsm,bhsd->mhd", TS<S<"dp">, R, R>, TS<S<"dp">, S<"tp">, R, R>>(cases, attention);  // dW: over dp
  add_typed_case<"bhsd,mhd->bsm", TS<S<"dp">, S<"tp">, R, R>, TS<R, S<"tp">, R>>(cases, attention);  // dX
  // Batched products.
  const IndexExtents batched{{'b', 5}, {'m', 6}, {'k', 7}, {'n', 5}};
  add_typed_case<"bmk,bkn->bmn", TS<S<"dp", "tp">, R, R>, TS<S<"dp", "tp">, R, R>>(cases, batched);
  add_typed_case<"bmk,bkn->bmn", TS<S<"dp">, R, S<"tp">>, TS<S<"dp">, S<"tp">, R>>(cases, batched);
  add_typed_case<"bmk,bkn->bmn", TS<S<"dp">, R, S<"tp">>, TS<S<"dp">, R, R>, TS<S<"dp">, R, R>, variant::Ring>(
      cases, batched);
  add_typed_case<"bmk,bkn->bnm", TS<R, S<"dp">, R>, TS<R, R, S<"tp">>>(cases, batched);  // Full, C transposed
  add_typed_case<"bmk,bkn->mbn", TS<S<"tp">, R, S<"dp">>, TS<R, S<"dp">, R>>(cases, batched);
  // Rank 2 (a matmul), its ring and SUMMA variants; rank 1 operands.
  const IndexExtents matrix{{'m', 9}, {'k', 8}, {'n', 7}};
  add_typed_case<"mk,kn->mn", TS<S<"dp">, S<"tp">>, TS<S<"dp">, S<"tp">>>(cases, matrix);
  add_typed_case<"mk,kn->mn", TS<S<"dp">, S<"tp">>, TS<S<"dp">, S<"tp">>, NaturalOutput, variant::Summa<3>>(cases,
                                                                                                          matrix);
  add_typed_case<"mk,kn->mn", TS<R, S<"tp">>, TS<S<"tp">, R>, TS<S<"tp">, R>, variant::Ring>(cases, matrix);
  add_typed_case<"km,kn->nm", TS<S<"tp">, S<"dp">>, TS<S<"tp">, R>>(cases, matrix);  // A transposed
  add_typed_case<"m,n->mn", TS<S<"dp">>, TS<S<"tp">>>(cases, matrix);                // outer product
  add_typed_case<"mk,k->m", TS<S<"dp">, S<"tp">>, TS<S<"tp">>>(cases, matrix);       // matrix-vector
  add_typed_case<"bk,bk->b", TS<S<"dp">, S<"tp">>, TS<S<"dp">, R>>(cases, {{'b', 6}, {'k', 9}});
  // Complex scalars (16 and 8 bytes in the model): attention's projection, a batched product, the
  // matmul and its SUMMA variant, a ReduceScatter output.
  using Z = std::complex<double>;
  using C = std::complex<float>;
  add_typed_case<"bsm,mhd->bhsd", TS<S<"dp">, R, R>, TS<R, S<"tp">, R>, NaturalOutput, variant::Standard, Z>(
      cases, attention);
  add_typed_case<"bhsd,hdm->bsm", TS<S<"dp">, S<"tp">, R, R>, TS<S<"tp">, R, R>, TS<S<"dp">, S<"tp">, R>,
                 variant::Standard, C>(cases, attention);
  add_typed_case<"bmk,bkn->bmn", TS<S<"dp">, R, S<"tp">>, TS<S<"dp">, S<"tp">, R>, NaturalOutput, variant::Standard,
                 Z>(cases, batched);
  add_typed_case<"mk,kn->mn", TS<S<"dp">, S<"tp">>, TS<S<"dp">, S<"tp">>, NaturalOutput, variant::Standard, C>(
      cases, matrix);
  add_typed_case<"mk,kn->mn", TS<S<"dp">, S<"tp">>, TS<S<"dp">, S<"tp">>, NaturalOutput, variant::Summa<3>, Z>(
      cases, matrix);
  add_typed_case<"mk,kn->mn", TS<R, S<"tp">>, TS<S<"tp">, R>, TS<S<"tp">, R>, variant::Ring, Z>(cases, matrix);
  return cases;
}

}  // namespace shardwise::testing
