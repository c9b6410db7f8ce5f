"""A target whose import raises ``GeneratorExit``, a BaseException that is not an Exception."""

raise GeneratorExit("while importing")
