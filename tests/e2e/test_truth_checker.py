"""The ground-truth comparison every exact-count test relies on, checked on
hand-made truths: what it lets move and what it must refuse."""
from conftest import rows_explained_by_truth, truth_rank_bounds_ns


def truth(*rows):
    """rows: (row, count, near_edge, disturbed, body_lower)"""
    return {"log2_usec": [{"row": row, "count": count, "near_edge": near, "disturbed": disturbed,
                           "body_lower": body_lower}
                          for row, count, near, disturbed, body_lower in rows]}


def test_equal_rows_match():
    assert rows_explained_by_truth({8: 3, 9: 2}, truth((8, 3, 0, 0, []), (9, 2, 0, 0, []))) is None


def test_a_fixed_call_may_not_move():
    assert rows_explained_by_truth({8: 4, 9: 1}, truth((8, 3, 0, 0, []), (9, 2, 0, 0, [])))


def test_a_near_edge_call_moves_one_row_only():
    assert rows_explained_by_truth({8: 4, 9: 1}, truth((8, 3, 0, 0, []), (9, 2, 1, 0, []))) is None
    assert rows_explained_by_truth({7: 1, 8: 3, 9: 1},
                                   truth((8, 3, 0, 0, []), (9, 2, 1, 0, [])))


def test_a_call_moves_down_to_its_body_row_and_no_further():
    body_in_7 = truth((8, 3, 0, 0, []), (9, 2, 0, 0, [[7, 1]]))
    assert rows_explained_by_truth({7: 1, 8: 3, 9: 1}, body_in_7) is None
    assert rows_explained_by_truth({8: 4, 9: 1}, body_in_7) is None
    assert rows_explained_by_truth({6: 1, 8: 3, 9: 1}, body_in_7)
    # Only one call of row 9 has a lower body.
    assert rows_explained_by_truth({8: 5}, body_in_7)


def test_totals_must_agree():
    assert "totals differ" in rows_explained_by_truth({8: 3}, truth((8, 3, 0, 0, []), (9, 1, 0, 0, [])))


def test_rank_bounds_reach_down_to_bodies_and_edges_and_up_to_the_row_or_max():
    body_in_7 = dict(truth((8, 3, 0, 0, []), (9, 2, 0, 0, [[7, 1]])), max_ns=700_000)
    # The shortest call may be the one whose body fell in row 7; the truth's
    # shortest is in row 8.
    assert truth_rank_bounds_ns(body_in_7, 1) == (128_000, 511_999)
    assert truth_rank_bounds_ns(body_in_7, 4) == (256_000, 700_000)
    # The longest: no call may be seen below row 9's edge but the one with a
    # lower body; none above the truth's max.
    assert truth_rank_bounds_ns(body_in_7, 5) == (512_000, 700_000)
    near_edge = dict(truth((9, 2, 1, 0, [])), max_ns=2_000_000)
    assert truth_rank_bounds_ns(near_edge, 1) == (256_000, 1_023_999)
    assert truth_rank_bounds_ns(near_edge, 2) == (512_000, 1_023_999)
