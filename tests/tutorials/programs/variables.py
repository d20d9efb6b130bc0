"""TensorFlow's guide "Introduction to Variables", as a program.

Creating variables (float, bool, complex), viewing them as tensors, assigning (and the error when a value would
resize one), copies, ``assign_add``/``assign_sub``, naming, non-trainable counters and device placement (the
guide's ``tf.debugging.set_log_device_placement(True)`` is left out: TensorFlow turns soft placement off when it
is called after TensorFlow started, as it is in a test process). ``tally`` is a ``tf.function`` updating variables
on every call (the counters a training loop keeps).
"""
import tensorflow as tf

my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
my_variable = tf.Variable(my_tensor)

step_counter = tf.Variable(1, trainable=False)
total = tf.Variable(0.0)


@tf.function
def tally(x):
    step_counter.assign_add(1)
    total.assign_add(tf.reduce_sum(x))
    return total / tf.cast(step_counter, tf.float32)


def main():
    out = {}
    bool_variable = tf.Variable([False, False, False, True])
    complex_variable = tf.Variable([5 + 4j, 6 + 1j])
    out["bool"] = bool_variable.numpy()
    out["complex"] = complex_variable.numpy()
    out["complex_dtype"] = complex_variable.dtype.name

    print("Shape: ", my_variable.shape)
    print("DType: ", my_variable.dtype)
    print("As NumPy: ", my_variable.numpy())
    out["shape"] = tuple(my_variable.shape)
    out["dtype"] = my_variable.dtype.name
    out["as_numpy"] = my_variable.numpy()

    print("A variable:", my_variable)
    print("\nViewed as a tensor:", tf.convert_to_tensor(my_variable))
    print("\nIndex of highest value:", tf.math.argmax(my_variable))
    print("\nCopying and reshaping: ", tf.reshape(my_variable, [1, 4]))
    out["as_tensor"] = tf.convert_to_tensor(my_variable)
    out["argmax"] = tf.math.argmax(my_variable)
    out["reshaped"] = tf.reshape(my_variable, [1, 4])

    a = tf.Variable([2.0, 3.0])
    a.assign([1, 2])            # keeps the same dtype, float32
    out["assigned"] = a.numpy()
    try:
        a.assign([1.0, 2.0, 3.0])   # not allowed: it would resize the variable
        out["resize_error"] = None
    except (ValueError, tf.errors.InvalidArgumentError) as e:
        print(f"{type(e).__name__}: {e}")
        out["resize_error"] = "raised"

    a = tf.Variable([2.0, 3.0])
    b = tf.Variable(a)          # b is a copy of a's value
    a.assign([5, 6])
    out["a"], out["b"] = a.numpy(), b.numpy()
    out["assign_add"] = a.assign_add([2, 3]).numpy()
    out["assign_sub"] = a.assign_sub([7, 9]).numpy()

    # Lifecycles, naming, and watching
    a = tf.Variable(my_tensor, name="Mark")
    b = tf.Variable(my_tensor + 1, name="Mark")
    print(a == b)
    out["same_name_compare"] = (a == b).numpy()
    out["names_equal"] = a.name == b.name
    out["trainable"] = [step_counter.trainable, total.trainable]

    # Placing variables and tensors
    with tf.device("CPU:0"):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        c = tf.matmul(a, b)
    print(c)
    out["matmul_on_cpu"] = c.numpy()

    with tf.device("CPU:0"):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.Variable([[1.0, 2.0, 3.0]])
    with tf.device("GPU:0"):    # no GPU: placed on the CPU (soft placement)
        k = a * b
    print(k)
    out["broadcast_product"] = k.numpy()

    out["tally"] = [tally(tf.constant([1.0, 2.0])).numpy() for _ in range(3)]
    out["step_counter"] = step_counter.numpy()
    for key, value in out.items():
        print(f"{key}: {value}")
    return out


if __name__ == "__main__":
    main()
