"""Names served on first use, so that `import oar` does not load modules most programs
never touch: the Paddle functions written as compositions of ops (Note [Compositions of
Paddle functions] in docs/notes/training_api.md). A package's module __getattr__ resolves
them; Tensor methods are small trampolines that load their module on the first call.
tests/python/test_lazy_names.py checks these tables against the modules' __all__."""
import importlib

TOP = {  # oar.<name>: the module (relative to oar) that defines it
    "._math_composites": """
    mm negative positive logit dist
    frac deg2rad rad2deg hypot logaddexp signbit copysign heaviside sinc stanh isposinf
    isneginf isreal is_integer is_empty ldexp frexp gcd lcm isin allclose
    isclose equal_all multigammaln trapezoid cumulative_trapezoid tensordot baddbmm
    renorm vander cdist reduce_as gammaln sgn ge gt le lt ne eq vecdot add_n logspace
    pdist multiplex histogram_bin_edges rand_like randn_like randint_like log_normal
    log_normal_ polar
""",
    "._manip_composites": """
    broadcast_shapes t rank is_tensor tolist take
    permute swapaxes matrix_transpose ravel narrow unflatten view_as tensor_split hsplit
    vsplit dsplit diagflat index_fill index_sample masked_scatter select_scatter
    diagonal_scatter scatter_add scatter_reduce msort argwhere broadcast_shape cat
    atleast_1d atleast_2d atleast_3d hstack vstack row_stack dstack column_stack
    block_diag cartesian_prod combinations tril_indices triu_indices shard_index
""",
    "._scan_composites": "cummax cummin",
    "._special_composites": "i0 i0e i1 i1e",
    "._windows": "bartlett_window blackman_window hamming_window hann_window kaiser_window",
    "._random_more": "get_cuda_rng_state set_cuda_rng_state disable_signal_handler cauchy_ geometric_",
    ".utils.dlpack": "to_dlpack from_dlpack",
    "._gamma_hist_composites": "gammainc gammaincc gammainc_ gammaincc_ histogramdd",
    "._bitwise_composites": """
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_left_shift
    bitwise_right_shift bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_invert_
    bitwise_left_shift_ bitwise_right_shift_
""",
    "._nextafter": "nextafter",
}
TENSOR_METHODS = {
    "._math_composites": """
    frac deg2rad rad2deg hypot logaddexp signbit copysign heaviside sinc stanh isposinf
    isneginf isreal is_integer is_empty ldexp frexp gcd lcm isin allclose
    isclose equal_all multigammaln trapezoid cumulative_trapezoid tensordot baddbmm
    renorm vander cdist reduce_as gammaln sgn ge gt le lt ne eq log_normal_
""",
    "._manip_composites": """
    take
    permute swapaxes matrix_transpose ravel narrow unflatten view_as tensor_split hsplit
    vsplit dsplit diagflat index_fill index_sample masked_scatter select_scatter
    diagonal_scatter scatter_add scatter_reduce msort argwhere
""",
    "._scan_composites": "cummax cummin",
    "._linalg_more": "lu lu_unpack householder_product ormqr svd_lowrank pca_lowrank",
    "._special_composites": "i0 i0e i1 i1e",
    "._random_more": "cauchy_ geometric_",
    "._gamma_hist_composites": "gammainc gammaincc gammainc_ gammaincc_ histogramdd",
    "._bitwise_composites": """
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_left_shift
    bitwise_right_shift bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_invert_
    bitwise_left_shift_ bitwise_right_shift_
""",
    "._tensor_storage": "set_ resize_",
    "._nextafter": "nextafter",
}
NN_FUNCTIONAL = {"._functional_loss_more": """
    square_error_cost log_loss soft_margin_loss hinge_embedding_loss
    cosine_embedding_loss multi_label_soft_margin_loss multi_margin_loss
    triplet_margin_loss triplet_margin_with_distance_loss poisson_nll_loss
    gaussian_nll_loss sigmoid_focal_loss dice_loss npair_loss label_smooth
    softmax_with_cross_entropy maxout swiglu channel_shuffle sequence_mask dropout1d
""", "._functional_pool_more": """
    lp_pool1d lp_pool2d max_unpool1d max_unpool2d max_unpool3d
""", "._functional_misc": """
    multi_label_margin_loss temporal_shift gather_tree
""", "._functional_ctc": "ctc_loss", "._functional_random_act": "rrelu feature_alpha_dropout"}
NN_LAYERS = {".layer_more": """
    CosineEmbeddingLoss HingeEmbeddingLoss SoftMarginLoss MultiLabelSoftMarginLoss
    MultiMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss PoissonNLLLoss
    GaussianNLLLoss Maxout ChannelShuffle SiLU Softmax2D Unflatten ConstantPad1D
    ReflectionPad1D ReplicationPad1D CircularPad1D ConstantPad2D ReflectionPad2D
    ReplicationPad2D CircularPad2D ConstantPad3D ReflectionPad3D ReplicationPad3D
    CircularPad3D ZeroPad1D ZeroPad3D
""", ".layer_pool_more": """
    LPPool1D LPPool2D MaxUnPool1D MaxUnPool2D MaxUnPool3D MultiLabelMarginLoss CTCLoss
""", ".layer_random_act": "RReLU FeatureAlphaDropout"}


def _index(table):
    return {name: mod for mod, names in table.items() for name in names.split()}


def module_getattr(package, table, extra=None, base=None):
    """A module __getattr__ for `package` that imports table's module of `name` (relative to
    `base`, default the package) on first access; `extra`: {name: callable giving the value}."""
    index = _index(table)

    def __getattr__(name):
        if extra and name in extra:
            return extra[name]()
        mod = index.get(name)
        if mod is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        return getattr(importlib.import_module(mod, base or package), name)
    return __getattr__


def install_tensor_methods(tensor_cls, package="oar"):
    """Binds each lazy method as a trampoline (an existing method of the name wins)."""
    for name, mod in _index(TENSOR_METHODS).items():
        if hasattr(tensor_cls, name):
            continue

        def method(self, *args, _n=name, _m=mod, **kwargs):
            return getattr(importlib.import_module(_m, package), _n)(self, *args, **kwargs)
        method.__name__ = method.__qualname__ = name
        setattr(tensor_cls, name, method)


def add_namespaces(getattr_fn, package, names):
    """getattr_fn that also imports the subpackages `names` of package on first access."""
    def __getattr__(name):
        if name in names:
            return importlib.import_module("." + name, package)
        return getattr_fn(name)
    return __getattr__
