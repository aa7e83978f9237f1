// Mesh: extents, axis lookup, ravel/unravel in every mode, dynamic extents.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "shardwise/mesh.hpp"

namespace sw = shardwise;

using Line = sw::Mesh<sw::Axis<"x", 5>>;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using Cube = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"pp", 3>, sw::Axis<"tp", 2>>;
using Hybrid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"pp", 2>, sw::Axis<"tp", 2>, sw::Axis<"sp", 2>>;
using Elastic = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>, sw::Axis<"tp", 2>>;

// ---- compile-time facts ------------------------------------------------------
static_assert(Grid::ndim == 2 && Cube::ndim == 3 && Hybrid::ndim == 4);
static_assert(Grid{}.size() == 8 && Cube{}.size() == 12 && Hybrid{}.size() == 16);
static_assert(Grid::index_of("y") == 1 && Grid::index_of("z") == -1);
static_assert(Grid::axis_index<"x">() == 0 && Cube::axis_index<"tp">() == 2);
static_assert(Grid{}.extent("y") == 4 && Grid{}.extent(0) == 2);
static_assert(Grid::is_static && !Elastic::is_static && Elastic::dynamic_count == 1);
static_assert(sw::MeshType<Grid> && !sw::MeshType<int>);

// C order: the last axis is fastest. ColossalAI's example: (0, 1, 0) is rank 2 in a 2x2x2 mesh.
static_assert(sw::Mesh<sw::Axis<"a", 2>, sw::Axis<"b", 2>, sw::Axis<"c", 2>>{}.ravel({0, 1, 0}) == 2);
static_assert(Grid{}.ravel({1, 2}) == 6);
static_assert(Grid{}.unravel(6) == Grid::coordinate_type{1, 2});
static_assert(Cube{}.unravel(11) == Cube::coordinate_type{1, 2, 1});

// Modes: wrap is Python's modulo, clip clamps.
static_assert(Grid{}.ravel({-1, 5}, sw::IndexMode::wrap) == Grid{}.ravel({1, 1}));
static_assert(Grid{}.ravel({-1, 5}, sw::IndexMode::clip) == Grid{}.ravel({0, 3}));
static_assert(Grid{}.unravel(-1, sw::IndexMode::wrap) == Grid::coordinate_type{1, 3});
static_assert(Grid{}.unravel(100, sw::IndexMode::clip) == Grid::coordinate_type{1, 3});
static_assert(Grid{}.unravel(-7, sw::IndexMode::clip) == Grid::coordinate_type{0, 0});

// Dynamic extents are given in axis order and still allow constant evaluation.
static_assert(Elastic{3}.size() == 6 && Elastic{3}.extent("dp") == 3);
static_assert(Elastic{3}.ravel({2, 1}) == 5);

// raise: an out-of-range index is not a constant expression, and throws at run time.
template <auto Coordinate>
concept ravel_is_constant = requires { typename std::integral_constant<int, Grid{}.ravel(Coordinate)>; };
static_assert(ravel_is_constant<Grid::coordinate_type{1, 3}>);
static_assert(!ravel_is_constant<Grid::coordinate_type{2, 0}>);
static_assert(!ravel_is_constant<Grid::coordinate_type{0, -1}>);

// The rank count must fit in an int: a mesh that would overflow is not a constant expression
// (it throws), and a static one does not compile (tests/compile_fail/mesh_too_many_ranks.cpp).
template <auto Extent>
concept elastic_is_constant = requires { typename std::integral_constant<int, Elastic{Extent}.size()>; };
static_assert(elastic_is_constant<(1 << 30) - 1>);               // 2^31 - 2 ranks: the largest even count
static_assert(Elastic{(1 << 30) - 1}.size() == INT_MAX - 1);
static_assert(!elastic_is_constant<1 << 30>);                    // 2^31 ranks
static_assert(!elastic_is_constant<2147483648L>);                // the extent itself is too large
static_assert(!elastic_is_constant<0>);
static_assert(!elastic_is_constant<-1>);
static_assert(!elastic_is_constant<~0ULL>);                      // not mistaken for -1
static_assert(elastic_is_constant<std::uint8_t{3}> && elastic_is_constant<3ULL>);
static_assert(sw::Mesh<sw::Axis<"a", INT_MAX>>{}.size() == INT_MAX);
static_assert(sw::Mesh<sw::Axis<"a", 46340>, sw::Axis<"b", 46340>>{}.size() == 46340 * 46340);
using Wide = sw::Mesh<sw::Axis<"a", sw::dynamic_extent>, sw::Axis<"b", sw::dynamic_extent>, sw::Axis<"c", 2>>;
template <auto A, auto B>
concept wide_is_constant = requires { typename std::integral_constant<int, Wide{A, B}.size()>; };
static_assert(wide_is_constant<32768, 32767> && !wide_is_constant<32768, 32768>);
static_assert(!wide_is_constant<INT_MAX, INT_MAX>);             // the product overflows long long too

// A fully static mesh takes no extents; a dynamic one exactly one per dynamic axis.
static_assert(std::is_constructible_v<Elastic, int> && std::is_constructible_v<Wide, int, long>);
static_assert(std::is_copy_constructible_v<Grid> && std::is_copy_constructible_v<Elastic>);

// ---- run-time behaviour --------------------------------------------------------
template <typename M>
void expect_round_trip(const M& mesh) {
  for (int rank = 0; rank < mesh.size(); ++rank) {
    for (auto mode : {sw::IndexMode::raise, sw::IndexMode::wrap, sw::IndexMode::clip}) {
      const auto coordinate = mesh.unravel(rank, mode);
      EXPECT_EQ(mesh.ravel(coordinate, mode), rank);
    }
  }
}

TEST(Mesh, RoundTripInEveryMode) {
  expect_round_trip(Line{});
  expect_round_trip(Grid{});
  expect_round_trip(Cube{});
  expect_round_trip(Hybrid{});
  expect_round_trip(Elastic{5});
}

TEST(Mesh, WrapAndClipMatchTheirDefinition) {
  const Cube mesh;
  for (int a = -4; a < 6; ++a)
    for (int b = -7; b < 8; ++b)
      for (int c = -3; c < 5; ++c) {
        auto wrap = [](int i, int e) { return ((i % e) + e) % e; };
        auto clip = [](int i, int e) { return i < 0 ? 0 : (i >= e ? e - 1 : i); };
        EXPECT_EQ(mesh.ravel({a, b, c}, sw::IndexMode::wrap),
                  mesh.ravel({wrap(a, 2), wrap(b, 3), wrap(c, 2)}));
        EXPECT_EQ(mesh.ravel({a, b, c}, sw::IndexMode::clip),
                  mesh.ravel({clip(a, 2), clip(b, 3), clip(c, 2)}));
      }
  for (long long flat = -30; flat < 30; ++flat) {
    EXPECT_EQ(mesh.unravel(flat, sw::IndexMode::wrap), mesh.unravel(((flat % 12) + 12) % 12));
    EXPECT_EQ(mesh.unravel(flat, sw::IndexMode::clip),
              mesh.unravel(flat < 0 ? 0 : (flat > 11 ? 11 : flat)));
  }
}

TEST(Mesh, RaiseThrowsOutOfRange) {
  const Grid mesh;
  EXPECT_THROW((void)mesh.ravel({2, 0}), std::out_of_range);
  EXPECT_THROW((void)mesh.ravel({0, -1}), std::out_of_range);
  EXPECT_THROW((void)mesh.unravel(8), std::out_of_range);
  EXPECT_THROW((void)mesh.unravel(-1), std::out_of_range);
  EXPECT_THROW((void)mesh.extent("z"), std::out_of_range);
}

TEST(Mesh, DynamicExtentMustBePositive) {
  EXPECT_THROW(Elastic{0}, std::invalid_argument);
  EXPECT_THROW(Elastic{-2}, std::invalid_argument);
  EXPECT_EQ(Elastic{4}.size(), 8);
}

/// what() of the std::invalid_argument that f throws ("" if none).
template <typename F>
std::string invalid_argument_text(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Mesh, BadExtentsSayWhatIsWrong) {
  EXPECT_EQ(invalid_argument_text([] { (void)Elastic{0}; }),
            "shardwise::Mesh: axis \"dp\": an extent must be at least 1, got 0");
  EXPECT_EQ(invalid_argument_text([] { (void)Elastic{-2}; }),
            "shardwise::Mesh: axis \"dp\": an extent must be at least 1, got -2");
  EXPECT_EQ(invalid_argument_text([] { (void)Elastic{2147483648L}; }),
            "shardwise::Mesh: axis \"dp\": extent 2147483648 does not fit in an int (MPI counts ranks with int)");
  EXPECT_EQ(invalid_argument_text([] { (void)Elastic{~0ULL}; }),
            "shardwise::Mesh: axis \"dp\": extent 18446744073709551615 does not fit in an int (MPI counts ranks "
            "with int)");
  EXPECT_EQ(invalid_argument_text([] { (void)Wide{3, 0}; }),
            "shardwise::Mesh: axis \"b\": an extent must be at least 1, got 0");
}

TEST(Mesh, TooManyRanksIsRejectedNotWrapped) {
  EXPECT_EQ(invalid_argument_text([] { (void)Elastic{1 << 30}; }),
            "shardwise::Mesh: the mesh would have 2147483648 ranks (dp=1073741824 x tp=2), more than an int holds "
            "(2147483647); make the extents smaller");
  EXPECT_EQ(invalid_argument_text([] { (void)Wide{INT_MAX, INT_MAX}; }),
            "shardwise::Mesh: the mesh would have 9223372028264841218 ranks (a=2147483647 x b=2147483647 x c=2), "
            "more than an int holds (2147483647); make the extents smaller");
  using Huge = sw::Mesh<sw::Axis<"a", sw::dynamic_extent>, sw::Axis<"b", sw::dynamic_extent>,
                        sw::Axis<"c", sw::dynamic_extent>>;
  EXPECT_EQ(invalid_argument_text([] { (void)Huge{INT_MAX, INT_MAX, 8}; }),
            "shardwise::Mesh: the mesh would have 2^64 or more ranks (a=2147483647 x b=2147483647 x c=8), more than "
            "an int holds (2147483647); make the extents smaller");
  // The largest mesh that fits: size() is exact, its last rank round-trips.
  const Elastic largest{(1 << 30) - 1};
  EXPECT_EQ(largest.size(), INT_MAX - 1);
  EXPECT_EQ(largest.ravel(largest.unravel(INT_MAX - 2)), INT_MAX - 2);
}
