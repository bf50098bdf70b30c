"""The examples in the public docstrings run and give what they show, on both backends."""

import doctest


def test_docstring_examples(mod):
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3  # the shim `bpe` (no compiler) holds only the module docstring
    assert result.failed == 0
