"""Trains a small MLP classifier on synthetic data with a Paddle-style loop.

    python examples/train_mlp.py [--epochs 20]

Runs unchanged with `import paddle` in place of `import oar as paddle`.
"""
import argparse
import time

import numpy as np

import oar as paddle


def make_data(n, centers, rng):
    """Noisy points around the given centers; the label is the center's index."""
    classes, dim = centers.shape
    labels = rng.integers(0, classes, size=n)
    x = centers[labels] + rng.normal(0, 2.0, size=(n, dim))
    return x.astype("float32"), labels.astype("int64")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()

    paddle.seed(0)
    rng = np.random.default_rng(0)
    centers = rng.normal(0, 1.0, size=(10, 32))
    x_train, y_train = make_data(4096, centers, rng)
    x_test, y_test = make_data(1024, centers, rng)

    model = paddle.nn.Sequential(
        paddle.nn.Linear(32, 128), paddle.nn.ReLU(),
        paddle.nn.Linear(128, 128), paddle.nn.ReLU(),
        paddle.nn.Linear(128, 10))
    loss_fn = paddle.nn.CrossEntropyLoss()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())

    start = time.time()
    for epoch in range(args.epochs):
        perm = rng.permutation(len(x_train))
        total, batches = 0.0, 0
        for i in range(0, len(perm), args.batch_size):
            idx = perm[i:i + args.batch_size]
            xb = paddle.to_tensor(x_train[idx])
            yb = paddle.to_tensor(y_train[idx])
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += loss.item()
            batches += 1
        with paddle.no_grad():
            logits = model(paddle.to_tensor(x_test))
            acc = float((logits.argmax(axis=-1).numpy() == y_test).mean())
        print(f"epoch {epoch + 1:2d}  loss {total / batches:.4f}  test accuracy {acc:.3f}")
    print(f"trained in {time.time() - start:.1f}s")


if __name__ == "__main__":
    main()
