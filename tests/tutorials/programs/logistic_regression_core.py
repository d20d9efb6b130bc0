"""TensorFlow's guide "Logistic regression for binary classification with Core APIs", as a program.

``tf.random.set_seed``, a normalization module (mean and standard deviation in variables), a logistic regression
``tf.Module`` whose weights are made (seeded uniform) on its first call, the log loss, accuracy, shuffled and
batched ``tf.data`` pipelines, a training loop of plain gradient descent, and an export module whose ``__call__``
has an ``input_signature``. The breast cancer data the guide downloads is replaced by synthetic features of the
same shape (``synthetic.breast_cancer_like``), and the guide's eager training-loop body is a ``tf.function``
``train_step`` of the batch. ``main(shuffle=False)`` keeps the batches in order, ``main(initialize=...)`` sets
the weights.
"""
import numpy as np
import tensorflow as tf
from synthetic import breast_cancer_like

# Set random seed for reproducible results
tf.random.set_seed(22)

features, labels = breast_cancer_like()
order = np.random.default_rng(1).permutation(len(features))
train_index, test_index = order[:427], order[427:]          # dataset.sample(frac=0.75): 427 of 569
x_train, y_train = features[train_index], labels[train_index]
x_test, y_test = features[test_index], labels[test_index]

x_train, y_train = tf.convert_to_tensor(x_train, dtype=tf.float32), tf.convert_to_tensor(y_train, dtype=tf.float32)
x_test, y_test = tf.convert_to_tensor(x_test, dtype=tf.float32), tf.convert_to_tensor(y_test, dtype=tf.float32)


class Normalize(tf.Module):
    def __init__(self, x):
        # Initialize the mean and standard deviation for normalization
        self.mean = tf.Variable(tf.math.reduce_mean(x, axis=0))
        self.std = tf.Variable(tf.math.reduce_std(x, axis=0))

    def norm(self, x):
        # Normalize the input
        return (x - self.mean) / self.std

    def unnorm(self, x):
        # Unnormalize the input
        return (x * self.std) + self.mean


norm_x = Normalize(x_train)
x_train_norm, x_test_norm = norm_x.norm(x_train), norm_x.norm(x_test)


def log_loss(y_pred, y):
    # Compute the log loss function
    ce = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=y_pred)
    return tf.reduce_mean(ce)


class LogisticRegression(tf.Module):

    def __init__(self):
        self.built = False

    def __call__(self, x, train=True):
        # Initialize the model parameters on the first call
        if not self.built:
            # Randomly generate the weights and the bias term
            rand_w = tf.random.uniform(shape=[x.shape[-1], 1], seed=22)
            rand_b = tf.random.uniform(shape=[], seed=22)
            self.w = tf.Variable(rand_w)
            self.b = tf.Variable(rand_b)
            self.built = True
        # Compute the model output
        z = tf.add(tf.matmul(x, self.w), self.b)
        z = tf.squeeze(z, axis=1)
        if train:
            return z
        return tf.sigmoid(z)


log_reg = LogisticRegression()
y_pred = log_reg(x_train_norm[:5], train=False)


def predict_class(y_pred, thresh=0.5):
    # Return a tensor with  `1` if `y_pred` > `0.5`, and `0` otherwise
    return tf.cast(y_pred > thresh, tf.float32)


def accuracy(y_pred, y):
    # Return the proportion of matches between `y_pred` and `y`
    y_pred = tf.math.sigmoid(y_pred)
    y_pred_class = predict_class(y_pred)
    check_equal = tf.cast(y_pred_class == y, tf.float32)
    acc_val = tf.reduce_mean(check_equal)
    return acc_val


learning_rate = 0.01


@tf.function
def train_step(x_batch, y_batch):
    with tf.GradientTape() as tape:
        y_pred_batch = log_reg(x_batch)
        batch_loss = log_loss(y_pred_batch, y_batch)
    batch_acc = accuracy(y_pred_batch, y_batch)
    # Update the parameters with respect to the gradient calculations
    grads = tape.gradient(batch_loss, log_reg.variables)
    for g, v in zip(grads, log_reg.variables):
        v.assign_sub(learning_rate * g)
    return batch_loss, batch_acc


@tf.function
def test_step(x_batch, y_batch):
    y_pred_batch = log_reg(x_batch)
    return log_loss(y_pred_batch, y_batch), accuracy(y_pred_batch, y_batch)


class ExportModule(tf.Module):
    def __init__(self, model, norm_x, class_pred):
        # Initialize pre and postprocessing functions
        self.model = model
        self.norm_x = norm_x
        self.class_pred = class_pred

    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])
    def __call__(self, x):
        # Run the ExportModule for new data points
        x = self.norm_x.norm(x)
        y = self.model(x, train=False)
        y = self.class_pred(y)
        return y


log_reg_export = ExportModule(model=log_reg, norm_x=norm_x, class_pred=predict_class)


def main(shuffle=True, initialize=None, epochs=30):
    out = {"untrained": y_pred.numpy()}
    if initialize is not None:
        initialize(log_reg.variables)
    batch_size = 64
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train_norm, y_train))
    test_dataset = tf.data.Dataset.from_tensor_slices((x_test_norm, y_test))
    if shuffle:
        train_dataset = train_dataset.shuffle(buffer_size=x_train.shape[0])
        test_dataset = test_dataset.shuffle(buffer_size=x_test.shape[0])
    train_dataset, test_dataset = train_dataset.batch(batch_size), test_dataset.batch(batch_size)

    # Collect the history of training and test losses and accuracies
    train_losses, test_losses = [], []
    train_accs, test_accs = [], []

    # Set up the training loop and begin training
    for epoch in range(epochs):
        batch_losses_train, batch_accs_train = [], []
        batch_losses_test, batch_accs_test = [], []

        # Iterate over the training data
        for x_batch, y_batch in train_dataset:
            batch_loss, batch_acc = train_step(x_batch, y_batch)
            # Keep track of batch-level training performance
            batch_losses_train.append(batch_loss)
            batch_accs_train.append(batch_acc)

        # Iterate over the testing data
        for x_batch, y_batch in test_dataset:
            batch_loss, batch_acc = test_step(x_batch, y_batch)
            # Keep track of batch-level testing performance
            batch_losses_test.append(batch_loss)
            batch_accs_test.append(batch_acc)

        # Keep track of epoch-level model performance
        train_loss, train_acc = tf.reduce_mean(batch_losses_train), tf.reduce_mean(batch_accs_train)
        test_loss, test_acc = tf.reduce_mean(batch_losses_test), tf.reduce_mean(batch_accs_test)
        train_losses.append(float(train_loss))
        train_accs.append(float(train_acc))
        test_losses.append(float(test_loss))
        test_accs.append(float(test_acc))
        if epoch % 10 == 0:
            print(f"Epoch: {epoch}, Training log loss: {train_loss:.3f}")

    out["history"] = [train_losses, train_accs, test_losses, test_accs]
    out["weights"] = [v.numpy() for v in log_reg.variables]
    pred = log_reg_export(x_test)
    out["export_predictions"] = pred.numpy()
    out["export_accuracy"] = float(tf.reduce_mean(tf.cast(pred == y_test, tf.float32)))
    out["unnorm"] = norm_x.unnorm(x_test_norm[:3]).numpy()
    print(f"Test accuracy of the exported model: {out['export_accuracy']:.3f}")
    return out


if __name__ == "__main__":
    main()
