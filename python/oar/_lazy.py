"""Names served on first use, so that `import oar` does not load modules most programs
never touch: the Paddle functions written as compositions of ops (Note [Compositions of
Paddle functions] in docs/notes/training_api.md). install() puts a stand-in for each name
into the package's namespace: a function's stand-in loads its module on the first call or
attribute read and then replaces itself there by the function; a namespace's stand-in (a
module object) does the same on its first attribute read. Tensor methods are small
trampolines that load their module on the first call and put the function in their place.

Why not a module __getattr__ (PEP 562): CPython 3.11+ does not specialise attribute reads
on a module whose dict has `__getattr__`, which costs every `oar.add(...)` ~20 ns (3% of a
tiny op). Hot namespaces (oar, oar.nn.functional, oar.linalg, oar.autograd) have none
(tests/python/test_lazy_names.py); cold ones (class namespaces such as oar.nn, whose
stand-ins could not be subclassed) may keep theirs.
tests/python/test_lazy_names.py checks these tables against the modules' __all__."""
import importlib
import types

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
    ".device._top": """
    get_default_device set_default_device is_compiled_with_distribute is_compiled_with_ipu
    is_compiled_with_rocm is_compiled_with_xpu
""",
    "._gamma_hist_composites": "gammainc gammaincc gammainc_ gammaincc_ histogramdd",
    "._bitwise": """
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_left_shift
    bitwise_right_shift bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_invert_
    bitwise_left_shift_ bitwise_right_shift_
""",
    "._nextafter": "nextafter",
    "._tensor_storage": "cast_",
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
    "._bitwise": """
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert bitwise_left_shift
    bitwise_right_shift bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_invert_
    bitwise_left_shift_ bitwise_right_shift_
""",
    "._tensor_storage": "set_ resize_ cast_",
    ".signal": "stft istft",
    "._fill_diagonal": "fill_diagonal_ fill_diagonal_tensor fill_diagonal_tensor_",
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
""", "._functional_ctc": "ctc_loss", "._functional_random_act": "rrelu feature_alpha_dropout",
    "._functional_fractional_pool": "fractional_max_pool2d fractional_max_pool3d",
    "._functional_adaptive_softmax": "adaptive_log_softmax_with_loss"}
NN_LAYERS = {".layer_more": """
    CosineEmbeddingLoss HingeEmbeddingLoss SoftMarginLoss MultiLabelSoftMarginLoss
    MultiMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss PoissonNLLLoss
    GaussianNLLLoss Maxout ChannelShuffle SiLU Softmax2D Unflatten ConstantPad1D
    ReflectionPad1D ReplicationPad1D CircularPad1D ConstantPad2D ReflectionPad2D
    ReplicationPad2D CircularPad2D ConstantPad3D ReflectionPad3D ReplicationPad3D
    CircularPad3D ZeroPad1D ZeroPad3D
""", ".layer_pool_more": """
    LPPool1D LPPool2D MaxUnPool1D MaxUnPool2D MaxUnPool3D MultiLabelMarginLoss CTCLoss
    FractionalMaxPool2D FractionalMaxPool3D
""", ".layer_random_act": "RReLU FeatureAlphaDropout",
    ".layer_norm_more": "SpectralNorm SyncBatchNorm",
    ".layer_adaptive_softmax": "AdaptiveLogSoftmaxWithLoss"}

# issue 18 (compat_seq): sequence losses and decoders
NN_FUNCTIONAL["._functional_rnnt"] = "rnnt_loss"
NN_FUNCTIONAL["._functional_seq"] = "class_center_sample"
NN_LAYERS[".layer_seq"] = "RNNTLoss BeamSearchDecoder dynamic_decode"
TOP["._lazy_init"] = "LazyGuard"
TOP["._mmap_storage"] = "MmapStorage"


def _index(table):
    return {name: mod for mod, names in table.items() for name in names.split()}


def module_getattr(package, table, extra=None, base=None):
    """A module __getattr__ for `package` that imports table's module of `name` (relative to
    `base`, default the package) on first access; `extra`: {name: callable giving the value}.
    For cold namespaces only (see the module docstring); hot ones use install()."""
    index = _index(table)

    def __getattr__(name):
        if extra and name in extra:
            return extra[name]()
        mod = index.get(name)
        if mod is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        return getattr(importlib.import_module(mod, base or package), name)
    return __getattr__


class LazyFunction:
    """Stands for function `attr` of module `module` (relative to `package`) under `name` in
    the namespace dict `ns` until its first call or attribute read, which imports the module
    and puts the function itself into `ns`. `oar.frac is oar._math_composites.frac` holds
    from then on; a stand-in kept by `from oar import frac` before that forwards each call."""
    __slots__ = ("_ns", "_name", "_module", "_package", "_attr", "_fn")

    def __init__(self, ns, name, module, package, attr=None):
        self._ns, self._name, self._module, self._package = ns, name, module, package
        self._attr, self._fn = attr or name, None

    def _load(self):
        fn = self._fn
        if fn is None:
            fn = self._fn = getattr(importlib.import_module(self._module, self._package), self._attr)
            if self._ns.get(self._name) is self:
                self._ns[self._name] = fn
        return fn

    def __call__(self, *args, **kwargs):
        return (self._fn or self._load())(*args, **kwargs)

    def __getattr__(self, attr):  # __name__, __qualname__, __signature__, ...
        return getattr(self._load(), attr)

    # class attributes of every object, so __getattr__ would not see them; inspect.signature
    # and help() follow __wrapped__ to the function
    __doc__ = property(lambda self: self._load().__doc__)
    __module__ = property(lambda self: self._load().__module__)
    __wrapped__ = property(lambda self: self._load())

    def __repr__(self):
        return repr(self._load())


class LazyModule(types.ModuleType):
    """Stands for module `fullname` under `name` in the namespace dict `ns` until its first
    attribute read, which imports it (so `import oar` leaves it out of sys.modules) and puts
    the module itself into `ns`."""

    def __init__(self, ns, name, fullname):
        super().__init__(fullname)
        self.__dict__["_lazy_target"] = (ns, name)

    def __getattr__(self, attr):
        return getattr(_load_module(self), attr)

    def __repr__(self):
        return f"<module '{self.__name__}' (not loaded yet)>"


def _load_module(stand_in):
    ns, name = stand_in.__dict__["_lazy_target"]
    mod = importlib.import_module(stand_in.__name__)
    if ns.get(name) is stand_in:
        ns[name] = mod
    return mod


def load(obj):
    """The function or module a stand-in stands for (obj itself when it is none)."""
    if isinstance(obj, LazyFunction):
        return obj._load()
    if isinstance(obj, LazyModule):
        return _load_module(obj)
    return obj


def install(ns, package, table=None, base=None, functions=None, namespaces=None):
    """Puts stand-ins into the namespace dict `ns` of `package` for the names of `table`
    ({module relative to `base` (default package): names}), `functions` ({name: (module,
    attr)}) and `namespaces` ({name: full module name}). A name `ns` defines already keeps
    its value (an op's own version wins over a composition of the same name)."""
    for name, mod in _index(table or {}).items():
        ns.setdefault(name, LazyFunction(ns, name, mod, base or package))
    for name, (mod, attr) in (functions or {}).items():
        ns.setdefault(name, LazyFunction(ns, name, mod, package, attr))
    for name, fullname in (namespaces or {}).items():
        ns.setdefault(name, LazyModule(ns, name, fullname))


def install_tensor_methods(tensor_cls, package="oar"):
    """Binds each lazy method as a trampoline (an existing method of the name wins)."""
    for name, mod in _index(TENSOR_METHODS).items():
        if not hasattr(tensor_cls, name):
            bind_method(tensor_cls, (name,), mod, name, package)


def bind_method(cls, names, module, attr, package="oar"):
    """Puts under each of `names` on cls a trampoline for function `attr` of `module`: its
    first call imports the module and puts the function itself in its place, under every
    name that holds it by then (aliases such as Tensor.greater = Tensor.gt included), so
    that later calls pay nothing for the laziness (an import statement per call cost ~1 us,
    more than a small op)."""
    def method(self, *args, **kwargs):
        fn = getattr(importlib.import_module(module, package), attr)
        if isinstance(fn, types.FunctionType):  # binds self as the trampoline does
            for n, v in list(cls.__dict__.items()):
                if v is method:
                    setattr(cls, n, fn)
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = names[0]
    for n in names:
        setattr(cls, n, method)
