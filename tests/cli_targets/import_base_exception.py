"""A target whose import raises a BaseException subclass of its own."""


class Stop(BaseException):
    """Derives from BaseException, so ``except Exception`` does not catch it."""


raise Stop("a BaseException of its own")
