// Mesh: extents, axis lookup, ravel/unravel in every mode, dynamic extents.
#include <gtest/gtest.h>

#include <stdexcept>

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
