"""Trains LeNet on the handwritten digits that ship with scikit-learn, with oar.Model.

    python examples/train_lenet.py [--epochs 15] [--save-dir DIR]

The 1,797 8x8 digit images (sklearn.datasets.load_digits: no download) are upsampled to
28x28 for Paddle's LeNet and split 80/20 (stratified); training images are randomly
shifted by up to 2 pixels. Training uses Adam with a cosine
learning-rate decay stepped every batch, prints Paddle's progress bar, evaluates on the
test split, saves a checkpoint, reloads it into a fresh model and checks that the
reloaded model predicts exactly the same. Exits non-zero when test accuracy < 97% or the
reloaded predictions differ. Runs unchanged with `import paddle` in place of
`import oar as paddle` (given the scikit-learn data).
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import oar as paddle
from oar.vision import transforms as T


class Digits(paddle.io.Dataset):
    """(image [1, 28, 28] float32, label [1] int64) pairs; `transform` acts on the HW image."""

    def __init__(self, images, labels, transform=None):
        super().__init__()
        self.images, self.labels, self.transform = images, labels, transform

    def __getitem__(self, i):
        x = self.images[i]
        if self.transform is not None:
            x = self.transform(x[0])[None]
        return x, self.labels[i]

    def __len__(self):
        return len(self.labels)


def load_digits_28x28(seed=0):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.images.astype(np.float32) / 16.0  # [N, 8, 8] in [0, 1]
    # One bilinear resize of all images at once: the batch rides along as channels.
    x = T.resize(x.transpose(1, 2, 0), (28, 28)).transpose(2, 0, 1)
    x = ((x - 0.5) / 0.5)[:, None].astype(np.float32)  # [N, 1, 28, 28] in [-1, 1]
    y = digits.target.astype(np.int64)[:, None]
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=0.2, random_state=seed, stratify=digits.target
    )
    # Random shifts of up to 2 pixels (pad with the background value, crop back to 28x28):
    # 1,437 training images are few, and without them LeNet overfits to ~97%.
    shift = T.RandomCrop(28, padding=2, fill=-1.0)
    return Digits(x_tr, y_tr, transform=shift), Digits(x_te, y_te)


def build_model(steps_total, lr):
    net = paddle.vision.models.LeNet(num_classes=10)
    model = paddle.Model(net)
    sched = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=lr, T_max=steps_total)
    opt = paddle.optimizer.Adam(learning_rate=sched, parameters=net.parameters())
    model.prepare(opt, paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-dir", default=None, help="checkpoint directory (default: a temp dir)")
    ap.add_argument("--min-accuracy", type=float, default=0.97)
    args = ap.parse_args()

    paddle.seed(0)
    train_ds, test_ds = load_digits_28x28()
    print(f"digits: {len(train_ds)} train / {len(test_ds)} test images, 1x28x28")
    steps = (len(train_ds) + args.batch_size - 1) // args.batch_size * args.epochs
    model = build_model(steps, args.lr)
    model.summary((1, 1, 28, 28))

    t0 = time.time()
    model.fit(
        train_ds,
        test_ds,
        batch_size=args.batch_size,
        epochs=args.epochs,
        eval_freq=5,
        log_freq=10,
        verbose=1,
        shuffle=True,
    )
    train_s = time.time() - t0
    result = model.evaluate(test_ds, batch_size=256, verbose=0)
    acc = float(result["acc"])
    print(
        f"test accuracy {acc:.4f} (loss {float(result['loss'][0]):.4f}), trained in {train_s:.1f}s"
    )

    save_dir = args.save_dir or tempfile.mkdtemp(prefix="oar_lenet_")
    path = os.path.join(save_dir, "lenet")
    model.save(path)
    preds = model.predict(test_ds, batch_size=256, stack_outputs=True, verbose=0)[0]

    reloaded = build_model(steps, args.lr)
    reloaded.load(path)
    preds2 = reloaded.predict(test_ds, batch_size=256, stack_outputs=True, verbose=0)[0]
    acc2 = float(reloaded.evaluate(test_ds, batch_size=256, verbose=0)["acc"])
    same = np.array_equal(preds, preds2)
    print(
        f"checkpoint {path}.pdparams: reloaded accuracy {acc2:.4f}, "
        f"predictions {'identical' if same else 'DIFFER'}"
    )

    # Deployment: the trained network as a saved program, served by the predictor.
    net = model.network
    net.eval()
    paddle.jit.save(net, path, input_spec=[paddle.static.InputSpec([None, 1, 28, 28], "float32", "image")])
    config = paddle.inference.Config(path + ".pdmodel", path + ".pdiparams")
    predictor = paddle.inference.create_predictor(config)
    images = np.stack([test_ds[i][0] for i in range(len(test_ds))]).astype("float32")
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(images.shape)
    handle.copy_from_cpu(images)
    predictor.run()
    served = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    served_same = np.allclose(served, preds, rtol=1e-4, atol=1e-5)
    print(f"saved program {path}.pdmodel: predictor outputs {'match' if served_same else 'DIFFER'} "
          f"the trained model on {len(images)} images")

    ok = True
    if not served_same:
        print("FAIL: the predictor does not reproduce the trained model", file=sys.stderr)
        ok = False
    if acc < args.min_accuracy:
        print(f"FAIL: test accuracy {acc:.4f} < {args.min_accuracy}", file=sys.stderr)
        ok = False
    if not same or acc2 != acc:
        print("FAIL: the reloaded model does not reproduce the trained one", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
