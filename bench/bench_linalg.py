"""Linear algebra, padding and resampling vs PyTorch: einsum, bmm, solve, inv, cholesky,
svd, qr, pad (constant/reflect), interpolate (bilinear/nearest, forward and backward).

    bash bench/run.sh linalg --threads 1

The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`).
"""
import numpy as np

import common

METRICS = [
    ("einsum_attn_ms", "ms", "low"),     # 'bhqd,bhkd->bhqk' [8,8,128,64] float32
    ("einsum_outer_sum_ms", "ms", "low"),  # 'bij,bjk->ik' [32,64,64] x [32,64,64] float32
    ("bmm_ms", "ms", "low"),             # [64,128,128] @ [64,128,128] float32
    ("solve_ms", "ms", "low"),           # [32,128,128] \ [32,128,16] float64
    ("inv_ms", "ms", "low"),             # [64,64,64] float64
    ("cholesky_ms", "ms", "low"),        # [64,64,64] float64 SPD
    ("svd_ms", "ms", "low"),             # [16,64,48] float64, reduced
    ("qr_ms", "ms", "low"),              # [16,128,64] float64, reduced
    ("pad_constant_ms", "ms", "low"),    # [8,32,64,64] float32, 2 on each side
    ("pad_reflect_ms", "ms", "low"),
    ("interp_bilinear_ms", "ms", "low"),  # [8,32,64,64] -> 128x128 float32
    ("interp_nearest_ms", "ms", "low"),
    ("interp_bilinear_bwd_ms", "ms", "low"),  # forward + backward of the sum
]

rng = np.random.default_rng(0)
Q = rng.standard_normal([8, 8, 128, 64], dtype=np.float32)
K = rng.standard_normal([8, 8, 128, 64], dtype=np.float32)
E1 = rng.standard_normal([32, 64, 64], dtype=np.float32)
E2 = rng.standard_normal([32, 64, 64], dtype=np.float32)
B1 = rng.standard_normal([64, 128, 128], dtype=np.float32)
B2 = rng.standard_normal([64, 128, 128], dtype=np.float32)
SA = rng.standard_normal([32, 128, 128]) + 10 * np.eye(128)
SB = rng.standard_normal([32, 128, 16])
IA = rng.standard_normal([64, 64, 64]) + 8 * np.eye(64)
SPD = IA @ np.swapaxes(IA, -1, -2)
SV = rng.standard_normal([16, 64, 48])
QR = rng.standard_normal([16, 128, 64])
IMG = rng.standard_normal([8, 32, 64, 64], dtype=np.float32)


def common_cases(to_tensor, einsum, bmm, solve, inv, cholesky, svd, qr, pad, interp, grad_sum):
    def ms(fn):
        return common.bench(fn) * 1e3

    def einsums():
        q, k, a, b = map(to_tensor, (Q, K, E1, E2))
        return {"einsum_attn_ms": ms(lambda: einsum("bhqd,bhkd->bhqk", q, k)),
                "einsum_outer_sum_ms": ms(lambda: einsum("bij,bjk->ik", a, b))}

    def products():
        x, y = to_tensor(B1), to_tensor(B2)
        return {"bmm_ms": ms(lambda: bmm(x, y))}

    def decompositions():
        a, b, i, s, v, r = map(to_tensor, (SA, SB, IA, SPD, SV, QR))
        return {"solve_ms": ms(lambda: solve(a, b)), "inv_ms": ms(lambda: inv(i)),
                "cholesky_ms": ms(lambda: cholesky(s)), "svd_ms": ms(lambda: svd(v)),
                "qr_ms": ms(lambda: qr(r))}

    def padding():
        x = to_tensor(IMG)
        return {"pad_constant_ms": ms(lambda: pad(x, [2, 2, 2, 2], "constant")),
                "pad_reflect_ms": ms(lambda: pad(x, [2, 2, 2, 2], "reflect"))}

    def resampling():
        x = to_tensor(IMG)
        xg = to_tensor(IMG, grad=True)
        return {"interp_bilinear_ms": ms(lambda: interp(x, "bilinear")),
                "interp_nearest_ms": ms(lambda: interp(x, "nearest")),
                "interp_bilinear_bwd_ms": ms(lambda: grad_sum(interp(xg, "bilinear"), xg))}

    return {"einsum": einsums, "products": products, "decompositions": decompositions,
            "padding": padding, "resampling": resampling}


def torch_cases(torch):
    F = torch.nn.functional

    def to_tensor(a, grad=False):
        return torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(grad)

    def grad_sum(y, x):
        y.sum().backward()

    return common_cases(
        to_tensor, torch.einsum, torch.bmm, torch.linalg.solve, torch.linalg.inv,
        torch.linalg.cholesky, lambda v: torch.linalg.svd(v, full_matrices=False),
        lambda r: torch.linalg.qr(r), lambda x, p, m: F.pad(x, p, mode=m),
        lambda x, m: F.interpolate(x, size=(128, 128), mode=m,
                                   **({"align_corners": False} if m != "nearest" else {})),
        grad_sum)


def oar_cases(paddle):
    F = paddle.nn.functional

    def to_tensor(a, grad=False):
        return paddle.to_tensor(a, stop_gradient=not grad)

    def grad_sum(y, x):
        y.sum().backward()

    L = paddle.linalg
    return common_cases(
        to_tensor, paddle.einsum, paddle.bmm, L.solve, L.inv, L.cholesky, L.svd, L.qr,
        lambda x, p, m: F.pad(x, p, mode=m),
        lambda x, m: F.interpolate(x, size=[128, 128], mode=m), grad_sum)


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
