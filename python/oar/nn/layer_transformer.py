"""Transformer layers with Paddle 3.x's constructors, forward signatures and parameter
names (so state dicts carry Paddle's keys): MultiHeadAttention,
TransformerEncoderLayer/TransformerEncoder, TransformerDecoderLayer/TransformerDecoder,
Transformer.

MultiHeadAttention computes exactly as Paddle's (scores scaled by head_dim**-0.5,
bool/int masks become (mask - 1) * 1e9, softmax, dropout, weighted sum); when the
weights are not returned, no cache is used and no dropout applies, it runs the fused
scaled_dot_product_attention kernel on the same inputs instead.
"""
import collections
import copy

import numpy as np

from .. import _C
from . import functional as F
from ._errors import check_copies
from .layer import Layer, LayerList, ParamAttr
from ._inference_ops import F32_F64 as _F32_F64, no_grad_flows as _no_grad_flows
from .layer_common import Dropout, Linear

from .layer_cnn import LayerNorm

_ops = _C.ops

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _convert_param_attr_to_list(param_attr, n):
    """Paddle's helper: one attr per sublayer from a single attr or a list of them."""
    if isinstance(param_attr, (list, tuple)):
        if len(param_attr) == 1:
            return [copy.deepcopy(param_attr[0]) for _ in range(n)]
        if len(param_attr) != n:
            raise ValueError(f"the length of param_attr ({len(param_attr)}) must be 1 or {n}")
        return list(param_attr)
    if isinstance(param_attr, ParamAttr):
        return [copy.deepcopy(param_attr) for _ in range(n)]
    return [param_attr] * n


def _convert_attention_mask(attn_mask, dtype):
    """bool/int masks -> additive (0 where kept, -1e9 where masked); float masks cast."""
    if attn_mask is None:
        return None
    name = attn_mask.dtype.name
    if name == "bool" or name.startswith("int") or name.startswith("uint"):
        return (attn_mask.astype(dtype) - 1.0) * 1e9
    return attn_mask if attn_mask.dtype == dtype else attn_mask.astype(dtype)


_FUSED_ACT = {F.relu: "relu", F.gelu: "gelu"}  # F.gelu's default is the erf form


def _activation(name):
    fn = getattr(F, name, None)
    if fn is None or not callable(fn):
        raise ValueError(f"activation '{name}' is not a function of oar.nn.functional")
    return fn


def _ffn_hidden(layer, x):
    """activation(linear1(x)) of a Transformer layer's feed-forward block: where no gradient
    flows, one fused_linear_activation (the bias and a relu or gelu in one pass over the
    product, as the predictor runs it; Note [Eager inference ops]), unless linear1 is not a
    plain Linear or has forward hooks, which the fused op would skip."""
    l1, act = layer.linear1, _FUSED_ACT.get(layer.activation)
    if (act is not None and type(l1) is Linear and l1.bias is not None and not l1._forward_pre_hooks
            and not l1._forward_post_hooks and _no_grad_flows((x, l1.weight, l1.bias), _F32_F64)):
        return _C.ops.fused_linear_activation(x, l1.weight, l1.bias, False, False, act)
    return layer.activation(layer.linear1(x))


class MultiHeadAttention(Layer):
    """Paddle's paddle.nn.MultiHeadAttention: inputs [batch, seq_len, embed_dim]."""

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None,
                 need_weights=False, weight_attr=None, bias_attr=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiHeadAttention: embed_dim and num_heads must be positive, got "
                             f"{embed_dim} and {num_heads}")
        if embed_dim % num_heads != 0:
            raise ValueError(f"MultiHeadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.need_weights = need_weights
        self.head_dim = embed_dim // num_heads
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _split_heads(self, x):
        """[B, S, E] -> [B, H, S, head_dim]. Sizes 0 copy the input's (B and S stay
        symbolic in converted programs with dynamic shapes)."""
        return _ops.transpose(x.reshape([0, 0, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def compute_kv(self, key, value):
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def _prepare_qkv(self, query, key, value, cache=None):
        q = self._split_heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k = _ops.concat([cache.k, k], 2)
            v = _ops.concat([cache.v, v], 2)
            cache = self.Cache(k, v)
        return (q, k, v) if cache is None else (q, k, v, cache)

    def gen_cache(self, key, value=None, type=Cache):  # noqa: A002  (Paddle's name)
        """StaticCache: projected key/value (cross attention); Cache: empty key/value
        that grow with each decoding step (value None), or the given tensors."""
        if type == MultiHeadAttention.StaticCache:
            k, v = self.compute_kv(key, value)
            return self.StaticCache(k, v)
        if value is None:
            shape = [key.shape[0], self.num_heads, 0, self.head_dim]
            return self.Cache(_ops.full(shape, 0.0, key.dtype, key.place),
                              _ops.full(shape, 0.0, key.dtype, key.place))
        return self.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        key = query if key is None else key
        value = query if value is None else value
        if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
            raise ValueError(f"MultiHeadAttention: query, key and value must be 3-D [batch, "
                             f"seq_len, dim], got shapes {list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
        dropout_active = self.dropout and self.training
        if cache is None and not self.need_weights and not dropout_active:
            return self._fused_forward(query, key, value, attn_mask)
        if cache is None:
            q, k, v = self._prepare_qkv(query, key, value, cache)
        else:
            q, k, v, cache = self._prepare_qkv(query, key, value, cache)
        product = _ops.matmul(q * (self.head_dim ** -0.5), k, False, True)
        if attn_mask is not None:
            product = product + _convert_attention_mask(attn_mask, product.dtype)
        weights = F.softmax(product)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training,
                                mode="upscale_in_train")
        out = _ops.matmul(weights, v)
        out = _ops.transpose(out, [0, 2, 1, 3])
        out = out.reshape([0, 0, self.embed_dim])
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)

    def _fused_forward(self, query, key, value, attn_mask):
        h, d = self.num_heads, self.head_dim
        q = self.q_proj(query).reshape([0, 0, h, d])
        k = self.k_proj(key).reshape([0, 0, h, d])
        v = self.v_proj(value).reshape([0, 0, h, d])
        mask = _convert_attention_mask(attn_mask, q.dtype)
        out = F.scaled_dot_product_attention(q, k, v, mask, 0.0, False, self.training)
        return self.out_proj(out.reshape([0, 0, self.embed_dim]))


class TransformerEncoderLayer(Layer):
    """Self attention and a feed-forward block, each with a residual connection and
    layer norm (post-norm; pre-norm with normalize_before=True)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu",
                 attn_dropout=None, act_dropout=None, normalize_before=False, weight_attr=None,
                 bias_attr=None, layer_norm_eps=1e-5):
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        if d_model <= 0 or nhead <= 0 or dim_feedforward <= 0:
            raise ValueError(f"TransformerEncoderLayer: d_model, nhead and dim_feedforward must "
                             f"be positive, got {d_model}, {nhead}, {dim_feedforward}")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 2)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                            weight_attr=weight_attrs[0], bias_attr=bias_attrs[0])
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[1], bias_attr=bias_attrs[1])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[1], bias_attr=bias_attrs[1])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, incremental_cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(_ffn_hidden(self, src)))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, incremental_cache)

    def gen_cache(self, src):
        return self.self_attn.gen_cache(src, type=self.self_attn.Cache)


class TransformerEncoder(Layer):
    """num_layers encoder layers (the first is `encoder_layer`, the others new layers
    with its configuration) and an optional final norm."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        check_copies(num_layers, encoder_layer, "TransformerEncoder")
        self.layers = LayerList([encoder_layer if i == 0 else
                                 type(encoder_layer)(**encoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        output = src
        new_caches = []
        for i, mod in enumerate(self.layers):
            if cache is None:
                output = mod(output, src_mask=src_mask)
            else:
                output, new_cache = mod(output, src_mask=src_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(Layer):
    """Self attention, cross attention over the encoder's memory, and a feed-forward
    block, each with a residual connection and layer norm."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu",
                 attn_dropout=None, act_dropout=None, normalize_before=False, weight_attr=None,
                 bias_attr=None, layer_norm_eps=1e-5):
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        if d_model <= 0 or nhead <= 0 or dim_feedforward <= 0:
            raise ValueError(f"TransformerDecoderLayer: d_model, nhead and dim_feedforward must "
                             f"be positive, got {d_model}, {nhead}, {dim_feedforward}")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 3)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 3)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                            weight_attr=weight_attrs[0], bias_attr=bias_attrs[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout,
                                             weight_attr=weight_attrs[1], bias_attr=bias_attrs[1])
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[2], bias_attr=bias_attrs[2])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[2], bias_attr=bias_attrs[2])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.norm3 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.dropout3 = Dropout(dropout, mode="upscale_in_train")
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm1(tgt)
        if cache is None:
            tgt = self.self_attn(tgt, tgt, tgt, tgt_mask, None)
        else:
            tgt, incremental_cache = self.self_attn(tgt, tgt, tgt, tgt_mask, cache[0])
        tgt = residual + self.dropout1(tgt)
        if not self.normalize_before:
            tgt = self.norm1(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm2(tgt)
        if cache is None:
            tgt = self.cross_attn(tgt, memory, memory, memory_mask, None)
        else:
            tgt, static_cache = self.cross_attn(tgt, memory, memory, memory_mask, cache[1])
        tgt = residual + self.dropout2(tgt)
        if not self.normalize_before:
            tgt = self.norm2(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = self.linear2(self.dropout(_ffn_hidden(self, tgt)))
        tgt = residual + self.dropout3(tgt)
        if not self.normalize_before:
            tgt = self.norm3(tgt)
        return tgt if cache is None else (tgt, (incremental_cache, static_cache))

    def gen_cache(self, memory):
        incremental_cache = self.self_attn.gen_cache(memory, type=self.self_attn.Cache)
        static_cache = self.cross_attn.gen_cache(memory, memory, type=self.cross_attn.StaticCache)
        return incremental_cache, static_cache


class TransformerDecoder(Layer):
    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        check_copies(num_layers, decoder_layer, "TransformerDecoder")
        self.layers = LayerList([decoder_layer if i == 0 else
                                 type(decoder_layer)(**decoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        output = tgt
        new_caches = []
        for i, mod in enumerate(self.layers):
            if cache is None:
                output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)
            else:
                output, new_cache = mod(output, memory, tgt_mask=tgt_mask,
                                        memory_mask=memory_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, memory, do_zip=False):
        cache = [layer.gen_cache(memory) for layer in self.layers]
        if do_zip:
            cache = list(zip(*cache))
        return cache


class Transformer(Layer):
    """Encoder-decoder Transformer (Paddle's paddle.nn.Transformer): encoder and decoder
    stacks, each ending in a LayerNorm."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None,
                 custom_encoder=None, custom_decoder=None):
        super().__init__()
        if isinstance(bias_attr, (list, tuple)):
            if len(bias_attr) == 1:
                enc_bias = dec_bias = bias_attr[0]
            elif len(bias_attr) == 2:
                enc_bias, dec_bias = bias_attr
            elif len(bias_attr) == 3:
                enc_bias, dec_bias = [bias_attr[0], bias_attr[-1]], bias_attr
            else:
                raise ValueError("Transformer: bias_attr must have length 1, 2 or 3")
        else:
            enc_bias = dec_bias = bias_attr
        if isinstance(weight_attr, (list, tuple)):
            if len(weight_attr) == 1:
                enc_w = dec_w = weight_attr[0]
            elif len(weight_attr) == 2:
                enc_w, dec_w = weight_attr
            elif len(weight_attr) == 3:
                enc_w, dec_w = [weight_attr[0], weight_attr[-1]], weight_attr
            else:
                raise ValueError("Transformer: weight_attr must have length 1, 2 or 3")
        else:
            enc_w = dec_w = weight_attr
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            attn_dropout, act_dropout, normalize_before, enc_w,
                                            enc_bias)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, LayerNorm(d_model))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            attn_dropout, act_dropout, normalize_before, dec_w,
                                            dec_bias)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, LayerNorm(d_model))
        self.d_model = d_model
        self.nhead = nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        memory = self.encoder(src, src_mask=src_mask)
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    def generate_square_subsequent_mask(self, length):
        """[length, length] float32 mask: 0 on and below the diagonal, -inf above."""
        if isinstance(length, _C.Tensor):
            length = int(length.item())
        m = np.triu(np.full((length, length), -np.inf, dtype=np.float32), 1)
        return _C.to_tensor(m)
