"""QuantConfig: which quanters quantize which layers."""
import copy

from .factory import QuanterFactory


class SingleLayerConfig:
    """The activation and weight quanter factories of one layer."""

    def __init__(self, activation, weight):
        self._activation, self._weight = activation, weight

    @property
    def activation(self):
        return self._activation

    @property
    def weight(self):
        return self._weight

    def __str__(self):
        return f"activation: {self._activation}\nweight: {self._weight}"

    __repr__ = __str__


def _check_factory(f, who, arg):
    if f is not None and not isinstance(f, QuanterFactory):
        raise TypeError(f"QuantConfig.{who}: {arg} must be a quanter or observer factory (e.g. "
                        f"FakeQuanterWithAbsMaxObserver(...)) or None, got {type(f).__name__}")
    return f


def _layer_types():
    from ..nn import Conv2D, Linear
    from ..nn.quant.stub import QuanterStub, Stub
    from .layers import QuantedConv2D, QuantedLinear

    return {Linear: QuantedLinear, Conv2D: QuantedConv2D, Stub: QuanterStub}


def _default_leaves():
    from ..nn import AvgPool2D, ReLU

    return (ReLU, AvgPool2D)


class QuantConfig:
    """Maps layers to quanters: the global activation/weight factories, overridden by
    add_type_config, add_name_config (a layer's full_name prefix) and add_layer_config."""

    def __init__(self, activation, weight):
        if activation is None and weight is None:
            self._global_config = None
        else:
            self._global_config = SingleLayerConfig(_check_factory(activation, "__init__", "activation"),
                                                    _check_factory(weight, "__init__", "weight"))
        self._layer2config = {}
        self._prefix2config = {}
        self._type2config = {}
        self._model = None
        self._qat_layer_mapping = dict(_layer_types())
        self._customized_qat_layer_mapping = {}
        self._customized_leaves = []

    def _single(self, activation, weight, who):
        return SingleLayerConfig(_check_factory(activation, who, "activation"), _check_factory(weight, who, "weight"))

    def add_layer_config(self, layer, activation=None, weight=None):
        """These layers (a Layer or a list) use these quanters."""
        from ..nn import Layer

        layers = layer if isinstance(layer, (list, tuple)) else [layer]
        for lyr in layers:
            if not isinstance(lyr, Layer):
                raise TypeError(f"QuantConfig.add_layer_config: expected Layers, got {type(lyr).__name__}")
            self.add_name_config(lyr.full_name(), activation, weight)

    def add_name_config(self, layer_name, activation=None, weight=None):
        """Layers whose full_name() is layer_name (a str or a list) use these quanters."""
        names = layer_name if isinstance(layer_name, (list, tuple)) else [layer_name]
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"QuantConfig.add_name_config: layer names must be str, got {type(n).__name__}")
            self._prefix2config[n] = self._single(activation, weight, "add_name_config")

    def add_type_config(self, layer_type, activation=None, weight=None):
        """Layers of these types (a class or a list) use these quanters."""
        types = layer_type if isinstance(layer_type, (list, tuple)) else [layer_type]
        for t in types:
            if not isinstance(t, type):
                raise TypeError(f"QuantConfig.add_type_config: expected Layer classes, got {type(t).__name__}")
            self._type2config[t] = self._single(activation, weight, "add_type_config")

    def add_qat_layer_mapping(self, source, target):
        """quantize() replaces layers of type `source` with target(layer, config)."""
        from ..nn import Layer

        for arg, t in (("source", source), ("target", target)):
            if not (isinstance(t, type) and issubclass(t, Layer)):
                raise TypeError(f"QuantConfig.add_qat_layer_mapping: {arg} must be a Layer class, got {t!r}")
        self._customized_qat_layer_mapping[source] = target

    def add_customized_leaf(self, layer_type):
        """Layers of this type are quantized as a whole (not their sublayers)."""
        if not isinstance(layer_type, type):
            raise TypeError(f"QuantConfig.add_customized_leaf: expected a Layer class, got {type(layer_type).__name__}")
        self._customized_leaves.append(layer_type)

    @property
    def customized_leaves(self):
        return self._customized_leaves

    @property
    def qat_layer_mappings(self):
        return self._qat_layer_mapping

    @property
    def default_qat_layer_mapping(self):
        return dict(_layer_types())

    @property
    def global_config(self):
        return self._global_config

    # ---- applying the config to a model
    def _specify(self, model):
        self._model = model
        self._layer2config = {}
        self._specify_helper(model)

    def _specify_helper(self, model):
        for child in model.children():
            config = self._layer2config.get(id(model), (None, self._global_config))[1]
            config = self._type2config.get(type(child), config)
            config = self._prefix2config.get(child.full_name(), config)
            if config is not None:
                self._layer2config[id(child)] = (child, config)
            self._specify_helper(child)

    def _get_config_by_layer(self, layer):
        entry = self._layer2config.get(id(layer))
        return entry[1] if entry is not None else None

    def _is_quantifiable(self, layer):
        return id(layer) in self._layer2config

    def _has_observer_config(self, layer):
        c = self._get_config_by_layer(layer)
        return c is not None and c.activation is not None

    def _is_leaf(self, layer):
        return (type(layer) in _default_leaves() or not layer._sub_layers
                or type(layer) in self._customized_leaves)

    def _need_observe(self, layer):
        return self._is_leaf(layer) and self._has_observer_config(layer)

    def _get_qat_layer(self, layer):
        target = self._customized_qat_layer_mapping.get(type(layer), self._qat_layer_mapping.get(type(layer)))
        return target(layer, self._get_config_by_layer(layer))

    def _get_observe_wrapper(self, layer):
        from .wrapper import ObserveWrapper

        return ObserveWrapper(self._get_config_by_layer(layer).activation._instance(layer), layer)

    def __deepcopy__(self, memo):
        c = QuantConfig.__new__(QuantConfig)
        c.__dict__.update({k: copy.copy(v) for k, v in self.__dict__.items()})
        c._model, c._layer2config = None, {}
        return c

    def __str__(self):
        out = f"Global config:\n{self._global_config}\n"
        if self._type2config:
            out += f"Layer type config:\n{self._type2config}\n"
        if self._prefix2config:
            out += f"Layer prefix config: \n{self._prefix2config}\n"
        return out
