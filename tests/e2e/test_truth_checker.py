"""The ground-truth comparison every exact-count test relies on, checked on
hand-made truths: what it lets move and what it must refuse."""
from conftest import rows_explained_by_truth


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
