"""TensorFlow's guide "Introduction to gradients and automatic differentiation", as a program.

Every section of the guide: gradient tapes over variables, tensors, models and Keras layers; what the tape watches;
intermediate results; persistent tapes; non-scalar targets; control flow; the cases where a gradient is None; and
zeros instead of None. The guide's random ``w`` is drawn from numpy here, so that every number is deterministic.
``dense_grads`` is the guide's dense-layer gradient as a ``tf.function`` (what a training step computes).
"""
import numpy as np
import tensorflow as tf

W0 = np.array([[0.5, -0.25], [0.125, 1.0], [-0.75, 0.375]], np.float32)

w = tf.Variable(W0, name="w")
b = tf.Variable(tf.zeros(2, dtype=tf.float32), name="b")


@tf.function
def dense_grads(x):
    with tf.GradientTape() as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    return loss, tape.gradient(loss, [w, b])


def main():
    out = {}

    # Computing gradients
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x**2
    out["dy_dx"] = tape.gradient(y, x).numpy()

    x = [[1., 2., 3.]]
    with tf.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    [dl_dw, dl_db] = tape.gradient(loss, [w, b])
    out["dl_dw"], out["dl_db"] = dl_dw.numpy(), dl_db.numpy()
    my_vars = {"w": w, "b": b}
    grad = tape.gradient(loss, my_vars)
    out["grad_b_dict"] = grad["b"].numpy()
    out["dense_grads"] = [t.numpy() for t in tf.nest.flatten(dense_grads(tf.constant(x)))]

    # Gradients with respect to a model
    layer = tf.keras.layers.Dense(2, activation="relu")
    x = tf.constant([[1., 2., 3.]])
    layer.build(x.shape)
    layer.set_weights([W0, np.array([0.1, -0.2], np.float32)])
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_mean(y**2)
    grad = tape.gradient(loss, layer.trainable_variables)
    out["layer_grads"] = [g.numpy() for g in grad]
    out["layer_variable_shapes"] = [tuple(var.shape) for var in layer.trainable_variables]

    # Controlling what the tape watches
    x0 = tf.Variable(3.0, name="x0")
    x1 = tf.Variable(3.0, name="x1", trainable=False)
    x2 = tf.Variable(2.0, name="x2") + 1.0
    x3 = tf.constant(3.0, name="x3")
    with tf.GradientTape() as tape:
        y = (x0**2) + (x1**2) + (x2**2)
    grad = tape.gradient(y, [x0, x1, x2, x3])
    out["watched_grads"] = [None if g is None else g.numpy() for g in grad]
    out["watched_count"] = len(tape.watched_variables())

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x**2
    out["watch_constant"] = tape.gradient(y, x).numpy()

    x0 = tf.Variable(0.0)
    x1 = tf.Variable(10.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = tf.math.sin(x0)
        y1 = tf.nn.softplus(x1)
        y = y0 + y1
        ys = tf.reduce_sum(y)
    grad = tape.gradient(ys, {"x0": x0, "x1": x1})
    out["dy_dx0"], out["dy_dx1"] = grad["x0"], grad["x1"].numpy()

    # Intermediate results
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    out["dz_dy"] = tape.gradient(z, y).numpy()

    x = tf.constant([1, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    out["dz_dx"], out["dy_dx_persistent"] = tape.gradient(z, x).numpy(), tape.gradient(y, x).numpy()
    del tape

    # Gradients of non-scalar targets
    x = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = 1 / x
    out["dy0"], out["dy1"] = tape.gradient(y0, x).numpy(), tape.gradient(y1, x).numpy()
    with tf.GradientTape() as tape:
        y0 = x**2
        y1 = 1 / x
    out["dict_target"] = tape.gradient({"y0": y0, "y1": y1}, x).numpy()
    with tf.GradientTape() as tape:
        y = x * [3., 4.]
    out["vector_target"] = tape.gradient(y, x).numpy()

    x = tf.linspace(-10.0, 10.0, 200 + 1)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.sigmoid(x)
    dy_dx = tape.gradient(y, x)
    out["sigmoid_grad"] = dy_dx.numpy()

    # Control flow
    x = tf.constant(1.0)
    v0 = tf.Variable(2.0)
    v1 = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    out["dv0"], out["dv1"] = None if dv0 is None else dv0.numpy(), dv1
    out["dx_control"] = tape.gradient(result, x)

    # Cases where gradient returns None
    x = tf.Variable(2.)
    y = tf.Variable(3.)
    with tf.GradientTape() as tape:
        z = y * y
    out["unconnected"] = tape.gradient(z, x)

    x = tf.Variable(2.0)
    replaced = []
    for epoch in range(2):
        with tf.GradientTape() as tape:
            y = x + 1
        gradient = tape.gradient(y, x)
        replaced.append((isinstance(x, tf.Variable), None if gradient is None else gradient.numpy()))
        x = x + 1   # This should be `x.assign_add(1)`
    out["replaced_variable"] = replaced

    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float32)
    with tf.GradientTape() as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)         # calculated with NumPy: the tape cannot see it
        y = tf.reduce_mean(y, axis=0)
    out["through_numpy"] = tape.gradient(y, x)

    x = tf.constant(10)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    out["through_integer"] = g.gradient(y, x)

    x0 = tf.Variable(3.0)
    x1 = tf.Variable(0.0)
    with tf.GradientTape() as tape:
        x1.assign_add(x0)               # the tape starts recording from x1
        y = x1**2
    out["through_stateful"] = tape.gradient(y, x0)

    # Zeros instead of None
    x = tf.Variable([2., 2.])
    y = tf.Variable(3.)
    with tf.GradientTape() as tape:
        z = y**2
    out["zeros"] = tape.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy()

    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
