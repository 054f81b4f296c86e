"""The one levelling engine (dr.model.levelling): levels, ties, cycles, determinism, cost."""

from __future__ import annotations

import random

import pytest

from dr.model.levelling import cut

FIRM, LOOSE = "requires", "precedes"


def _graph(*edges: tuple[str, str, str]) -> dict[str, dict[str, str]]:
    """(before, after, strength) triples as after -> {before: strength}."""
    graph: dict[str, dict[str, str]] = {}
    for before, after, strength in edges:
        graph.setdefault(after, {})[before] = strength
    return graph


def test_a_level_is_one_more_than_the_deepest_predecessor():
    result = cut("abcde", _graph(("a", "b", FIRM), ("b", "c", FIRM), ("a", "c", FIRM), ("d", "c", LOOSE)))
    assert result.levels() == [["a", "d", "e"], ["b"], ["c"]]
    assert result.cycles == [] and result.set_aside == frozenset()
    assert cut([], {}).levels() == []


def test_ties_share_a_level_listed_by_name():
    result = cut(["z", "m", "a", "q"], _graph(("q", "z", FIRM), ("q", "a", FIRM)))
    assert result.levels() == [["m", "q"], ["a", "z"]]


def test_a_loose_cycle_sets_aside_only_its_own_loose_edges():
    # a -> b -> a through loose edges; c waits loosely for b, outside the cycle: kept.
    graph = _graph(("a", "b", LOOSE), ("b", "a", LOOSE), ("b", "c", LOOSE), ("x", "a", FIRM))
    result = cut("abcx", graph, loose={LOOSE})
    assert result.set_aside == {("a", "b"), ("b", "a")}
    assert result.cycles == []
    assert result.levels() == [["b", "x"], ["a", "c"]]


def test_firm_edges_of_a_cycle_are_kept_when_loose_ones_break_it():
    result = cut("ab", _graph(("a", "b", FIRM), ("b", "a", LOOSE)), loose={LOOSE})
    assert result.set_aside == {("b", "a")} and result.cycles == []
    assert result.levels() == [["a"], ["b"]]


def test_a_firm_cycle_is_one_group_after_everything_else_and_before_its_dependents():
    graph = _graph(("a", "b", FIRM), ("b", "a", FIRM), ("p", "a", FIRM), ("b", "d", FIRM), ("x", "y", FIRM),
                   ("y", "z", FIRM))
    result = cut("abdpxyz", graph, loose={LOOSE})
    assert result.cycles == [("a", "b")]
    assert result.cycle_of("a") == ("a", "b") and result.cycle_of("d") == ()
    # The group waits for p and comes after the whole x-y-z chain (nothing there waits for it);
    # d, which needs b, waits for the group.
    assert result.levels() == [["p", "x"], ["y"], ["z"], ["a", "b"], ["d"]]


def test_the_same_strengths_are_all_firm_by_default():
    result = cut("abc", _graph(("a", "b", LOOSE), ("b", "c", LOOSE), ("c", "a", LOOSE)))
    assert result.cycles == [("a", "b", "c")] and result.levels() == [["a", "b", "c"]]


def test_separate_cycles_are_separate_groups_and_a_chain_of_them_stays_in_order():
    graph = _graph(("a", "b", FIRM), ("b", "a", FIRM), ("c", "d", FIRM), ("d", "c", FIRM), ("b", "c", FIRM),
                   ("e", "f", FIRM), ("f", "e", FIRM))
    result = cut("abcdef", graph)
    assert result.cycles == [("a", "b"), ("c", "d"), ("e", "f")]
    assert result.levels() == [["a", "b", "e", "f"], ["c", "d"]]


def test_a_cycle_with_the_loose_edges_that_close_it_set_aside_may_still_hold_a_firm_one():
    # a-b-c loosely in a ring, and b <-> c firmly: b and c stay together, a is ordered.
    graph = _graph(("a", "b", LOOSE), ("b", "c", FIRM), ("c", "b", FIRM), ("c", "a", LOOSE))
    result = cut("abc", graph, loose={LOOSE})
    assert result.set_aside == {("a", "b"), ("c", "a")}
    assert result.cycles == [("b", "c")]
    assert result.levels() == [["a"], ["b", "c"]]


def test_self_edges_are_ignored_and_unknown_names_refused():
    assert cut("a", _graph(("a", "a", FIRM))).levels() == [["a"]]
    with pytest.raises(ValueError, match="not in the graph"):
        cut("a", _graph(("ghost", "a", FIRM)))


def _random_graph(rng: random.Random, n: int, m: int) -> tuple[list[str], list[tuple[str, str, str]]]:
    names = [f"n{i:06d}" for i in range(n)]
    edges = {(rng.choice(names), rng.choice(names)): rng.choice((FIRM, LOOSE)) for _ in range(m)}
    return names, [(before, after, strength) for (before, after), strength in edges.items() if before != after]


def test_the_result_depends_on_the_graph_not_on_the_order_it_is_given_in():
    rng = random.Random(9)
    for _ in range(30):
        names, edges = _random_graph(rng, 40, 70)
        first = cut(names, _graph(*edges), loose={LOOSE})
        shuffled_names, shuffled_edges = names[:], edges[:]
        rng.shuffle(shuffled_names)
        rng.shuffle(shuffled_edges)
        assert cut(shuffled_names, _graph(*shuffled_edges), loose={LOOSE}) == first


def test_every_kept_edge_is_honoured():
    rng = random.Random(4)
    for _ in range(30):
        names, edges = _random_graph(rng, 60, 100)
        result = cut(names, _graph(*edges), loose={LOOSE})
        for before, after, _ in edges:
            if (before, after) in result.set_aside:
                continue  # only loose edges inside a cycle are set aside (the test above)
            same = result.cycle_of(before) and result.cycle_of(before) == result.cycle_of(after)
            assert result.level[before] < result.level[after] or same, (before, after)
        assert sorted(n for level in result.levels() for n in level) == sorted(names)
        assert all(result.levels())  # no empty level


def test_a_large_deep_graph_is_cut_without_recursion_limits():
    # (How long it takes is a benchmark's business, not a test's: a timed assertion fails on a
    # busy machine. The engine is iterative, so depth is no limit; this is what is checked.)
    rng = random.Random(1)
    names, edges = _random_graph(rng, 20_000, 60_000)
    chain = [(f"c{i:06d}", f"c{i + 1:06d}", FIRM) for i in range(20_000)]  # deep: no recursion limit
    result = cut(names + [f"c{i:06d}" for i in range(20_001)], _graph(*edges, *chain), loose={LOOSE})
    assert result.level["c020000"] - result.level["c000000"] == 20_000
