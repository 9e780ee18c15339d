"""Issue 3's scope under Paddle 3.x's names: every listed op exists in each namespace Paddle
has it in, and the Python-visible signatures start with Paddle's argument names in
Paddle's order.

Namespaces: "oar" (oar.X), "Tensor" (the method Tensor.X), "F" (oar.nn.functional.X),
"linalg" (oar.linalg.X). Layers are checked separately as oar.nn.<Class> subclasses of
oar.nn.Layer. The tables follow Paddle 3.x's paddle/__init__.py, paddle/linalg.py,
paddle/nn/functional/__init__.py and the tensor_method_func list; where issue 3 asks for
oar.linalg explicitly (matmul, bmm, mv, einsum, cross) the linalg namespace is required too.
"""
import inspect
import os
import re

import numpy as np
import pytest

import oar
import oar.nn.functional as F

T, M, FN, LA = "oar", "Tensor", "F", "linalg"
NAMESPACES = {T: oar, M: oar.Tensor, FN: F, LA: oar.linalg, "fft": oar.fft, "autograd": oar.autograd,
              "device": oar.device, "distributed": oar.distributed}


def _api(spec):
    """'a b: oar Tensor; c: F' -> {'a': ('oar', 'Tensor'), 'b': ..., 'c': ('F',)}."""
    table = {}
    for group in spec.strip().split(";"):
        names, spaces = group.split(":")
        for n in names.split():
            table[n] = tuple(spaces.split())
    return table


MATH = _api("""
    add subtract multiply divide floor_divide remainder mod floor_mod pow maximum minimum
    fmax fmin exp expm1 log log2 log10 log1p sqrt rsqrt square abs sign neg reciprocal
    floor ceil round trunc clip sin cos tan asin acos atan atan2 sinh cosh asinh acosh atanh
    erf erfinv lgamma digamma isnan isinf isfinite nan_to_num lerp logsumexp cumsum cumprod
    diff kron outer inner dot addmm scale increment trace diagonal: oar Tensor;
    tanh sigmoid: oar Tensor F
""")

REDUCTIONS = _api("""
    sum mean prod max min amax amin all any std var median quantile logcumsumexp
    count_nonzero nansum nanmean mode kthvalue topk sort argsort argmax argmin unique
    bincount histogram: oar Tensor;
    norm: oar Tensor linalg;
    searchsorted: oar
""")

MANIPULATION = _api("""
    reshape flatten squeeze unsqueeze transpose moveaxis concat stack split chunk unbind
    tile expand expand_as broadcast_to broadcast_tensors flip roll rot90 gather gather_nd
    scatter scatter_nd_add index_select index_add index_put take_along_axis put_along_axis
    masked_select masked_fill where nonzero tril triu diag repeat_interleave slice
    strided_slice as_strided: oar Tensor;
    unfold diag_embed: oar Tensor F;
    meshgrid: oar;
    pad one_hot: F
""")

LINALG = _api("""
    matmul bmm mv cholesky cross: oar Tensor linalg;
    einsum: oar linalg;
    inverse: oar Tensor;
    qr solve lstsq pinv matrix_power: Tensor linalg;
    inv det slogdet svd eigh: linalg
""")

RANDOM = _api("""
    uniform normal standard_normal randint randperm bernoulli poisson standard_gamma binomial
    seed get_rng_state set_rng_state: oar;
    multinomial: oar Tensor
""")

FUNCTIONAL = _api("""
    conv1d conv2d conv3d conv1d_transpose conv2d_transpose conv3d_transpose
    max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
    adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
    batch_norm layer_norm group_norm instance_norm rms_norm local_response_norm
    dropout dropout2d dropout3d alpha_dropout embedding linear bilinear
    relu relu6 leaky_relu prelu elu selu celu gelu silu swish mish softplus softsign
    hardswish hardsigmoid hardtanh tanhshrink glu softmax log_softmax gumbel_softmax
    cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss binary_cross_entropy
    binary_cross_entropy_with_logits kl_div margin_ranking_loss cosine_similarity
    pairwise_distance normalize interpolate upsample grid_sample affine_grid pixel_shuffle
    scaled_dot_product_attention: F
""")

# Issue 18: complex numbers and paddle.fft.
COMPLEX = _api("""
    real imag conj angle as_complex as_real is_complex: oar Tensor;
    complex: oar
""")

FFT = _api("""
    fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 hfft2 ihfft2
    fftn ifftn rfftn irfftn hfftn ihfftn fftfreq rfftfreq fftshift ifftshift: fft
""")

API = {**MATH, **REDUCTIONS, **MANIPULATION, **LINALG, **RANDOM, **FUNCTIONAL, **COMPLEX, **FFT}
# Issue 18 (compat_core): random fills, CUDA rng state, dlpack, ormqr, random activations.
COMPAT_CORE = _api("""
    cauchy_ geometric_: oar Tensor;
    get_cuda_rng_state set_cuda_rng_state disable_signal_handler to_dlpack from_dlpack: oar;
    ormqr: Tensor linalg;
    rrelu feature_alpha_dropout: F;
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_left_shift
    bitwise_right_shift bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_: oar Tensor;
    gammainc gammaincc gammainc_ gammaincc_ histogramdd: oar Tensor;
    batch: oar
""")
API.update(COMPAT_CORE)
# Issue 18 (compat_seq): sequence losses and decoding, lazy init, mmap storage.
API.update(_api("rnnt_loss class_center_sample: F; LazyGuard MmapStorage: oar"))
# Issue 18 (compat_nn): fractional pooling, adaptive softmax.
API.update(_api("fractional_max_pool2d fractional_max_pool3d adaptive_log_softmax_with_loss: F"))

# Layer classes Paddle has for the functionals above (paddle.nn.<Class>).
LAYERS = """
    Conv1D Conv2D Conv3D Conv1DTranspose Conv2DTranspose Conv3DTranspose
    MaxPool1D MaxPool2D MaxPool3D AvgPool1D AvgPool2D AvgPool3D
    AdaptiveAvgPool1D AdaptiveAvgPool2D AdaptiveAvgPool3D
    AdaptiveMaxPool1D AdaptiveMaxPool2D AdaptiveMaxPool3D
    BatchNorm BatchNorm1D BatchNorm2D BatchNorm3D LayerNorm GroupNorm
    InstanceNorm1D InstanceNorm2D InstanceNorm3D LocalResponseNorm
    Dropout Dropout2D Dropout3D AlphaDropout Embedding Linear Bilinear Identity Flatten
    ReLU ReLU6 LeakyReLU PReLU ELU SELU CELU GELU Silu Swish Mish Softplus Softsign
    Hardswish Hardsigmoid Hardtanh Tanhshrink GLU Softmax LogSoftmax Tanh Sigmoid
    CrossEntropyLoss NLLLoss MSELoss L1Loss SmoothL1Loss BCELoss BCEWithLogitsLoss
    KLDivLoss MarginRankingLoss CosineSimilarity PairwiseDistance
    Upsample UpsamplingNearest2D UpsamplingBilinear2D PixelShuffle Pad1D Pad2D Pad3D Unfold
    MultiHeadAttention TransformerEncoderLayer TransformerDecoderLayer
""".split()
LAYERS += ["RReLU", "FeatureAlphaDropout"]  # issue 18 (compat_core)
LAYERS += ["RNNTLoss"]  # issue 18 (compat_seq)
LAYERS += ["FractionalMaxPool2D", "FractionalMaxPool3D", "AdaptiveLogSoftmaxWithLoss",
           "SpectralNorm", "SyncBatchNorm"]  # issue 18 (compat_nn)


def test_table_is_not_empty():
    # Guards the table parser: every scope section contributed names.
    for section in (MATH, REDUCTIONS, MANIPULATION, LINALG, RANDOM, FUNCTIONAL, COMPLEX, FFT):
        assert len(section) >= 5
    assert len(API) > 250 - 60 and len(LAYERS) > 60


def test_every_scope_name_exists():
    missing = [f"{space}.{name}" for name, spaces in sorted(API.items()) for space in spaces
               if not callable(getattr(NAMESPACES[space], name, None))]
    assert not missing, f"{len(missing)} Paddle names missing: {', '.join(missing)}"


def test_every_layer_exists():
    missing = [n for n in LAYERS
               if not (isinstance(getattr(oar.nn, n, None), type)
                       and issubclass(getattr(oar.nn, n), oar.nn.Layer))]
    assert not missing, f"{len(missing)} Paddle layers missing from oar.nn: {', '.join(missing)}"


# ---- leading argument names, in Paddle's documented order (name=None and the
# trailing keyword-only details are not compared).
SIGNATURES = {
    # fft (Paddle's python/paddle/fft.py)
    **{f"fft.{n}": "x n axis norm" for n in "fft ifft rfft irfft hfft ihfft".split()},
    **{f"fft.{n}": "x s axes norm" for n in ("fft2 ifft2 rfft2 irfft2 hfft2 ihfft2 "
                                             "fftn ifftn rfftn irfftn hfftn ihfftn").split()},
    "fft.fftfreq": "n d dtype", "fft.rfftfreq": "n d dtype",
    "fft.fftshift": "x axes", "fft.ifftshift": "x axes",
    "oar.complex": "real imag", "oar.as_complex": "x", "oar.as_real": "x", "oar.angle": "x",
    # nn.functional
    "F.conv1d": "x weight bias stride padding dilation groups data_format",
    "F.conv2d": "x weight bias stride padding dilation groups data_format",
    "F.conv3d": "x weight bias stride padding dilation groups data_format",
    "F.conv1d_transpose": "x weight bias stride padding output_padding groups dilation "
                          "output_size data_format",
    "F.conv2d_transpose": "x weight bias stride padding output_padding dilation groups "
                          "output_size data_format",
    "F.conv3d_transpose": "x weight bias stride padding output_padding groups dilation "
                          "output_size data_format",
    "F.max_pool1d": "x kernel_size stride padding return_mask ceil_mode",
    "F.max_pool2d": "x kernel_size stride padding return_mask ceil_mode data_format",
    "F.max_pool3d": "x kernel_size stride padding return_mask ceil_mode data_format",
    "F.avg_pool1d": "x kernel_size stride padding exclusive ceil_mode",
    "F.avg_pool2d": "x kernel_size stride padding ceil_mode exclusive divisor_override "
                    "data_format",
    "F.avg_pool3d": "x kernel_size stride padding ceil_mode exclusive divisor_override "
                    "data_format",
    "F.adaptive_avg_pool1d": "x output_size",
    "F.adaptive_avg_pool2d": "x output_size data_format",
    "F.adaptive_avg_pool3d": "x output_size data_format",
    "F.adaptive_max_pool1d": "x output_size return_mask",
    "F.adaptive_max_pool2d": "x output_size return_mask",
    "F.adaptive_max_pool3d": "x output_size return_mask",
    "F.batch_norm": "x running_mean running_var weight bias training momentum epsilon "
                    "data_format use_global_stats",
    "F.layer_norm": "x normalized_shape weight bias epsilon",
    "F.group_norm": "x num_groups epsilon weight bias data_format",
    "F.instance_norm": "x running_mean running_var weight bias use_input_stats momentum eps "
                       "data_format",
    "F.rms_norm": "x|input normalized_shape weight",
    "F.local_response_norm": "x size alpha beta k data_format",
    "F.dropout": "x p axis training mode",
    "F.dropout2d": "x p training data_format",
    "F.dropout3d": "x p training data_format",
    "F.alpha_dropout": "x p training",
    "F.embedding": "x weight padding_idx",
    "F.linear": "x weight bias",
    "F.bilinear": "x1 x2 weight bias",
    "F.relu": "x", "F.relu6": "x", "F.leaky_relu": "x negative_slope",
    "F.prelu": "x weight data_format", "F.elu": "x alpha", "F.selu": "x scale alpha",
    "F.celu": "x alpha", "F.gelu": "x approximate", "F.silu": "x", "F.swish": "x",
    "F.mish": "x", "F.softplus": "x beta threshold", "F.softsign": "x",
    "F.hardswish": "x", "F.hardsigmoid": "x slope offset", "F.hardtanh": "x min max",
    "F.tanhshrink": "x", "F.glu": "x axis", "F.softmax": "x axis dtype",
    "F.log_softmax": "x axis dtype", "F.gumbel_softmax": "x temperature hard axis",
    "F.cross_entropy": "input label weight ignore_index reduction soft_label axis "
                       "use_softmax label_smoothing",
    "F.nll_loss": "input label weight ignore_index reduction",
    "F.mse_loss": "input label reduction", "F.l1_loss": "input label reduction",
    "F.smooth_l1_loss": "input label reduction delta",
    "F.binary_cross_entropy": "input label weight reduction",
    "F.binary_cross_entropy_with_logits": "logit label weight reduction pos_weight",
    "F.kl_div": "input label reduction log_target",
    "F.margin_ranking_loss": "input other label margin reduction",
    "F.cosine_similarity": "x1 x2 axis eps",
    "F.pairwise_distance": "x y p epsilon keepdim",
    "F.normalize": "x p axis epsilon",
    "F.interpolate": "x size scale_factor mode align_corners align_mode data_format",
    "F.upsample": "x size scale_factor mode align_corners align_mode data_format",
    "F.grid_sample": "x grid mode padding_mode align_corners",
    "F.affine_grid": "theta out_shape align_corners",
    "F.pixel_shuffle": "x upscale_factor data_format",
    "F.scaled_dot_product_attention": "query key value attn_mask dropout_p is_causal training",
    "F.pad": "x pad mode value data_format",
    "F.one_hot": "x num_classes",
    "F.unfold": "x kernel_sizes strides paddings dilations",
    "F.diag_embed": "input offset dim1 dim2",
    # linalg
    "linalg.inv": "x", "linalg.det": "x", "linalg.slogdet": "x", "linalg.solve": "x y",
    "linalg.cholesky": "x upper", "linalg.qr": "x mode", "linalg.svd": "x full_matrices",
    "linalg.eigh": "x UPLO", "linalg.lstsq": "x y rcond driver",
    "linalg.pinv": "x rcond hermitian", "linalg.matrix_power": "x n",
    "linalg.norm": "x p axis keepdim", "linalg.cross": "x y axis",
    "linalg.matmul": "x y transpose_x transpose_y", "linalg.bmm": "x y",
    "linalg.mv": "x vec", "linalg.einsum": "equation",
    # oar.* (a sample of each scope section, Python-defined or bound)
    "oar.pow": "x y", "oar.clip": "x min max", "oar.atan2": "x y",
    "oar.nan_to_num": "x nan posinf neginf", "oar.lerp": "x y weight",
    "oar.logsumexp": "x axis keepdim", "oar.cumsum": "x axis dtype",
    "oar.cumprod": "x dim dtype", "oar.diff": "x n axis prepend append",
    "oar.kron": "x y", "oar.outer": "x y", "oar.inner": "x y", "oar.dot": "x y",
    "oar.addmm": "input x y beta alpha", "oar.scale": "x scale bias bias_after_scale",
    "oar.increment": "x value", "oar.trace": "x offset axis1 axis2",
    "oar.diagonal": "x offset axis1 axis2",
    "oar.sum": "x axis dtype keepdim", "oar.mean": "x axis keepdim",
    "oar.prod": "x axis keepdim dtype", "oar.amax": "x axis keepdim",
    "oar.std": "x axis unbiased keepdim", "oar.var": "x axis unbiased keepdim",
    "oar.median": "x axis keepdim", "oar.quantile": "x q axis keepdim",
    "oar.logcumsumexp": "x axis dtype", "oar.count_nonzero": "x axis keepdim",
    "oar.nansum": "x axis dtype keepdim", "oar.nanmean": "x axis keepdim",
    "oar.mode": "x axis keepdim", "oar.kthvalue": "x k axis keepdim",
    "oar.topk": "x k axis largest sorted", "oar.sort": "x axis descending",
    "oar.argsort": "x axis descending",
    "oar.unique": "x return_index return_inverse return_counts axis dtype",
    "oar.bincount": "x weights minlength",
    "oar.histogram": "input bins min max", "oar.searchsorted": "sorted_sequence values "
                                                                "out_int32 right",
    "oar.flatten": "x start_axis stop_axis", "oar.moveaxis": "x source destination",
    "oar.split": "x num_or_sections axis", "oar.chunk": "x chunks axis",
    "oar.unbind": "input axis", "oar.roll": "x shifts axis", "oar.rot90": "x k axes",
    "oar.gather": "x index axis", "oar.scatter": "x index updates overwrite",
    "oar.index_select": "x index axis", "oar.index_add": "x index axis value",
    "oar.index_put": "x indices value accumulate",
    "oar.take_along_axis": "arr indices axis", "oar.put_along_axis": "arr indices values axis",
    "oar.masked_fill": "x mask value", "oar.where": "condition x y",
    "oar.nonzero": "x as_tuple", "oar.tril": "x diagonal", "oar.triu": "x diagonal",
    "oar.diag": "x offset padding_value", "oar.diag_embed": "input offset dim1 dim2",
    "oar.repeat_interleave": "x repeats axis", "oar.slice": "input axes starts ends",
    "oar.strided_slice": "x axes starts ends strides", "oar.unfold": "x axis size step",
    "oar.as_strided": "x shape stride offset",
    "oar.uniform": "shape dtype min max seed", "oar.normal": "mean std shape",
    "oar.standard_normal": "shape dtype", "oar.randint": "low high shape dtype",
    "oar.randperm": "n dtype", "oar.bernoulli": "x", "oar.poisson": "x",
    "oar.multinomial": "x num_samples replacement",
    # Issue 18: what Paddle's example prelude and ordinary training scripts call.
    "oar.grad": "outputs inputs grad_outputs retain_graph create_graph only_inputs allow_unused",
    "autograd.backward": "tensors grad_tensors retain_graph",
    "Tensor.backward": "self grad_tensor retain_graph",
    "oar.set_device": "device", "device.set_device": "device",
    "distributed.get_rank": "group", "distributed.get_world_size": "group",
    # Issue 14, auto-parallel in dynamic mode.
    "distributed.reshard": "dist_tensor mesh placements", "distributed.unshard_dtensor": "dist_tensor",
    "distributed.shard_layer": "layer process_mesh shard_fn input_fn output_fn",
    "distributed.shard_optimizer": "optimizer shard_fn gradient_accumulation_steps",
    "distributed.parallelize": "model optimizer mesh config",
    # Issue 18 (compat_core)
    "F.rrelu": "x lower upper training", "F.feature_alpha_dropout": "x p training",
    "F.fractional_max_pool2d": "x output_size kernel_size random_u return_mask",
    "F.fractional_max_pool3d": "x output_size kernel_size random_u return_mask",
    "F.adaptive_log_softmax_with_loss": "input label head_weight tail_weights cutoffs head_bias",
    "linalg.ormqr": "x tau y left transpose", "oar.cauchy_": "x loc scale",
    "oar.geometric_": "x probs",
    # Issue 18 (compat_seq)
    "F.rnnt_loss": "input label input_lengths label_lengths blank fastemit_lambda reduction",
    "F.class_center_sample": "label num_classes num_samples group",
    # Issue 18 (compat_kern)
    "linalg.eig": "x", "linalg.eigvals": "x", "linalg.eigvalsh": "x UPLO",
    "linalg.svd_lowrank": "x q niter M", "linalg.pca_lowrank": "x q center niter",
    "oar.eigvalsh": "x UPLO", "oar.nextafter": "x y", "oar.bitwise_and": "x y out",
    "oar.bitwise_not": "x out", "oar.bitwise_left_shift": "x y is_arithmetic out",
}

_PYBIND_ARG = re.compile(r"(?:\(|,\s)\*{0,2}(\w+)\s*:")


def _param_names(fn):
    """Parameter names of a Python function, or of a pybind11 function (from the signature
    line pybind11 writes at the top of its docstring); None when neither is available."""
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        pass
    doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
    head = next((line for line in doc if "(" in line), "")
    if "(" not in head:
        return None
    head = head[head.index("("):]
    return _PYBIND_ARG.findall(head)


def _resolve(qualified):
    space, name = qualified.split(".", 1)
    return getattr(NAMESPACES[space], name, None)


def test_signature_table_covers_the_functionals_and_linalg():
    f_names = {n for n, s in API.items() if FN in s}
    la_names = {n for n, s in API.items() if LA in s}
    wanted = {f"F.{n}" for n in f_names} | {f"linalg.{n}" for n in la_names}
    untested = sorted(wanted - set(SIGNATURES) - {"F.tanh", "F.sigmoid"})
    assert not untested, f"no signature entry for {untested}"


@pytest.mark.parametrize("qualified", sorted(SIGNATURES))
def test_leading_argument_names(qualified):
    fn = _resolve(qualified)
    assert fn is not None, f"{qualified} is missing"
    got = _param_names(fn)
    assert got is not None, f"{qualified}: cannot read its signature"
    want = SIGNATURES[qualified].split()
    head = got[:len(want)]
    ok = len(head) == len(want) and all(g in w.split("|") for g, w in zip(head, want))
    assert ok, (f"{qualified}: Paddle's leading arguments are ({', '.join(want)}), "
                f"got ({', '.join(got)})")


# ---- layer constructors: leading argument names of a sample, in Paddle's order.
LAYER_SIGNATURES = {
    "Conv2D": "in_channels out_channels kernel_size stride padding dilation groups "
              "padding_mode weight_attr bias_attr data_format",
    "Conv1DTranspose": "in_channels out_channels kernel_size stride padding output_padding "
                       "groups dilation",
    "Conv2DTranspose": "in_channels out_channels kernel_size stride padding output_padding "
                       "groups dilation",
    "MaxPool2D": "kernel_size stride padding return_mask ceil_mode data_format",
    "AvgPool2D": "kernel_size stride padding ceil_mode exclusive divisor_override data_format",
    "AdaptiveAvgPool2D": "output_size data_format",
    "BatchNorm2D": "num_features momentum epsilon weight_attr bias_attr data_format",
    "LayerNorm": "normalized_shape epsilon weight_attr bias_attr",
    "GroupNorm": "num_groups num_channels epsilon weight_attr bias_attr data_format",
    "InstanceNorm2D": "num_features epsilon momentum weight_attr bias_attr data_format",
    "LocalResponseNorm": "size alpha beta k data_format",
    "Dropout": "p inplace axis mode",  # Paddle 3.3.1 put inplace second
    "Embedding": "num_embeddings embedding_dim padding_idx",
    "Linear": "in_features out_features weight_attr bias_attr",
    "Bilinear": "in1_features in2_features out_features weight_attr bias_attr",
    "LeakyReLU": "negative_slope", "PReLU": "num_parameters init weight_attr data_format",
    "ELU": "alpha", "GELU": "approximate", "Softplus": "beta threshold",
    "Hardtanh": "min max", "GLU": "axis", "Softmax": "axis",
    "CrossEntropyLoss": "weight ignore_index reduction soft_label axis use_softmax "
                        "label_smoothing",
    "NLLLoss": "weight ignore_index reduction",
    "SmoothL1Loss": "reduction delta", "KLDivLoss": "reduction log_target",
    "BCEWithLogitsLoss": "weight reduction pos_weight",
    "MarginRankingLoss": "margin reduction",
    "CosineSimilarity": "axis eps", "PairwiseDistance": "p epsilon keepdim",
    "Upsample": "size scale_factor mode align_corners align_mode data_format",
    "PixelShuffle": "upscale_factor data_format",
    "Pad2D": "padding mode value data_format",
    "Unfold": "kernel_sizes dilations paddings strides",
    "MultiHeadAttention": "embed_dim num_heads dropout kdim vdim need_weights",
    "RReLU": "lower upper", "FeatureAlphaDropout": "p",
    "FractionalMaxPool2D": "output_size kernel_size random_u return_mask",
    "AdaptiveLogSoftmaxWithLoss": "in_features n_classes cutoffs weight_attr bias_attr div_value "
                                  "head_bias",
    "SpectralNorm": "weight_shape dim power_iters eps dtype",
    "SyncBatchNorm": "num_features momentum epsilon weight_attr bias_attr data_format",
}


@pytest.mark.parametrize("layer", sorted(LAYER_SIGNATURES))
def test_layer_leading_argument_names(layer):
    cls = getattr(oar.nn, layer, None)
    assert cls is not None, f"oar.nn.{layer} is missing"
    got = [p for p in _param_names(cls.__init__) if p != "self"]
    want = LAYER_SIGNATURES[layer].split()
    assert got[:len(want)] == want, (f"oar.nn.{layer}: Paddle's leading arguments are "
                                     f"({', '.join(want)}), got ({', '.join(got)})")


# ---- oar.X and Tensor.X are the same op: a method bound to the wrong function (or a
# list-taking function bound as a method) would show up here.
UNARY = ("exp expm1 log log2 log10 log1p sqrt rsqrt square abs sign neg reciprocal floor ceil "
         "round trunc sin cos tan asin acos atan sinh cosh tanh asinh atanh erf erfinv lgamma "
         "digamma isnan isinf isfinite sigmoid nan_to_num cumsum cumprod logcumsumexp diff sum "
         "mean prod max min amax amin std var median nansum nanmean count_nonzero all any "
         "logsumexp norm argmax argmin sort argsort flatten tril triu diag_embed trace "
         "diagonal").split()
BINARY = ("add subtract multiply divide floor_divide remainder mod floor_mod pow maximum minimum "
          "fmax fmin atan2 kron outer inner dot expand_as").split()


def _values(t):
    out = t if isinstance(t, (list, tuple)) else [t]
    return [o.astype("float64").numpy() for o in out]


@pytest.mark.parametrize("name", UNARY)
def test_method_matches_function_unary(name):
    x = oar.to_tensor([[0.15, 0.35, 0.55], [0.25, 0.45, 0.85]], dtype="float64")
    a, b = getattr(oar, name)(x), getattr(x, name)()
    for u, v in zip(_values(a), _values(b)):
        assert u.shape == v.shape and np.array_equal(u, v, equal_nan=True), \
            f"oar.{name}(x) != x.{name}()"
    acosh = oar.to_tensor([1.5, 2.5], dtype="float64")
    assert np.array_equal(oar.acosh(acosh).numpy(), acosh.acosh().numpy())


@pytest.mark.parametrize("name", BINARY)
def test_method_matches_function_binary(name):
    x = oar.to_tensor([1.5, 2.5, 3.5], dtype="float64")
    y = oar.to_tensor([0.5, 2.0, -1.5], dtype="float64")
    a, b = getattr(oar, name)(x, y), getattr(x, name)(y)
    for u, v in zip(_values(a), _values(b)):
        assert u.shape == v.shape and np.array_equal(u, v), f"oar.{name}(x, y) != x.{name}(y)"


# ---- the public surface is Paddle's (issue 16): a public name in oar.*, oar.Tensor.*,
# oar.nn.functional.* or oar.linalg.* is one of Paddle 3.3.1's (api_names/paddle_3.3.1.txt,
# written by api_names/dump_paddle_names.py) or is listed, with its reason, in
# api_names/oar_only.txt. Internal ops stay reachable as oar._C.ops.<name>.
_NAMES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_names")
_SURFACE = {"oar": oar, "Tensor": oar.Tensor, "F": F, "linalg": oar.linalg}


def _name_lines(fname):
    with open(os.path.join(_NAMES_DIR, fname)) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]


def _oar_only():
    entries = {}
    for ln in _name_lines("oar_only.txt"):
        name, _, reason = ln.partition(" ")
        entries[name] = reason.strip()
    return entries


def test_no_public_name_outside_paddle():
    paddle = set(_name_lines("paddle_3.3.1.txt"))
    allowed = _oar_only()
    extra = sorted(f"{s}.{n}" for s, ns in _SURFACE.items() for n in dir(ns)
                   if not n.startswith("_") and f"{s}.{n}" not in paddle and f"{s}.{n}" not in allowed)
    assert not extra, (f"{len(extra)} public names are not Paddle's: {', '.join(extra)}. Make them "
                       "private (an underscore, oar._C.ops) or add them to api_names/oar_only.txt "
                       "with the reason they are meant to be public")


def test_oar_only_names_exist_and_say_why():
    for name, reason in _oar_only().items():
        space, _, attr = name.partition(".")
        assert space in _SURFACE and hasattr(_SURFACE[space], attr), f"stale entry {name}"
        assert len(reason.split()) >= 4, f"{name}: give the reason it is public"


def test_paddle_name_list_is_complete():
    paddle = _name_lines("paddle_3.3.1.txt")
    counts = {s: sum(n.startswith(s + ".") for n in paddle) for s in _SURFACE}
    assert all(c > 30 for c in counts.values()), counts  # guards a truncated reference file


# ---- paddle.distribution (issue 18): every public name of Paddle 3.3.1's
# paddle.distribution.__all__ (its distributions, transforms, kl_divergence, register_kl)
DISTRIBUTION_NAMES = """
    Bernoulli Beta Categorical Cauchy Chi2 ContinuousBernoulli Dirichlet Distribution
    Exponential ExponentialFamily Multinomial MultivariateNormal Normal Uniform kl_divergence
    register_kl Independent TransformedDistribution Laplace LogNormal LKJCholesky Gamma Gumbel
    Geometric Binomial Poisson StudentT Transform AbsTransform AffineTransform ChainTransform
    ExpTransform IndependentTransform PowerTransform ReshapeTransform SigmoidTransform
    SoftmaxTransform StackTransform StickBreakingTransform TanhTransform
""".split()


def test_distribution_namespace_is_paddles():
    import oar.distribution as D
    missing = [n for n in DISTRIBUTION_NAMES if not callable(getattr(D, n, None))]
    assert not missing, f"oar.distribution lacks {missing}"
    assert sorted(D.__all__) == sorted(DISTRIBUTION_NAMES)
    for sub in ("gumbel", "independent", "transformed_distribution", "transform", "kl",
                "normal", "uniform"):  # Paddle's examples import these submodules
        __import__(f"oar.distribution.{sub}")


# ---- paddle.sparse, paddle.audio, paddle.text (issue 18): Paddle 3.3.1's __all__ of each
# namespace (text's datasets, which download Baidu's corpora, and audio.datasets excepted)
SPARSE_NAMES = {
    "oar.sparse": """sparse_coo_tensor sparse_csr_tensor sin tan asin atan sinh tanh asinh atanh
        sqrt square log1p abs pow pca_lowrank cast neg deg2rad rad2deg expm1 mv matmul mask_as
        masked_matmul addmm add subtract transpose sum multiply divide coalesce is_same_shape
        reshape isnan slice""",
    "oar.sparse.nn": """ReLU ReLU6 LeakyReLU Softmax BatchNorm SyncBatchNorm Conv2D Conv3D
        SubmConv2D SubmConv3D MaxPool3D""",
    "oar.sparse.nn.functional": """conv2d conv3d subm_conv2d subm_conv2d_igemm subm_conv3d
        subm_conv3d_igemm max_pool3d relu relu6 leaky_relu softmax attention""",
    "oar.audio": "functional features backends load info save",
    "oar.audio.functional": """compute_fbank_matrix create_dct fft_frequencies hz_to_mel
        mel_frequencies mel_to_hz power_to_db get_window""",
    "oar.audio.features": "LogMelSpectrogram MelSpectrogram MFCC Spectrogram",
    "oar.audio.backends": "get_current_backend list_available_backends set_backend",
    "oar.text": "ViterbiDecoder viterbi_decode",
}


@pytest.mark.parametrize("module", sorted(SPARSE_NAMES))
def test_sparse_audio_text_namespaces_are_paddles(module):
    import importlib
    mod = importlib.import_module(module)
    names = SPARSE_NAMES[module].split()
    missing = [n for n in names if getattr(mod, n, None) is None]
    assert not missing, f"{module} lacks {missing}"
    assert sorted(mod.__all__) == sorted(names)


def test_sparse_tensor_methods_and_windows():
    for name in ("to_sparse_coo", "to_sparse_csr", "to_dense", "is_sparse", "is_sparse_coo",
                 "is_sparse_csr", "sparse_dim", "dense_dim"):
        assert callable(getattr(oar.Tensor, name)), name
    for name in ("hann_window", "hamming_window", "kaiser_window", "blackman_window",
                 "bartlett_window"):
        assert callable(getattr(oar, name)), name
# ---- issue 18, static slice: the names of paddle.base / reader / quantization / incubate /
# utils / static.amp / cuda that Paddle 3.3.1 documents, each present (and callable).
STATIC_SLICE_NAMES = {
    "base": "DatasetFactory DataFeedDesc DataFeeder create_lod_tensor create_random_int_lodtensor "
            "enable_dygraph disable_dygraph is_compiled_with_xpu Program Executor Scope CPUPlace",
    "base.dataset": "DatasetFactory InMemoryDataset QueueDataset FileInstantDataset BoxPSDataset",
    "base.io": "PyReader DataLoader cache",
    "base.executor": "as_numpy",
    "base.log_helper": "get_logger",
    "reader": "batch buffered cache chain compose firstn map_readers multiprocess_reader shuffle xmap_readers",
    "quantization": "QuantConfig BaseQuanter BaseObserver quanter QAT PTQ",
    "quantization.observers": "AbsmaxObserver",
    "quantization.quanters": "FakeQuanterWithAbsMaxObserver",
    "incubate": "identity_loss register_rng_state_as_index get_rng_state set_rng_state",
    "incubate.layers": "partial_concat partial_sum shuffle_batch tdm_child",
    "incubate.optimizer.functional": "minimize_bfgs minimize_lbfgs",
    "incubate.autograd": "enable_prim disable_prim prim_enabled prim2orig orig2prim",
    "incubate.autotune": "set_config",
    "utils.unique_name": "generate guard switch",
    "utils.cpp_extension": "get_build_directory",
    "static.amp": "AutoMixedPrecisionLists CustomOpLists fp16_guard",
    "static.amp.bf16": "AutoMixedPrecisionListsBF16 bf16_guard",
    "static.nn.control_flow": "Assert While cond while_loop",
    "cuda": "is_available device_count synchronize get_rng_state set_rng_state manual_seed_all",
    "sysconfig": "get_include get_lib",
    "pir_utils": "IrGuard",
}


@pytest.mark.parametrize("space", sorted(STATIC_SLICE_NAMES))
def test_static_slice_names(space):
    import importlib
    mod = importlib.import_module(f"oar.{space}")
    missing = [n for n in STATIC_SLICE_NAMES[space].split() if not callable(getattr(mod, n, None))]
    assert not missing, f"oar.{space} lacks {missing}"
    assert oar._lazy.load(oar.batch) is oar.reader.batch  # a stand-in until its first use
    assert sorted(oar.quantization.__all__) == sorted(STATIC_SLICE_NAMES["quantization"].split())


# ---- issue 18 (compat_nn): paddle.nn.quant's and paddle.nn.utils' names Oar has.
def test_nn_quant_and_utils_names():
    import oar.nn.quant as Q
    assert Q.__all__ == ["Stub", "weight_quantize", "weight_dequantize", "weight_only_linear"]
    assert issubclass(Q.Stub, oar.nn.Layer) and all(callable(getattr(Q, n)) for n in Q.__all__[1:])
    from oar.nn.quant import quant_layers
    for name in quant_layers.__all__:
        assert issubclass(getattr(quant_layers, name), oar.nn.Layer), name
    assert callable(oar.nn.utils.spectral_norm)
# ---- issue 18, amp/autograd slice: paddle.amp.debugging's and paddle.autograd's names that
# Paddle 3.3.1 documents, reached as attributes (no explicit import), as Paddle's examples do.
AMP_AUTOGRAD_NAMES = {
    "amp.debugging": "DebugMode TensorCheckerConfig check_numerics enable_operator_stats_collection "
                     "disable_operator_stats_collection collect_operator_stats enable_tensor_checker "
                     "disable_tensor_checker check_layer_numerics",
    "autograd": "saved_tensors_hooks backward PyLayer PyLayerContext",
}


@pytest.mark.parametrize("space", sorted(AMP_AUTOGRAD_NAMES))
def test_amp_autograd_slice_names(space):
    mod = oar
    for part in space.split("."):
        mod = getattr(mod, part)
    missing = [n for n in AMP_AUTOGRAD_NAMES[space].split() if not callable(getattr(mod, n, None))]
    assert not missing, f"oar.{space} lacks {missing}"
    if space == "amp.debugging":  # only Paddle's names are public there
        assert set(mod.__all__) == set(AMP_AUTOGRAD_NAMES[space].split())
