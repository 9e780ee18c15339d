"""DistributedStrategy: Paddle's fleet strategy, a typed record of switches and *_configs
groups following Paddle's distributed_strategy.proto (field names, types and defaults), saved
to and loaded from protobuf text format (save_to_prototxt / load_from_prototxt).

Oar's fleet reads hybrid_configs (degrees checked against the world size), amp,
find_unused_parameters and fuse_grad_size_in_MB; the other fields are kept and round-trip
but select meta-optimizers Oar does not have (Note [Fleet strategy fields] in docs/notes/fleet.md)."""
import copy

__all__ = []

_NCCL = {"commName": "", "ll_buffsize": 0, "ll128_buffsize": 0, "simple_buffsize": 0, "buffsize_align": 0,
         "nchannels": 0, "algoStr": "", "protoStr": ""}
_S, _I, _F = [""], [0], [0.0]  # repeated string / int / float fields (a one-item list names the type)

# Each *_configs group: field -> default; a dict default is a nested message.
_CONFIGS = {
    "recompute_configs": {"checkpoints": _S, "enable_offload": False, "checkpoint_shape": _I,
                          "enable_tuning": False},
    "amp_configs": {"init_loss_scaling": 32768.0, "incr_every_n_steps": 1000, "decr_every_n_nan_or_inf": 2,
                    "incr_ratio": 2.0, "decr_ratio": 0.8, "use_dynamic_loss_scaling": True,
                    "custom_white_list": _S, "custom_black_list": _S, "custom_black_varnames": _S,
                    "use_pure_fp16": False, "use_fp16_guard": True, "use_optimizer_fp16": False,
                    "use_pure_bf16": False},
    "localsgd_configs": {"k_steps": 1, "begin_step": 1},
    "adaptive_localsgd_configs": {"init_k_steps": 1, "begin_step": 1},
    "gradient_merge_configs": {"k_steps": 1, "avg": True},
    "dgc_configs": {"rampup_begin_step": 0, "rampup_step": 1, "sparsity": _F},
    "lars_configs": {"lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0,
                     "exclude_from_weight_decay": _S},
    "lamb_configs": {"lamb_weight_decay": 0.01, "exclude_from_weight_decay": _S},
    "pipeline_configs": {"micro_batch_size": 1, "accumulate_steps": 1, "schedule_mode": "1F1B",
                         "p2p_cache_shape": True, "enable_partial_send_recv": True},
    "tensor_parallel_configs": {"tensor_parallel_degree": 1, "tensor_init_seed": -1},
    "sharding_configs": {"sharding_segment_strategy": "segment_broadcast_MB", "segment_broadcast_MB": 32.0,
                         "segment_anchors": _S, "sharding_degree": 8, "mp_degree": 1, "dp_degree": 1,
                         "hybrid_dp": False, "gradient_merge_acc_step": 1, "optimize_offload": False,
                         "pp_allreduce_in_optimize": False, "pp_degree": 1, "optimize_cast": False,
                         "_dp_as_optimizer_sharding": False, "stage": 1, "enable_tuning": False,
                         "use_calc_stream": False},
    "hybrid_configs": {"dp_degree": -1, "mp_degree": 1, "pp_degree": 1, "sharding_degree": 1, "sep_degree": 1,
                       "ep_degree": 1, "moe_sharding_degree": 1, "cp_degree": 1, "cp_sharding_degree": 1,
                       "enable_optimizer_timer": False, "split_norm_comm": False,
                       "mp_configs": {"sync_param": True, "sync_grad": False, "sync_moment": False,
                                      "sync_mode": "broadcast", "mp_async_allreduce": False,
                                      "mp_skip_c_identity": False, "mp_fused_linear_param_grad_add": False,
                                      "need_broadcast_data": True, "recompute_allgather": False,
                                      "sp_async_reduce_scatter": False, "nccl_config": _NCCL},
                       "pp_configs": {"dp_comm_overlap": False, "delay_scale_loss": False, "enable_timer": False,
                                      "sharding_comm_overlap": False, "profiling": False,
                                      "release_gradients": False, "overlap_p2p_comm": False,
                                      "clear_every_step_cache": False, "use_batch_p2p_comm": True,
                                      "best_unbalanced_scheduler": False, "enable_offload_queue": False,
                                      "enable_dynamic_shape": False, "use_dualpipev": False,
                                      "forward_backward_overlap_scheduler": False, "sync_param": False,
                                      "sync_moment": False, "sync_mode": "broadcast"},
                       "sharding_configs": {"tensor_fusion": False, "accumulate_steps": 1, "comm_overlap": False,
                                            "split_param": False, "fuse_optimizer": True, "use_reduce_avg": True,
                                            "comm_buffer_size_MB": 256, "release_gradients": False,
                                            "free_grads_in_comm": False, "enable_fuse_optimizer_states": False,
                                            "offload_opt_buffer_size": -1},
                       "dp_configs": {"nccl_config": _NCCL}, "sep_configs": {"nccl_config": _NCCL},
                       "default_comm_group_configs": {"nccl_config": _NCCL}},
    "a_sync_configs": {"k_steps": -1, "max_merge_var_num": 1, "send_queue_size": 16,
                       "independent_recv_thread": False, "min_send_grad_num_before_recv": 1,
                       "thread_pool_size": 1, "send_wait_times": 1, "runtime_split_send_recv": False,
                       "launch_barrier": True, "heter_worker_device_guard": "cpu", "lr_decay_steps": 10,
                       "use_ps_gpu": 0, "use_gpu_graph": 0},
    "trainer_desc_configs": {"dump_fields_path": "", "dump_fields": _S, "dump_param": _S, "stat_var_names": _S,
                             "trainer": "", "device_worker": "", "local_sparse": _S, "remote_sparse": _S},
    "fs_client_param": {"uri": "", "user": "", "passwd": "", "hadoop_bin": ""},
    "qat_configs": {"channel_wise_abs_max": True, "weight_bits": 8, "activation_bits": 8,
                    "not_quant_pattern": _S, "algo": ""},
    "gradient_scale_configs": {"scale_strategy": "avg", "scale_gradient": False},
    "build_strategy": {"fuse_elewise_add_act_ops": False, "fuse_bn_act_ops": False,
                       "fuse_relu_depthwise_conv": False, "fuse_broadcast_ops": False,
                       "fuse_all_optimizer_ops": False, "enable_inplace": False,
                       "enable_backward_optimizer_op_deps": True, "cache_runtime_context": False,
                       "fuse_bn_add_act_ops": True, "enable_auto_fusion": False, "enable_addto": False,
                       "allow_cuda_graph_capture": False, "reduce_strategy": 0, "fuse_gemm_epilogue": False,
                       "debug_graphviz_path": "", "fused_attention": False, "fused_feedforward": False,
                       "fuse_dot_product_attention": False, "fuse_resunit": False},
}

_FIELDS = {  # the top-level switches
    "amp": False, "recompute": False, "localsgd": False, "dgc": False, "gradient_merge": False, "lars": False,
    "lamb": False, "pipeline": False, "elastic": False, "auto": False, "a_sync": True,
    "sync_nccl_allreduce": True, "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
    "hierarchical_allreduce_inter_nranks": 1, "sync_batch_norm": False, "fuse_all_reduce_ops": True,
    "fuse_grad_size_in_MB": 32, "fuse_grad_size_in_TFLOPS": 50.0, "cudnn_exhaustive_search": False,
    "conv_workspace_size_limit": 512, "cudnn_batchnorm_spatial_persistent": False, "adaptive_localsgd": False,
    "fp16_allreduce": False, "sharding": False, "last_comm_group_size_MB": 1.0, "find_unused_parameters": False,
    "tensor_parallel": False, "without_graph_optimization": True, "fuse_grad_size_in_num": 8,
    "calc_comm_same_stream": False, "asp": False, "fuse_grad_merge": False, "semi_auto": False,
    "adam_d2sum": False, "auto_search": False, "heter_ccl_mode": False, "is_fl_ps_mode": False,
    "with_coordinator": False, "qat": False, "split_data": True,
}
_DEGREES = ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree", "ep_degree",
            "moe_sharding_degree", "cp_degree", "cp_sharding_degree")
_HYBRID_ORDER = ["dp", "pp", "sharding", "sep", "mp"]


def _check_value(path, default, value):
    """value converted to default's type; TypeError naming DistributedStrategy.<path> otherwise."""
    if isinstance(default, dict):
        if not isinstance(value, dict):
            raise TypeError(f"DistributedStrategy.{path} must be a dict, got {value!r}")
        return _merge(path, default, {}, value)
    if isinstance(default, list):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"DistributedStrategy.{path} must be a list, got {value!r}")
        return [_check_value(path, default[0], v) for v in value]
    kind = type(default)
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, str))
    if not ok:
        raise TypeError(f"DistributedStrategy.{path} must be a {kind.__name__}, got {value!r}")
    return kind(value)


def _merge(where, schema, current, config):
    """current (a full config) updated from the partial config, each value checked."""
    out = copy.deepcopy(current) if current else _defaults(schema)
    for key, value in config.items():
        if key not in schema:
            raise ValueError(f"DistributedStrategy.{where}: unknown key {key!r} (known: {sorted(schema)})")
        out[key] = _check_value(f"{where}.{key}", schema[key], value)
    return out


def _defaults(schema):
    return {k: (_defaults(v) if isinstance(v, dict) else [] if isinstance(v, list) else v)
            for k, v in schema.items()}


class DistributedStrategy:
    """Paddle's fleet.DistributedStrategy: the parallel configuration fleet.init reads."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_FIELDS))
        object.__setattr__(self, "_configs", {k: _defaults(v) for k, v in _CONFIGS.items()})
        object.__setattr__(self, "hybrid_parallel_order", list(_HYBRID_ORDER))

    def __getattr__(self, name):
        d = self.__dict__
        if name in _FIELDS:
            return d["_values"][name]
        if name in _CONFIGS:
            return copy.deepcopy(d["_configs"][name])
        raise AttributeError(f"'DistributedStrategy' object has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _FIELDS:
            self._values[name] = _check_value(name, _FIELDS[name], value)
        elif name in _CONFIGS:
            if name == "build_strategy" and not isinstance(value, dict):  # a static.BuildStrategy
                value = {k: getattr(value, k) for k in _CONFIGS[name] if hasattr(value, k)}
            if not isinstance(value, dict):
                raise TypeError(f"DistributedStrategy.{name} must be a dict, got {type(value).__name__}")
            if name == "hybrid_configs":
                for key in _DEGREES:
                    v = value.get(key)
                    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or
                                          (v < 1 and not (key == "dp_degree" and v == -1))):
                        raise ValueError(f"DistributedStrategy.hybrid_configs: {key} must be a positive "
                                         f"int (dp_degree may be -1: the rest of the world), got {v!r}")
                order = value.get("order")
                if order is not None:
                    if sorted(order) != sorted(_HYBRID_ORDER):
                        raise ValueError(f"DistributedStrategy.hybrid_configs: order must be a permutation "
                                         f"of {_HYBRID_ORDER}, got {order!r}")
                    object.__setattr__(self, "hybrid_parallel_order", list(order))
                    value = {k: v for k, v in value.items() if k != "order"}
            self._configs[name] = _merge(name, _CONFIGS[name], self._configs[name], value)
        elif name == "hybrid_parallel_order":
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"DistributedStrategy has no field {name!r} (a typo? fields: "
                                 f"{sorted(_FIELDS)} and {sorted(_CONFIGS)})")

    @property
    def _hybrid(self):  # the live hybrid degrees fleet.init completes (dp_degree -1 -> the rest)
        return self._configs["hybrid_configs"]

    def __deepcopy__(self, memo):
        new = DistributedStrategy()
        new.__dict__["_values"].update(self._values)
        new.__dict__["_configs"].update(copy.deepcopy(self._configs, memo))
        new.__dict__["hybrid_parallel_order"] = list(self.hybrid_parallel_order)
        return new

    def _changed(self):
        """(field, value) pairs that differ from the defaults, configs as nested dicts."""
        def diff(schema, cur):
            out = {}
            for k, v in cur.items():
                d = schema[k]
                if isinstance(d, dict):
                    sub = diff(d, v)
                    if sub:
                        out[k] = sub
                elif v != (_defaults({k: d})[k]):
                    out[k] = v
            return out
        out = diff(_FIELDS, self._values)
        out.update(diff(_CONFIGS, self._configs))
        return out

    def __repr__(self):
        return f"DistributedStrategy({self._changed()})"

    def __eq__(self, other):
        return (isinstance(other, DistributedStrategy) and self._values == other._values and
                self._configs == other._configs)

    __hash__ = None

    def save_to_prototxt(self, output):
        """Writes the fields that differ from their defaults in protobuf text format."""
        from .prototxt import dump
        with open(output, "w") as f:
            f.write(dump(self._changed()))

    def load_from_prototxt(self, pb_file):
        """Reads a file written by save_to_prototxt (or Paddle's): its fields replace this
        strategy's; fields it does not name keep their values."""
        from .prototxt import parse
        with open(pb_file) as f:
            text = f.read()
        schema = dict(_FIELDS, **_CONFIGS)
        for key, value in parse(text, schema, pb_file).items():
            if key in _CONFIGS:
                self._configs[key] = _merge(key, _CONFIGS[key], self._configs[key], value)
            else:
                setattr(self, key, value)
