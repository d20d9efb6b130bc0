"""The built model of the "keras fit" class: a Sequential MLP compiled when the module is imported.

``compile`` makes ``model.train_function`` (an ``rt.function`` of the batch, its signature from the model's
``Input`` and the loss), so ``python -m transpiler build`` compiles the step ``fit`` runs: forward, sparse softmax
cross entropy, gradients, Adam's update and the accuracy metric, as native code. (A module that compiles a Keras
model at import is built as one that defines ``rt.function``s is.)
"""
import runtime as rt

SAMPLES, FEATURES, HIDDEN, CLASSES, BATCH = 4096, 784, 128, 10, 32

rt.keras.utils.set_random_seed(0)
model = rt.keras.Sequential([rt.keras.Input((FEATURES,)), rt.keras.layers.Dense(HIDDEN, activation="relu"),
                             rt.keras.layers.Dense(CLASSES)])
model.compile(optimizer=rt.keras.optimizers.Adam(learning_rate=1e-3),
              loss=rt.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
