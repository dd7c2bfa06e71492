def test_sub():
    assert 5 - 3 == 3


def test_ok():
    assert True
