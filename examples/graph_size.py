"""Guide: "Looping over Python data": a Python loop unrolls into the graph, a tensor loop does not."""
import runtime as rt
from examples._check import compare


def graph_size(f, *args):
    return len(f.get_concrete_function(*args).graph.as_graph_def().node)


@rt.function
def train(dataset):
    loss = rt.constant(0)
    for x, y in dataset:
        loss += rt.abs(y - x)
    return loss


train.get_concrete_function([(1, 1)] * 3)
train.get_concrete_function([(1, 3), (4, 2), (0, 5)])


@rt.function
def train_tensor(xs, ys):
    loss = rt.constant(0)
    for i in rt.range(rt.size(xs)):
        loss += rt.abs(ys[i] - xs[i])
    return loss


train_tensor.get_concrete_function(rt.TensorSpec([None], rt.int32), rt.TensorSpec([None], rt.int32))


def run():
    def ones(n):
        return rt.ones([n], rt.int32)

    return [
        ("python data unrolls", graph_size(train, [(1, 1)] * 10) > graph_size(train, [(1, 1)] * 3), True),
        ("tensor loop is one loop", graph_size(train_tensor, ones(3), ones(3)) == graph_size(train_tensor, ones(10), ones(10)),
         True),
        compare("train([(1, 3), (4, 2), (0, 5)])", train, [(1, 3), (4, 2), (0, 5)]),
        compare("train_tensor([1, 5, 2], [4, 1, 2])", train_tensor, rt.constant([1, 5, 2]), rt.constant([4, 1, 2])),
        compare("train_tensor(range(50), zeros(50))", train_tensor, rt.range(50), rt.zeros([50], rt.int32)),
    ]
