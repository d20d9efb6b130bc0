"""Synthetic stand-ins for the datasets the guides download (numpy only, the same arrays in every library)."""
import numpy as np


def mnist_like(n_train=1024, n_test=256, seed=0, image_shape=(28, 28)):
    """``(x_train, y_train), (x_test, y_test)`` shaped and typed like ``keras.datasets.mnist.load_data()``: uint8
    images of ten classes (each a noisy copy of its own random prototype, so a model can learn them) and uint8
    labels."""
    rng = np.random.default_rng(seed)
    prototypes = rng.uniform(0, 255, (10,) + tuple(image_shape))

    def draw(n):
        labels = rng.integers(0, 10, n)
        images = prototypes[labels] * 0.6 + rng.uniform(0, 255 * 0.4, (n,) + tuple(image_shape))
        return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.uint8)
    return draw(n_train), draw(n_test)


def breast_cancer_like(n=569, features=30, seed=0):
    """``(x, y)`` shaped like the Wisconsin breast cancer data the logistic regression guide reads: float64
    features of two overlapping classes, labels 0/1."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 0.37).astype(np.float64)
    scale = rng.uniform(0.5, 20.0, features)
    shift = rng.uniform(0.0, 2.0, features)
    x = (rng.standard_normal((n, features)) + y[:, None] * shift) * scale + scale * 3
    return x, y
