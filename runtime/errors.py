"""``rt.errors``: run-time errors raised by ops, graphs and executors."""


class OpError(Exception):
    """Base class of run-time op failures (mirrors ``tf.errors.OpError``)."""

    def __init__(self, message: str = "", op=None):
        super().__init__(message)
        self.message = message
        self.op = op

    original = None      # the user's exception that caused it (``rt.py_function``), with its traceback


class InvalidArgumentError(OpError):
    """An op received an invalid argument at run time (bad index, shape mismatch ...)."""


class InvalidArgumentValueError(InvalidArgumentError, ValueError):
    """A bad shape or value an eagerly run op's shape rule rejects: TensorFlow raises ``InvalidArgumentError``
    eagerly and ``ValueError`` while tracing; this is both, so either ``except`` clause catches it."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """A bad dtype an eagerly run op rejects (``InvalidArgumentError`` eagerly in TensorFlow, ``TypeError`` while
    tracing); this is both."""


class OutOfRangeError(OpError):
    """An index or iterator went past its end."""


class UnknownError(OpError):
    """An error of unknown kind, e.g. an exception raised by the Python function of ``rt.py_function``."""


class UnimplementedError(OpError):
    """The op or dtype has no implementation here."""


class InternalError(OpError):
    """An invariant of the runtime was broken: a bug, please report it."""


class ConversionError(Exception):
    """A function cannot be converted by rt.autograph (a generator, or a construct the converter rejects)."""


class SourceUnavailableError(ConversionError):
    """A function has no Python source to convert (a builtin, or code made by ``exec``): it runs unconverted."""


# What a kernel may raise for bad input; the executors turn these into InvalidArgumentError.
KERNEL_ERRORS = (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError, OverflowError)


def located(error: BaseException, op) -> OpError:
    """The run-time error for ``error`` raised by ``op``'s kernel, naming the op and the user's line.

    An ``original`` attribute (the user's exception inside ``rt.py_function``, with its traceback)
    is kept.
    """
    if isinstance(error, OpError):
        cls, message = type(error), str(error)
    else:
        cls, message = InvalidArgumentError, f"{op.type}: {error}"
    if "\n  [[" not in message:
        message = f"{message}\n  [[{op.where()}]]"
    result = cls(message, op)
    result.original = getattr(error, "original", None)
    return result


def missing_name(path: str):
    """A module ``__getattr__`` for rt's namespace ``path`` (``""`` for ``rt`` itself, ``"keras.layers"``): a name
    TensorFlow has and rt lacks is an ``AttributeError`` that says so and points at the README's API table.

    Example:
        >>> missing_name("keras.layers")("GRU")
        Traceback (most recent call last):
        ...
        AttributeError: rt has no keras.layers.GRU (TensorFlow's tf.keras.layers.GRU); see the README's API table
    """
    def __getattr__(name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module 'runtime{'.' if path else ''}{path}' has no attribute {name!r}")
        full = f"{path}.{name}" if path else name
        raise AttributeError(f"rt has no {full} (TensorFlow's tf.{full}); see the README's API table")
    return __getattr__
