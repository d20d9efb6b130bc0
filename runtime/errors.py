"""``rt.errors``: run-time errors raised by ops, graphs and executors."""


class OpError(Exception):
    """Base class of run-time op failures (mirrors ``tf.errors.OpError``)."""

    def __init__(self, message: str = "", op=None):
        super().__init__(message)
        self.message = message
        self.op = op


class InvalidArgumentError(OpError):
    """An op received an invalid argument at run time (bad index, shape mismatch ...)."""


class OutOfRangeError(OpError):
    """An index or iterator went past its end."""


class UnimplementedError(OpError):
    """The op or dtype has no implementation here."""


class InternalError(OpError):
    """An invariant of the runtime was broken: a bug, please report it."""
