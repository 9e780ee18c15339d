"""Issue 3's op harness covers its whole scope: every op listed in the issue (by Paddle name)
has at least one table entry (an OpCase in some tests/python/**/test_*.py table) whose forward
is checked against a NumPy reference on float64; differentiable ops also have an entry that
check_grad runs (finite differences), and ops that have bad inputs an entry with bad_inputs.
Random ops are covered by RandomCase entries (moments / frequencies under a seed).

Entries are credited by the op they test: OpCase.op when given, else OpCase.name without a
"[variant]" suffix, a "Tensor." prefix, or a trailing layout / index suffix (conv2d_0_NCHW).
A module's grad entries are those its tests hand to check_grad (GRAD_CASES when it defines
one, else the entries with grad=True); its bad-input entries are run here once more, so an
entry is only credited when it really raises what it says.
"""
import importlib
import pathlib
import re
import sys

import pytest

from op_test_utils import OpCase, RandomCase, check_bad_inputs

TESTS = pathlib.Path(__file__).resolve().parents[1]  # tests/python: tables live in every folder

# ---- issue 3's Scope, by Paddle name. "a|b" is one op under several names (aliases).
MATH = """
add subtract multiply divide floor_divide remainder|mod|floor_mod pow|elementwise_pow
maximum minimum fmax fmin exp expm1 log log2 log10 log1p sqrt rsqrt square abs sign neg
reciprocal floor ceil round trunc clip sin cos tan asin acos atan atan2 sinh cosh tanh asinh
acosh atanh erf erfinv lgamma digamma isnan isinf isfinite nan_to_num lerp logsumexp cumsum
cumprod diff kron outer inner dot addmm scale increment trace diagonal
""".split()
REDUCTIONS = """
sum mean prod max min amax amin all any std var median quantile norm|p_norm logcumsumexp
count_nonzero nansum nanmean mode kthvalue topk sort argsort unique bincount histogram
searchsorted
""".split()
MANIPULATION = """
reshape flatten squeeze unsqueeze transpose moveaxis concat stack split chunk unbind tile
expand expand_as broadcast_to broadcast_tensors flip roll rot90 gather gather_nd scatter
scatter_nd_add index_select index_add index_put take_along_axis put_along_axis masked_select
masked_fill where nonzero tril triu diag diag_embed repeat_interleave slice strided_slice pad
one_hot meshgrid unfold as_strided
""".split()
LINALG = """
matmul bmm mv einsum inv|inverse det slogdet solve cholesky qr svd eigh lstsq pinv
matrix_power linalg.norm|vector_norm|matrix_norm cross
""".split()
RANDOM = """
uniform normal standard_normal randint randperm bernoulli multinomial poisson
""".split()
NN = """
conv1d conv2d conv3d conv1d_transpose conv2d_transpose conv3d_transpose
max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d
adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
batch_norm layer_norm group_norm instance_norm rms_norm local_response_norm
dropout dropout2d alpha_dropout embedding linear bilinear
relu relu6 leaky_relu prelu elu selu celu gelu silu swish mish softplus softsign
hardswish hardsigmoid hardtanh tanhshrink glu softmax log_softmax gumbel_softmax
cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss binary_cross_entropy
binary_cross_entropy_with_logits kl_div margin_ranking_loss cosine_similarity
pairwise_distance normalize interpolate upsample grid_sample affine_grid pixel_shuffle
scaled_dot_product_attention
""".split()
SCOPE = MATH + REDUCTIONS + MANIPULATION + LINALG + NN

# Ops with no gradient to check (integer / boolean / index results, in-place counters).
NO_GRAD = set("""
floor_divide isnan isinf isfinite increment all any count_nonzero argsort unique bincount
histogram searchsorted nonzero one_hot
""".split())
# Ops without a bad input to reject beyond what the forward check covers: none. Every op,
# elementwise ones included, rejects at least a non-Tensor argument with a TypeError naming it.
NO_BAD = set()

# Case names (after normalization) that test an op listed under another name.
ALIASES = {
    "batch_norm_eval": "batch_norm", "batch_norm_train": "batch_norm",
    "batch_norm_train_nhwc": "batch_norm", "group_norm_nhwc": "group_norm",
    "layer_norm_2d": "layer_norm", "layer_norm_begin2": "layer_norm",
    "layer_norm_noaffine": "layer_norm", "layer_norm_wide": "layer_norm",
    "conv2d_bad": "conv2d", "gelu_tanh": "gelu", "upsample": "upsample",
}


def op_key(case):
    """The op an entry tests (see the module docstring)."""
    key = case.op or case.name
    key = re.sub(r"\[.*\]$", "", key)
    key = key[len("Tensor."):] if key.startswith("Tensor.") else key
    if key in ALIASES:
        return ALIASES[key]
    key = re.sub(r"_(NCHW|NHWC|NCDHW|NDHWC|NCL|NLC)$", "", key)
    key = re.sub(r"_\(.*\)$", "", key)
    key = re.sub(r"_(axis)?-?[0-9][0-9._]*$", "", key)
    return ALIASES.get(key, key)


def _tables(module):
    """Module-level OpCase / RandomCase entries: lists, tuples and single objects."""
    out = {}
    for name, value in vars(module).items():
        if isinstance(value, (OpCase, RandomCase)):
            out[name] = [value]
        elif isinstance(value, (list, tuple)) and value and \
                all(isinstance(c, (OpCase, RandomCase)) for c in value):
            out[name] = list(value)
    return out


def _collect():
    entries = []  # (module, table, case, grad_checked)
    for path in sorted(TESTS.rglob("test_*.py"), key=lambda p: p.name):
        if path.stem == "test_harness_coverage":
            continue
        if str(path.parent) not in sys.path:  # as pytest's default (prepend) import mode does
            sys.path.insert(0, str(path.parent))
        module = importlib.import_module(path.stem)
        tables = _tables(module)
        grad_ids = {id(c) for c in tables.get("GRAD_CASES", [])}
        for table, cases in tables.items():
            for c in cases:
                if isinstance(c, RandomCase):
                    entries.append((path.stem, table, c, False))
                    continue
                ran_grad = (id(c) in grad_ids) if grad_ids else \
                    (c.grad and (c.grad_shapes is None or len(c.grad_shapes) > 0))
                entries.append((path.stem, table, c, ran_grad))
    return entries


ENTRIES = _collect()


def _names(spec):
    return spec.split("|")


def _coverage():
    keys = {}
    for mod, table, c, ran_grad in ENTRIES:
        keys.setdefault(op_key(c), []).append((mod, table, c, ran_grad))
    report = {}
    for spec in SCOPE + RANDOM:
        found = [e for n in _names(spec) for e in keys.get(n, [])]
        if spec in RANDOM:
            rnd = [e for e in found if isinstance(e[2], RandomCase)]
            report[spec] = dict(forward=bool(rnd), grad=True,
                                bad=any(e[2].bad_inputs for e in rnd))
            continue
        ops = [e for e in found if isinstance(e[2], OpCase)]
        fwd = any(c.fn_numpy is not None and "float64" in c.dtypes for _, _, c, _ in ops)
        if spec in RANDOM_NN:
            fwd = any(isinstance(e[2], RandomCase) for e in found)
        if spec in NONFLOAT_FORWARD:  # integer / bool only ops: a NumPy reference on any dtype
            fwd = any(c.fn_numpy is not None and c.dtypes for _, _, c, _ in ops)
        report[spec] = dict(
            forward=fwd,
            grad=spec in NO_GRAD or any(g for *_, g in ops),
            bad=spec in NO_BAD or any(c.bad_inputs for _, _, c, _ in found))
    return report


# Ops whose inputs are integers or booleans only: their reference runs on those dtypes.
NONFLOAT_FORWARD = {"bincount", "one_hot"}
# Random nn functionals: the forward is checked by frequencies (a RandomCase), the gradient
# by an OpCase under a fixed seed.
RANDOM_NN = {"dropout", "dropout2d", "alpha_dropout", "gumbel_softmax"}


def test_scope_list_is_complete():
    # Guards the lists against accidental truncation (issue 3 lists 229 ops once aliases are merged).
    assert len(SCOPE) + len(RANDOM) >= 225
    assert len(set(SCOPE)) == len(SCOPE)


def test_every_scope_op_has_harness_entries():
    report = _coverage()
    missing = {what: sorted(op for op, r in report.items() if not r[what])
               for what in ("forward", "grad", "bad")}
    lines = [f"{what} ({len(ops)}): {' '.join(ops)}" for what, ops in missing.items() if ops]
    assert not lines, "ops of issue 3 without harness entries:\n" + "\n".join(lines)


BAD_ENTRIES = [(f"{m}.{t}:{c.name}", c) for m, t, c, _ in ENTRIES if c.bad_inputs]


@pytest.mark.parametrize("case", [c for _, c in BAD_ENTRIES], ids=[i for i, _ in BAD_ENTRIES])
def test_credited_bad_inputs_raise(case):
    # Cheap (no kernels run): makes sure every bad-input entry credited above is checked,
    # also in modules whose own tests run only some of their tables' bad inputs.
    check_bad_inputs(case)


def summary():
    """(covered, listed, with grad, with bad) for the closing note."""
    report = _coverage()
    ok = [op for op, r in report.items() if all(r.values())]
    return (len(ok), len(report),
            sum(1 for op, r in report.items() if op not in NO_GRAD and r["grad"]
                and op not in RANDOM),
            sum(1 for r in report.values() if r["bad"]))


if __name__ == "__main__":
    report = _coverage()
    for what in ("forward", "grad", "bad"):
        ops = sorted(op for op, r in report.items() if not r[what])
        print(f"missing {what} ({len(ops)}): {' '.join(ops)}")
    print("covered / listed / grad / bad:", summary())
