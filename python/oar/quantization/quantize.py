"""QAT and PTQ: quantize() swaps in quantized layers and observers; convert() freezes them."""
import copy

from .base_quanter import BaseQuanter
from .config import QuantConfig


def _replace(parent, name, layer):
    """parent.<name> = layer, keeping the sublayer's place (a Sequential runs in order)."""
    if name in parent._sub_layers:
        parent._sub_layers[name] = layer
    else:
        setattr(parent, name, layer)


class Quantization:
    """What QAT and PTQ share."""

    def __init__(self, config):
        if not isinstance(config, QuantConfig):
            raise TypeError(f"{type(self).__name__}: config must be a QuantConfig, got {type(config).__name__}")
        self._config = copy.deepcopy(config)

    def _check_model(self, model, who):
        from ..nn import Layer

        if not isinstance(model, Layer):
            raise TypeError(f"{type(self).__name__}.{who}: model must be an oar.nn.Layer, got {type(model).__name__}")

    def quantize(self, model, inplace=False):
        """A copy of model (model itself if inplace) with quantized layers (Note [Quantization])."""
        self._check_model(model, "quantize")
        _model = model if inplace else copy.deepcopy(model)
        self._config._specify(_model)
        self._convert_to_quant_layers(_model, self._config)
        self._insert_activation_observers(_model, self._config)
        return _model

    def convert(self, model, inplace=False, remain_weight=False):
        """Every quanter/observer of a quantized model replaced by a fixed
        quantize-dequantize with its scale (an observer that saw no data is an error)."""
        from .layers import LinearQuanterDequanter

        self._check_model(model, "convert")
        _model = model if inplace else copy.deepcopy(model)

        def freeze(layer, path):
            for name, child in list(layer.named_children()):
                if isinstance(child, BaseQuanter):
                    scale = child.scales()
                    if scale is None:
                        raise RuntimeError(f"{type(self).__name__}.convert: quanter '{path}{name}' has no scale: run "
                                           f"the quantized model on data first")
                    _replace(layer, name, LinearQuanterDequanter(scale.detach(), child.bit_length()))
                else:
                    freeze(child, f"{path}{name}.")
        freeze(_model, "")
        return _model

    def _convert_to_quant_layers(self, model, config):
        for name, child in list(model.named_children()):
            if config._is_quantifiable(child) and type(child) in (
                    {**config.qat_layer_mappings, **config._customized_qat_layer_mapping}):
                _replace(model, name, config._get_qat_layer(child))
            else:
                self._convert_to_quant_layers(child, config)

    def _insert_activation_observers(self, model, config):
        from .layers import _Quanted

        for name, child in list(model.named_children()):
            if isinstance(child, _Quanted):
                continue
            if config._need_observe(child):
                _replace(model, name, config._get_observe_wrapper(child))
            else:
                self._insert_activation_observers(child, config)

    def __str__(self):
        return str(self._config)


class QAT(Quantization):
    """Quantization-aware training: the model trains with fake quanters in its layers."""


class PTQ(Quantization):
    """Post-training quantization: observers record ranges while the model (in eval mode)
    runs on calibration data."""

    def quantize(self, model, inplace=False):
        self._check_model(model, "quantize")
        if model.training:
            raise ValueError("PTQ.quantize: the model must be in eval mode (call model.eval() first)")
        return super().quantize(model, inplace)
