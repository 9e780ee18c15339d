"""torch.nn.MultiheadAttention's signature and layout on oar (Paddle 3.3's
paddle.compat.nn.MultiheadAttention): packed in_proj_weight [3*E, E], inputs [L, N, E] unless
batch_first, returns (output, head-averaged weights or None)."""
from ... import nn as _nn

__all__ = ["MultiheadAttention"]


class MultiheadAttention(_nn.Layer):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        op = "compat.nn.MultiheadAttention"
        for name, v in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
        if embed_dim % num_heads:
            raise ValueError(f"{op}: embed_dim {embed_dim} is not divisible by num_heads "
                             f"{num_heads}")
        if dtype is not None:
            self._dtype = dtype
        from ...nn.initializer import XavierNormal, XavierUniform
        from . import Linear
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads

        def weight(shape):
            return self.create_parameter(shape, dtype=self._dtype,
                                         default_initializer=XavierUniform())

        def bias_param(shape):
            return self.create_parameter(shape, dtype=self._dtype, is_bias=True) if bias else None
        self.in_proj_bias = self.q_proj_bias = self.k_proj_bias = self.v_proj_bias = None
        if self._qkv_same_embed_dim:
            self.in_proj_weight = weight([3 * embed_dim, embed_dim])
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
            self.in_proj_bias = bias_param([3 * embed_dim])
        else:
            self.q_proj_weight = weight([embed_dim, embed_dim])
            self.k_proj_weight = weight([embed_dim, self.kdim])
            self.v_proj_weight = weight([embed_dim, self.vdim])
            self.in_proj_weight = None
            self.q_proj_bias = bias_param([embed_dim])
            self.k_proj_bias = bias_param([embed_dim])
            self.v_proj_bias = bias_param([embed_dim])
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=self._dtype)
        self.add_bias_kv, self.add_zero_attn = add_bias_kv, add_zero_attn
        if add_bias_kv:
            self.bias_k = self.create_parameter([1, 1, embed_dim], dtype=self._dtype,
                                                is_bias=True, default_initializer=XavierNormal())
            self.bias_v = self.create_parameter([1, 1, embed_dim], dtype=self._dtype,
                                                is_bias=True, default_initializer=XavierNormal())
        else:
            self.bias_k = self.bias_v = None

    def _project(self, query, key, value):
        from .functional import linear
        if self._qkv_same_embed_dim:
            ws = self.in_proj_weight.chunk(3, axis=0)
            bs = (self.in_proj_bias.chunk(3, axis=0) if self.in_proj_bias is not None
                  else (None,) * 3)
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            bs = (self.q_proj_bias, self.k_proj_bias, self.v_proj_bias)
        return [linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs)]

    def _mask(self, attn_mask, key_padding_mask, n, lq, lk, dtype, is_causal):
        """One additive float mask [n, heads, lq, lk'] (lk' counts the extra key columns),
        or None."""
        import oar
        if attn_mask is None and key_padding_mask is None and not is_causal:
            return None
        if attn_mask is None:
            attn_mask = (oar.triu(oar.ones([lq, lk], dtype="bool"), diagonal=1) if is_causal
                         else oar.zeros([lq, lk], dtype=dtype))
        extra = int(self.add_zero_attn) + int(self.add_bias_kv)

        def to_float(m):
            if m.dtype.name == "bool":  # True = masked out
                return oar.where(m, oar.full(m.shape, float("-inf"), dtype),
                                 oar.zeros(m.shape, dtype))
            return m.astype(dtype)

        def pad(m):
            return oar.concat([m, oar.zeros([*m.shape[:-1], extra], m.dtype)], axis=-1) \
                if extra else m
        mask = to_float(pad(attn_mask))
        if mask.ndim == 2:
            mask = mask.reshape([1, 1, lq, -1])
        elif mask.ndim == 3:
            mask = mask.reshape([n, self.num_heads, lq, -1])
        if key_padding_mask is not None:
            kpm = to_float(pad(key_padding_mask)).reshape([n, 1, 1, -1])
            mask = mask + kpm
        return mask

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        import oar
        op = "compat.nn.MultiheadAttention"
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{op}: query, key and value must all be 2-D or 3-D, got "
                             f"{list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
        if not batched:
            b = 0 if self.batch_first else 1
            query, key, value = query.unsqueeze(b), key.unsqueeze(b), value.unsqueeze(b)
            if key_padding_mask is not None and key_padding_mask.ndim == 1:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if not self.batch_first:
            query, key, value = (t.transpose([1, 0, 2]) for t in (query, key, value))
        n, lq, e = query.shape
        if e != self.embed_dim:
            raise ValueError(f"{op}: query's last dim {e} is not embed_dim {self.embed_dim}")
        lk = key.shape[1]
        if key_padding_mask is not None and list(key_padding_mask.shape) != [n, lk]:
            raise ValueError(f"{op}: key_padding_mask must be [{n}, {lk}], got "
                             f"{list(key_padding_mask.shape)}")
        q, k, v = self._project(query, key, value)
        if self.add_bias_kv:
            k = oar.concat([k, self.bias_k.expand([n, 1, e])], axis=1)
            v = oar.concat([v, self.bias_v.expand([n, 1, e])], axis=1)

        def heads(t):
            return t.reshape([n, t.shape[1], self.num_heads, self.head_dim]).transpose([0, 2, 1, 3])
        q, k, v = heads(q), heads(k), heads(v)
        if self.add_zero_attn:
            z = oar.zeros([n, self.num_heads, 1, self.head_dim], k.dtype)
            k, v = oar.concat([k, z], axis=2), oar.concat([v, z], axis=2)
        mask = self._mask(attn_mask, key_padding_mask, n, lq, lk, q.dtype, is_causal)
        scores = oar.matmul(q, k, transpose_y=True) / (self.head_dim ** 0.5)
        if mask is not None:
            scores = scores + mask
        weights = _nn.functional.softmax(scores, axis=-1)
        weights = _nn.functional.dropout(weights, self.dropout, training=self.training)
        out = oar.matmul(weights, v).transpose([0, 2, 1, 3]).reshape([n, lq, e])
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.transpose([1, 0, 2])
        if not need_weights:
            weights = None
        elif average_attn_weights:
            weights = weights.mean(axis=1)
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)
            weights = None if weights is None else weights.squeeze(0)
        return out, weights
