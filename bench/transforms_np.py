"""vision.transforms on NumPy HWC images (Paddle's cv2 backend) against the same transform on
the same image as a PIL image (Paddle's default backend, Pillow's C code), in one process.

    python3 bench/transforms_np.py [--size 224] [--repeat 30] [--threads 1]

Prints the CPU model and, per transform, the best time of each kind and numpy/PIL. There is no
torch column: torchvision's PyPI wheels trail torch 2.15, which the other suites pin.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peak  # noqa: E402


def best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=224, help="square image side (the resize input is 1.5x it)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import oar
    from PIL import Image
    from oar.vision import transforms as T

    oar.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8)
    big = rng.integers(0, 256, (args.size * 3 // 2, args.size * 2, 3), dtype=np.uint8)
    cases = [
        ("resize (shorter side)", T.Resize(args.size), big),
        ("brightness", T.BrightnessTransform(0.4), img),
        ("contrast", T.ContrastTransform(0.4), img),
        ("saturation", T.SaturationTransform(0.4), img),
        ("hue", T.HueTransform(0.4), img),
        ("ColorJitter", T.ColorJitter(0.4, 0.4, 0.4, 0.1), img),
        ("rotate 13, nearest", lambda x: T.functional.rotate(x, 13), img),
        ("rotate 13, bilinear", lambda x: T.functional.rotate(x, 13, interpolation="bilinear"), img),
        ("affine", lambda x: T.functional.affine(x, 10, (3, 4), 1.1, 5), img),
        ("hflip", T.RandomHorizontalFlip(1.0), img),
        ("grayscale", T.Grayscale(3), img),
        ("ToTensor", T.ToTensor(), img),
    ]
    m = peak.cpu_info()
    print(f"{m['cpu_model']} ({', '.join(m['cpu_isa'])}), {args.threads} thread(s); "
          f"{args.size}x{args.size}x3 uint8, best of {args.repeat}")
    print(f"{'transform':24s} {'numpy ms':>9s} {'PIL ms':>8s} {'numpy/PIL':>9s}")
    for name, tr, x in cases:
        oar.seed(0)
        a = best(lambda tr=tr, x=x: tr(x), args.repeat) * 1e3
        p = Image.fromarray(x)
        oar.seed(0)
        b = best(lambda tr=tr, p=p: tr(p), args.repeat) * 1e3
        print(f"{name:24s} {a:9.3f} {b:8.3f} {a / b:9.2f}")


if __name__ == "__main__":
    main()
