"""TensorFlow's guide "Multilayer perceptrons for digit recognition with Core APIs", as a program.

``tf.random.set_seed``, dense layers as ``tf.Module``s that make their weights (Xavier-uniform, seeded) on their
first call, an MLP whose ``__call__`` is a ``tf.function``, the guide's own Adam optimizer (its slot variables
made on its first step), cross-entropy and accuracy, a training loop over batched ``tf.data`` pipelines, and an
export module whose ``__call__`` has an ``input_signature`` (uint8 images of any shape in, class ids out). MNIST
is replaced by synthetic uint8 images (``synthetic.mnist_like``), and the guide's eager ``train_step(x, y, loss,
acc, model, optimizer)`` is a ``tf.function`` of the batch (the model and optimizer are the module's); its Adam
counts steps in a ``tf.Variable`` (a Python float would be frozen into the traced step). The SavedModel cells
are left out (rt has no ``tf.saved_model``). ``main(initialize=...)`` sets the weights after the first call.
"""
import tensorflow as tf
from synthetic import mnist_like

# Set random seed for reproducible results
tf.random.set_seed(22)

(x_tr, y_tr), (x_te, y_te) = mnist_like(n_train=856, n_test=256, seed=1)
x_tr, x_te = x_tr[..., None], x_te[..., None]           # as tfds gives MNIST: [n, 28, 28, 1] uint8, int64 labels
y_tr, y_te = y_tr.astype("int64"), y_te.astype("int64")
x_train, y_train = x_tr[256:], y_tr[256:]
x_val, y_val = x_tr[:256], y_tr[:256]

train_data = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(128)
val_data = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(128)


def preprocess(x, y):
    # Reshaping the data
    x = tf.reshape(x, shape=[-1, 784])
    # Rescaling the data
    x = x / 255
    return x, y


train_data, val_data = train_data.map(preprocess), val_data.map(preprocess)


def xavier_init(shape):
    # Computes the xavier initialization values for a weight matrix
    in_dim, out_dim = shape
    xavier_lim = tf.sqrt(6.) / tf.sqrt(tf.cast(in_dim + out_dim, tf.float32))
    weight_vals = tf.random.uniform(shape=(in_dim, out_dim), minval=-xavier_lim, maxval=xavier_lim, seed=22)
    return weight_vals


class DenseLayer(tf.Module):

    def __init__(self, out_dim, weight_init=xavier_init, activation=tf.identity):
        # Initialize the dimensions and activation functions
        self.out_dim = out_dim
        self.weight_init = weight_init
        self.activation = activation
        self.built = False

    def __call__(self, x):
        if not self.built:
            # Infer the input dimension based on first call
            self.in_dim = x.shape[1]
            # Initialize the weights and biases
            self.w = tf.Variable(self.weight_init(shape=(self.in_dim, self.out_dim)))
            self.b = tf.Variable(tf.zeros(shape=(self.out_dim,)))
            self.built = True
        # Compute the forward pass
        z = tf.add(tf.matmul(x, self.w), self.b)
        return self.activation(z)


class MLP(tf.Module):

    def __init__(self, layers):
        self.layers = layers

    @tf.function
    def __call__(self, x, preds=False):
        # Execute the model's layers sequentially
        for layer in self.layers:
            x = layer(x)
        return x


hidden_layer_1_size = 700
hidden_layer_2_size = 500
output_size = 10

mlp_model = MLP([
    DenseLayer(out_dim=hidden_layer_1_size, activation=tf.nn.relu),
    DenseLayer(out_dim=hidden_layer_2_size, activation=tf.nn.relu),
    DenseLayer(out_dim=output_size)])


def cross_entropy_loss(y_pred, y):
    # Compute cross entropy loss with a sparse operation
    sparse_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=y_pred)
    return tf.reduce_mean(sparse_ce)


def accuracy(y_pred, y):
    # Compute accuracy after extracting class predictions
    class_preds = tf.argmax(tf.nn.softmax(y_pred), axis=1)
    is_equal = tf.equal(y, class_preds)
    return tf.reduce_mean(tf.cast(is_equal, tf.float32))


class Adam:

    def __init__(self, learning_rate=1e-3, beta_1=0.9, beta_2=0.999, ep=1e-7):
        # Initialize the optimizer parameters and variable slots
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.learning_rate = learning_rate
        self.ep = ep
        self.t = tf.Variable(1.)
        self.v_dvar, self.s_dvar = [], []
        self.built = False

    def apply_gradients(self, grads, vars):
        # Initialize variables on the first call
        if not self.built:
            for var in vars:
                v = tf.Variable(tf.zeros(shape=var.shape))
                s = tf.Variable(tf.zeros(shape=var.shape))
                self.v_dvar.append(v)
                self.s_dvar.append(s)
            self.built = True
        # Update the model variables given their gradients
        for i, (d_var, var) in enumerate(zip(grads, vars)):
            self.v_dvar[i].assign(self.beta_1 * self.v_dvar[i] + (1 - self.beta_1) * d_var)
            self.s_dvar[i].assign(self.beta_2 * self.s_dvar[i] + (1 - self.beta_2) * tf.square(d_var))
            v_dvar_bc = self.v_dvar[i] / (1 - (self.beta_1**self.t))
            s_dvar_bc = self.s_dvar[i] / (1 - (self.beta_2**self.t))
            var.assign_sub(self.learning_rate * (v_dvar_bc / (tf.sqrt(s_dvar_bc) + self.ep)))
        self.t.assign_add(1.)


optimizer = Adam()


@tf.function
def train_step(x_batch, y_batch):
    # Update the model state given a batch of data
    with tf.GradientTape() as tape:
        y_pred = mlp_model(x_batch)
        batch_loss = cross_entropy_loss(y_pred, y_batch)
    batch_acc = accuracy(y_pred, y_batch)
    grads = tape.gradient(batch_loss, mlp_model.variables)
    optimizer.apply_gradients(grads, mlp_model.variables)
    return batch_loss, batch_acc


@tf.function
def val_step(x_batch, y_batch):
    # Evaluate the model on given a batch of validation data
    y_pred = mlp_model(x_batch)
    batch_loss = cross_entropy_loss(y_pred, y_batch)
    batch_acc = accuracy(y_pred, y_batch)
    return batch_loss, batch_acc


def train_model(mlp, train_data, val_data, epochs):
    # Initialize data structures
    train_losses, train_accs = [], []
    val_losses, val_accs = [], []

    # Format training loop and begin training
    for epoch in range(epochs):
        batch_losses_train, batch_accs_train = [], []
        batch_losses_val, batch_accs_val = [], []

        # Iterate over the training data
        for x_batch, y_batch in train_data:
            # Compute gradients and update the model's parameters
            batch_loss, batch_acc = train_step(x_batch, y_batch)
            # Keep track of batch-level training performance
            batch_losses_train.append(batch_loss)
            batch_accs_train.append(batch_acc)

        # Iterate over the validation data
        for x_batch, y_batch in val_data:
            batch_loss, batch_acc = val_step(x_batch, y_batch)
            batch_losses_val.append(batch_loss)
            batch_accs_val.append(batch_acc)

        # Keep track of epoch-level model performance
        train_loss, train_acc = tf.reduce_mean(batch_losses_train), tf.reduce_mean(batch_accs_train)
        val_loss, val_acc = tf.reduce_mean(batch_losses_val), tf.reduce_mean(batch_accs_val)
        train_losses.append(float(train_loss))
        train_accs.append(float(train_acc))
        val_losses.append(float(val_loss))
        val_accs.append(float(val_acc))
        print(f"Epoch: {epoch}")
        print(f"Training loss: {train_loss:.3f}, Training accuracy: {train_acc:.3f}")
        print(f"Validation loss: {val_loss:.3f}, Validation accuracy: {val_acc:.3f}")
    return train_losses, train_accs, val_losses, val_accs


def preprocess_test(x):
    # The export module takes in unprocessed and unlabeled data
    x = tf.reshape(x, shape=[-1, 784])
    x = x / 255
    return x


def class_pred_test(y):
    # Generate class predictions from MLP output
    return tf.argmax(tf.nn.softmax(y), axis=1)


class ExportModule(tf.Module):
    def __init__(self, model, preprocess, class_pred):
        # Initialize pre and postprocessing functions
        self.model = model
        self.preprocess = preprocess
        self.class_pred = class_pred

    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None, None, None], dtype=tf.uint8)])
    def __call__(self, x):
        # Run the ExportModule for new data points
        x = self.preprocess(x)
        y = self.model(x)
        y = self.class_pred(y)
        return y


mlp_model_export = ExportModule(model=mlp_model, preprocess=preprocess_test, class_pred=class_pred_test)


def accuracy_score(y_pred, y):
    # Generic accuracy function
    is_equal = tf.equal(y_pred, y)
    return tf.reduce_mean(tf.cast(is_equal, tf.float32))


def main(initialize=None, epochs=3):
    if initialize is not None:
        mlp_model(tf.zeros([1, 784]))
        initialize(mlp_model.variables)
    out = {}
    out["history"] = train_model(mlp_model, train_data, val_data, epochs=epochs)
    test_classes = mlp_model_export(x_te)
    out["test_classes"] = test_classes.numpy()
    out["test_accuracy"] = float(accuracy_score(test_classes, y_te))
    print(f"Accuracy: {out['test_accuracy']:.3f}")
    out["steps"] = float(optimizer.t.numpy())
    return out


if __name__ == "__main__":
    main()
