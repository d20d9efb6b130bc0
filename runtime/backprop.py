"""``rt.GradientTape``: records the ops that run on watched tensors, then differentiates them.

Eagerly, the tape records each op the op layer runs (``runtime.context.record_operation``);
inside ``rt.function`` it records the graph operations being traced, and ``gradient`` adds the
backward pass to the same graph (so it is optimized and compiled with the rest). A Function
called eagerly under a tape is recorded as one ``PartitionedCall`` op whose gradient is another
traced graph (``runtime.ops.functional_ops``).

Example:
    >>> import runtime as rt
    >>> x = rt.constant(3.0)
    >>> with rt.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> float(tape.gradient(y, x))
    6.0
"""
from __future__ import annotations

import contextlib
import enum

import numpy as np

from runtime import context, nest
from runtime.ops import array_ops, script_ops
from runtime.ops.gradients import backprop, differentiable_dtype, variables_read
from runtime.ops.registry import convert
from runtime.tensor import Tensor
from runtime.variables import Variable


class UnconnectedGradients(enum.Enum):
    """What ``GradientTape.gradient`` gives for a source the target does not depend on (``tf.UnconnectedGradients``)."""

    NONE = "none"
    ZERO = "zero"


def _unconnected_mode(value) -> UnconnectedGradients:
    """``unconnected_gradients`` as the enum: ``"none"``/``"zero"`` or an ``UnconnectedGradients`` member."""
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients) else value)
    except ValueError:
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero' (or rt.UnconnectedGradients.NONE/ZERO), "
                         f"got {value!r}") from None


class GradientTape:
    """Record operations for automatic differentiation (``tf.GradientTape``).

    Args:
        persistent: allow more than one call of ``gradient``/``jacobian``.
        watch_accessed_variables: watch every trainable variable read while the tape is active.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records: list | None = []
        self._watched: dict[int, Tensor] = {}
        self._variables: dict[int, Variable] = {}      # id(handle) -> variable
        self._recording = False
        self._entered = False
        self._graph = None

    # -- recording -------------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if self._recording:
            raise ValueError("this GradientTape is already recording")
        if not self._entered:
            self._graph = context.current_graph()
            self._entered = True
        context.push_tape(self)
        self._recording = True
        return self

    def __exit__(self, *exc) -> None:
        if self._recording:
            context.pop_tape(self)
            self._recording = False

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run inside the block are not recorded."""
        if not self._recording:
            raise ValueError("stop_recording() needs a tape that is recording (use it inside the `with` block)")
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()

    def reset(self) -> None:
        """Forget everything recorded so far (watched tensors included)."""
        self._records = []
        self._watched.clear()
        self._variables.clear()

    def watch(self, tensor) -> None:
        """Watch tensors or variables (nested structures allowed) so gradients can be taken for them."""
        for value in nest.flatten(tensor):
            if isinstance(value, Variable):
                self._variables[id(value.handle)] = value
            elif isinstance(value, Tensor):
                if differentiable_dtype(value.dtype):
                    self._watched[id(value)] = value
            else:
                raise ValueError(f"GradientTape.watch: expected a tensor or a variable, got {type(value).__name__} "
                                 f"{value!r}")

    def watched_variables(self) -> tuple:
        return tuple(self._variables.values())

    def _accessed(self, variables) -> None:
        if self._recording and self._watch_accessed:
            for variable in variables:
                if variable.trainable:
                    self._variables.setdefault(id(variable.handle), variable)

    def _watches(self, tensors, variables=()) -> bool:
        return any(id(t) in self._watched for t in tensors) or any(id(h) in self._variables for h in variables)

    def _record(self, op) -> None:
        if not self._recording or self._records is None:
            return
        if op.type == "ReadVariableOp":
            self._accessed([op.attrs["variable"].get()])
        if op.graph is not self._graph:
            return                                   # inside a branch or loop body: its If/While op is recorded
        if not self._watches(op.inputs, variables_read(op).values()):
            return
        self._records.append(op)
        for t in op.outputs:
            if differentiable_dtype(t.dtype):
                self._watched[id(t)] = t

    # -- differentiating ----------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(target)/d(sources): one gradient per source, in the structure of ``sources``.

        ``target`` may be a tensor or a (nested) list of tensors, whose gradients add up;
        ``output_gradients`` weights each target (default: ones). A source the target does not
        depend on gets None (or zeros with ``unconnected_gradients="zero"``).

        Raises:
            RuntimeError: a non-persistent tape was already used.
        """
        if self._records is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients "
                               "(or jacobians)")
        # a variable target stays a variable: its gradient with respect to itself is its weight (see _differentiate)
        targets = [t if isinstance(t, Variable) else convert(t) for t in nest.flatten(target)]
        if output_gradients is None:
            weights = [array_ops.ones_like(t) if differentiable_dtype(t.dtype) or isinstance(t, Variable) else None
                       for t in targets]
        else:
            weights = [None if g is None else convert(g) for g in nest.flatten(output_gradients)]
            if len(weights) != len(targets):
                raise ValueError(f"GradientTape.gradient: {len(weights)} output_gradients for {len(targets)} targets")
        flat = nest.flatten(sources)
        mode = _unconnected_mode(unconnected_gradients)
        results = self._differentiate(targets, weights, flat)
        if mode is UnconnectedGradients.ZERO:
            results = [array_ops.zeros_like(convert(s)) if g is None else g for s, g in zip(flat, results)]
        if not self._persistent:
            self._records = None
        if isinstance(sources, (Tensor, Variable)):
            return results[0]
        return nest.pack_sequence_as(sources, results)

    def _differentiate(self, targets: list, weights: list, sources: list) -> list:
        """One gradient per source. A target that is itself a source (a variable, or a tensor the tape does not
        watch) adds its weight to that source's gradient, as TensorFlow's does: d(v)/d(v) is one."""
        tensors, handles = [], []
        for s in sources:
            if isinstance(s, Variable):
                handles.append(s.handle)
            elif isinstance(s, Tensor):
                tensors.append(s)
            else:
                raise ValueError(f"GradientTape.gradient: sources must be tensors or variables, got "
                                 f"{type(s).__name__} {s!r}")
        recording = self._recording
        if recording:                               # the tape does not record its own backward pass
            self.__exit__()
        try:
            watched = [t for t in tensors if id(t) in self._watched]
            recorded = [(t, w) for t, w in zip(targets, weights) if not isinstance(t, Variable)]
            grads, variable_grads = backprop(self._records, [t for t, _ in recorded], [w for _, w in recorded],
                                             watched, [h for h in handles if id(h) in self._variables])
            by_tensor = {id(t): g for t, g in zip(watched, grads)}
            results = [variable_grads.get(id(s.handle)) if isinstance(s, Variable) else by_tensor.get(id(s))
                       for s in sources]
            for target, weight in zip(targets, weights):
                if weight is None:
                    continue
                for i, source in enumerate(sources):
                    if isinstance(target, Variable):
                        same = isinstance(source, Variable) and source.handle is target.handle
                    else:       # (a watched tensor's own weight is already in backprop's result)
                        same = source is target and id(source) not in self._watched
                    if same:
                        results[i] = weight if results[i] is None else results[i] + weight
        finally:
            if recording:
                context.push_tape(self)
                self._recording = True
        return results

    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """d(target[i])/d(source[j]) for every element: shape ``target.shape + source.shape`` per source.

        The target's shape must be known (each element is one backward pass). A source the target
        does not depend on gets None (zeros of that shape with ``unconnected_gradients="zero"``).
        """
        if self._records is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients "
                               "(or jacobians)")
        mode = _unconnected_mode(unconnected_gradients)
        target = convert(target)
        size = target.shape.num_elements()
        if size is None:
            raise ValueError(f"GradientTape.jacobian needs a target of known shape, got {target.shape}")
        flat = nest.flatten(sources)
        dims = tuple(target.shape.dims)
        rows = self._rows(target, size, flat)
        results = []
        for s, row in zip(flat, rows):
            source = convert(s)
            if all(g is None for g in row) and mode is UnconnectedGradients.NONE:
                results.append(None)
                continue
            row = [array_ops.zeros_like(source) if g is None else g for g in row]
            stacked = array_ops.stack(row) if row else array_ops.zeros_like(source)
            results.append(array_ops.reshape(stacked, list(dims) + source.shape.as_list()))
        if not self._persistent:
            self._records = None
        if isinstance(sources, (Tensor, Variable)):
            return results[0]
        return nest.pack_sequence_as(sources, results)

    def _rows(self, target: Tensor, size: int, flat: list) -> list[list]:
        """One backward pass per element of ``target``: ``rows[j][i]`` is d(target[i])/d(flat[j]) (or None)."""
        rows: list[list] = [[] for _ in flat]
        dims = tuple(target.shape.dims)
        for i in range(size):
            weight = np.zeros(size, target.dtype.np)
            weight[i] = 1
            for row, g in zip(rows, self._differentiate([target], [convert(weight.reshape(dims))], flat)):
                row.append(g)
        return rows

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per-example jacobians: ``result[b, i..., j...]`` is d(target[b, i...])/d(source[b, j...]).

        Assumes, as TensorFlow does, that example ``b`` of ``target`` depends only on example ``b``
        of ``source``; both need a known first (batch) dimension, equal in both.
        """
        target, source_tensor = convert(target), convert(source)
        if target.shape.rank is None or target.shape.rank < 1 or source_tensor.shape.rank is None or \
                source_tensor.shape.rank < 1:
            raise ValueError(f"GradientTape.batch_jacobian needs a target and a source with a batch dimension, "
                             f"got shapes {target.shape} and {source_tensor.shape}")
        batch = target.shape[0]
        if batch is None or source_tensor.shape[0] != batch:
            raise ValueError(f"GradientTape.batch_jacobian: the target's and the source's first (batch) dimensions "
                             f"must be known and equal, got {target.shape} and {source_tensor.shape}")
        full = self.jacobian(target, source, unconnected_gradients)
        if full is None:
            return None
        # full: [batch, *target_rest, batch, *source_rest]; keep the diagonal of the two batch axes.
        t_rest, s_rest = target.shape.rank - 1, source_tensor.shape.rank - 1
        perm = [0, 1 + t_rest] + list(range(1, 1 + t_rest)) + list(range(2 + t_rest, 2 + t_rest + s_rest))
        n = int(batch)
        rest = target.shape.as_list()[1:] + source_tensor.shape.as_list()[1:]
        pairs = array_ops.reshape(array_ops.transpose(full, perm), [n * n] + rest)
        return array_ops.gather(pairs, [b * n + b for b in range(n)]) if n else \
            array_ops.zeros([0] + rest, target.dtype)


script_ops.register_gradient_tape(GradientTape)
