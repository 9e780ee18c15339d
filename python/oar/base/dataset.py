"""paddle.base.dataset: datasets of slot-format text files for static-graph training
(DatasetFactory, InMemoryDataset, QueueDataset, FileInstantDataset, BoxPSDataset).

Each file is read through the pipe command (a shell command with the file on its standard
input, "cat" by default); each output line is one instance in Paddle's MultiSlot format:
for every slot of the description, in order, a count n followed by n values. The slots are
the variables given to set_use_var (float32 -> "float", int64 -> "uint64", int32 ->
"uint32"); a variable with lod_level 0 is a dense slot whose count must equal the product
of its shape after the batch dim. Executor.train_from_dataset runs a program over the
batches (Note: on one process the parameter-server parts of Paddle's API - fleet's global
shuffle, pv merging, graph sampling - reduce to their single-trainer meaning)."""
import random
import subprocess
import threading

import numpy as np

from .data_feed_desc import FeedDescMessage, Slot

_MAX_LINE_VALUES = 1 << 24  # a count beyond this in one slot is a corrupt line, not data


def _check_int(value, who, arg, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{who}: {arg} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_str(value, who, arg):
    if not isinstance(value, str):
        raise TypeError(f"{who}: {arg} must be a str, got {type(value).__name__}")
    return value


class DatasetFactory:
    """Makes a dataset by its class name."""

    def __init__(self):
        pass

    def create_dataset(self, datafeed_class="QueueDataset"):
        """A new dataset of class datafeed_class: "QueueDataset" (default), "InMemoryDataset",
        "FileInstantDataset" or "BoxPSDataset"."""
        cls = _CLASSES.get(datafeed_class) if isinstance(datafeed_class, str) else None
        if cls is None:
            raise ValueError(f"DatasetFactory.create_dataset: datafeed class {datafeed_class!r} does not exist "
                             f"(classes: {sorted(_CLASSES)})")
        return cls()


class DatasetBase:
    """What every dataset has: the files, the slots, the pipe command, batch size, threads."""

    _feed_name = "MultiSlotDataFeed"

    def __init__(self):
        self.proto_desc = FeedDescMessage()
        self.proto_desc.name = self._feed_name
        self.proto_desc.pipe_command = "cat"
        self.thread_num = 1
        self.filelist = []
        self._use_vars = []
        self.hdfs_config = None
        self.download_cmd = None
        self.fea_eval = False
        self.record_candidate_size = None

    def _who(self, method):
        return f"{type(self).__name__}.{method}"

    def set_pipe_command(self, pipe_command):
        """The shell command each file is piped through (its stdout: MultiSlot lines)."""
        self.proto_desc.pipe_command = _check_str(pipe_command, self._who("set_pipe_command"), "pipe_command")

    def set_so_parser_name(self, so_parser_name):
        self.proto_desc.so_parser_name = _check_str(so_parser_name, self._who("set_so_parser_name"),
                                                    "so_parser_name")

    def set_rank_offset(self, rank_offset):
        self.proto_desc.rank_offset = _check_str(rank_offset, self._who("set_rank_offset"), "rank_offset")

    def set_fea_eval(self, record_candidate_size, fea_eval=True):
        """Feature evaluation: keeps record_candidate_size instances for slots_shuffle."""
        self.record_candidate_size = _check_int(record_candidate_size, self._who("set_fea_eval"),
                                                "record_candidate_size", 1)
        self.fea_eval = bool(fea_eval)

    def slots_shuffle(self, slots):
        """Shuffles the values of these slots across the instances in memory (feature
        evaluation: how much the model depends on them)."""
        if isinstance(slots, str) or not isinstance(slots, (list, tuple, set)):
            raise TypeError(f"{self._who('slots_shuffle')}: slots must be a list of slot names, got "
                            f"{type(slots).__name__}")
        self._shuffled_slots = {str(s) for s in slots}
        memory = getattr(self, "_memory", None)
        if not self.fea_eval or not memory:
            return
        names = [s.name for s in self.proto_desc.slots if s.is_used]
        for j, name in enumerate(names):
            if name in self._shuffled_slots:
                column = [inst[j] for inst in memory]
                random.shuffle(column)
                for inst, v in zip(memory, column):
                    inst[j] = v

    def set_batch_size(self, batch_size):
        self.proto_desc.batch_size = _check_int(batch_size, self._who("set_batch_size"), "batch_size", 1)

    def set_pv_batch_size(self, pv_batch_size):
        self.proto_desc.pv_batch_size = _check_int(pv_batch_size, self._who("set_pv_batch_size"),
                                                   "pv_batch_size", 1)

    def set_thread(self, thread_num):
        self.thread_num = _check_int(thread_num, self._who("set_thread"), "thread_num", 1)
        self.proto_desc.thread_num = self.thread_num

    def set_filelist(self, filelist):
        if isinstance(filelist, str) or not isinstance(filelist, (list, tuple)):
            raise TypeError(f"{self._who('set_filelist')}: filelist must be a list of paths, got "
                            f"{type(filelist).__name__}")
        for f in filelist:
            _check_str(f, self._who("set_filelist"), "each file")
        self.filelist = list(filelist)

    def set_input_type(self, input_type):
        self.proto_desc.input_type = _check_int(input_type, self._who("set_input_type"), "input_type", 0)

    def set_use_var(self, var_list):
        """The program inputs the slots feed, in the files' slot order."""
        import oar

        types = {oar.float32: "float", oar.int64: "uint64", oar.int32: "uint32"}
        slots = []
        for v in var_list:
            kind = types.get(getattr(v, "dtype", None))
            if kind is None:
                raise ValueError(f"{self._who('set_use_var')}: variable '{getattr(v, 'name', v)}' has dtype "
                                 f"{getattr(v, 'dtype', type(v).__name__)}; datasets support float32, int32 and int64")
            dense = getattr(v, "lod_level", 0) == 0
            shape = list(_declared_dims(v)) if dense else []
            slots.append(Slot(v.name, kind, dense, True, shape))
        self.proto_desc.slots.extend(slots)
        self._use_vars.extend(var_list)

    def set_hdfs_config(self, fs_name, fs_ugi):
        self.hdfs_config = (_check_str(fs_name, self._who("set_hdfs_config"), "fs_name"),
                            _check_str(fs_ugi, self._who("set_hdfs_config"), "fs_ugi"))

    def set_download_cmd(self, download_cmd):
        """The command that fetches each file (its path appended) instead of reading it."""
        self.download_cmd = _check_str(download_cmd, self._who("set_download_cmd"), "download_cmd")

    def desc(self):
        """The data feed description (protobuf text format)."""
        return self.proto_desc.text()

    # ---- reading
    def _read_file(self, path):
        cmd = self.proto_desc.pipe_command
        if self.download_cmd:
            src = subprocess.run(f"{self.download_cmd} {path}", shell=True, capture_output=True, check=False)
            data = src.stdout
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise ValueError(f"{type(self).__name__}: cannot read file '{path}': {e.strerror}") from None
        out = subprocess.run(cmd, shell=True, input=data, capture_output=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{type(self).__name__}: pipe command {cmd!r} failed on '{path}' (exit "
                               f"{out.returncode}): {out.stderr.decode(errors='replace')[-300:]}")
        return [self._parse_line(line, path, n + 1)
                for n, line in enumerate(out.stdout.decode().splitlines()) if line.strip()]

    def _parse_line(self, line, path, lineno):
        toks, pos, inst = line.split(), 0, []
        for s in self.proto_desc.slots:
            where = f"{type(self).__name__}: {path}:{lineno}, slot '{s.name}'"
            if pos >= len(toks):
                raise ValueError(f"{where}: the line ends before this slot")
            try:
                n = int(toks[pos])
            except ValueError:
                raise ValueError(f"{where}: expected a value count, got {toks[pos]!r}") from None
            if n < 1 or n > _MAX_LINE_VALUES or pos + 1 + n > len(toks):
                raise ValueError(f"{where}: count {n} does not fit the line ({len(toks) - pos - 1} values left)")
            vals = toks[pos + 1:pos + 1 + n]
            pos += 1 + n
            if not s.is_used:
                continue
            try:
                arr = np.array([float(t) for t in vals], "float32") if s.type == "float" else \
                    np.array([int(t) for t in vals], "int64" if s.type == "uint64" else "int32")
            except ValueError:
                raise ValueError(f"{where}: values {vals[:5]} are not {s.type}") from None
            if s.is_dense:
                want = int(np.prod([d for d in s.shape[1:]])) if len(s.shape) > 1 else 1
                if any(d < 0 for d in s.shape[1:]) or n != want:
                    raise ValueError(f"{where}: a dense slot of shape {s.shape} takes {want} values, got {n}")
            inst.append(arr)
        if pos != len(toks):
            raise ValueError(f"{type(self).__name__}: {path}:{lineno}: {len(toks) - pos} values after the last slot")
        return inst

    def _instances(self):
        for path in self.filelist:
            yield from self._read_file(path)

    def _batches(self, instances):
        """Feed dicts of batch_size instances (the last batch may be smaller)."""
        used = [s for s in self.proto_desc.slots if s.is_used]
        if not used:
            raise ValueError(f"{type(self).__name__}: no slots to feed: call set_use_var first")
        bs, batch = self.proto_desc.batch_size, []
        for inst in instances:
            batch.append(inst)
            if len(batch) == bs:
                yield self._feed(used, batch)
                batch = []
        if batch:
            yield self._feed(used, batch)

    @staticmethod
    def _feed(used, batch):
        feed = {}
        for j, s in enumerate(used):
            if s.is_dense:
                feed[s.name] = np.stack([inst[j] for inst in batch]).reshape([len(batch)] + list(s.shape[1:]))
            else:  # a sparse slot: every instance's values, one per row
                feed[s.name] = np.concatenate([inst[j] for inst in batch]).reshape(-1, 1)
        return feed

    def _feeds(self):
        return self._batches(self._instances())


def _declared_dims(v):
    from ..static import _program

    return _program._dims(v)


class InMemoryDataset(DatasetBase):
    """Loads its files into memory (load_into_memory), where they can be shuffled."""

    _feed_name = "MultiSlotInMemoryDataFeed"

    def __init__(self):
        super().__init__()
        self._memory = None
        self._preload = None
        self.queue_num = None
        self.parse_ins_id = self.parse_content = self.parse_logkey = False
        self.merge_by_sid = True
        self.enable_pv_merge = self.merge_by_lineid = False
        self.merge_size = 2
        self.fleet_send_batch_size = self.fleet_send_sleep_seconds = None
        self.pass_id = 0
        self.date = None
        self.graph_config = None
        self.feed_type = None
        self.current_phase = 1

    def set_feed_type(self, data_feed_type):
        self.feed_type = _check_str(data_feed_type, self._who("set_feed_type"), "data_feed_type")

    def set_queue_num(self, queue_num):
        self.queue_num = _check_int(queue_num, self._who("set_queue_num"), "queue_num", 1)

    def set_parse_ins_id(self, parse_ins_id):
        self.parse_ins_id = bool(parse_ins_id)

    def set_parse_content(self, parse_content):
        self.parse_content = bool(parse_content)

    def set_parse_logkey(self, parse_logkey):
        self.parse_logkey = bool(parse_logkey)

    def set_merge_by_sid(self, merge_by_sid):
        self.merge_by_sid = bool(merge_by_sid)

    def set_enable_pv_merge(self, enable_pv_merge):
        self.enable_pv_merge = bool(enable_pv_merge)

    def set_merge_by_lineid(self, merge_size=2):
        self.merge_by_lineid = True
        self.merge_size = _check_int(merge_size, self._who("set_merge_by_lineid"), "merge_size", 1)

    def set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        self.fleet_send_batch_size = _check_int(fleet_send_batch_size, self._who("set_fleet_send_batch_size"),
                                                "fleet_send_batch_size", 1)

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        self.fleet_send_sleep_seconds = _check_int(fleet_send_sleep_seconds,
                                                   self._who("set_fleet_send_sleep_seconds"),
                                                   "fleet_send_sleep_seconds", 0)

    def set_date(self, date):
        """The data's date, "YYYYMMDD"."""
        import datetime

        try:
            datetime.datetime.strptime(_check_str(date, self._who("set_date"), "date"), "%Y%m%d")
        except ValueError:
            raise ValueError(f"{self._who('set_date')}: date must be 'YYYYMMDD', got {date!r}") from None
        self.date = date

    def set_pass_id(self, pass_id):
        self.pass_id = _check_int(pass_id, self._who("set_pass_id"), "pass_id", 0)

    def get_pass_id(self):
        return self.pass_id

    def set_graph_config(self, config):
        if not isinstance(config, dict):
            raise TypeError(f"{self._who('set_graph_config')}: config must be a dict, got {type(config).__name__}")
        self.graph_config = dict(config)

    def set_current_phase(self, current_phase):
        self.current_phase = _check_int(current_phase, self._who("set_current_phase"), "current_phase", 0)

    def _loaded(self, who):
        if self._preload is not None:
            self.wait_preload_done()
        if self._memory is None:
            raise RuntimeError(f"{self._who(who)}: no data in memory: call load_into_memory() first")
        return self._memory

    def preprocess_instance(self):
        self._loaded("preprocess_instance")

    def postprocess_instance(self):
        self._loaded("postprocess_instance")

    def load_into_memory(self, is_shuffle=False):
        """Reads every file (through the pipe command) into memory."""
        self._memory = list(self._instances())
        if is_shuffle:
            self.local_shuffle()

    def preload_into_memory(self, thread_num=None):
        """load_into_memory in the background; wait_preload_done waits for it."""
        result = {}

        def work():
            try:
                result["memory"] = list(self._instances())
            except Exception as e:  # noqa: BLE001 - re-raised by wait_preload_done
                result["error"] = e
        t = threading.Thread(target=work, daemon=True)
        t.start()
        self._preload = (t, result)

    def wait_preload_done(self):
        if self._preload is None:
            return
        t, result = self._preload
        t.join()
        self._preload = None
        if "error" in result:
            raise result["error"]
        self._memory = result["memory"]

    def local_shuffle(self):
        random.shuffle(self._loaded("local_shuffle"))

    def global_shuffle(self, fleet=None, thread_num=12):
        """Shuffles across trainers; with one trainer, the local shuffle."""
        self.local_shuffle()

    def release_memory(self):
        self._memory = None

    def get_memory_data_size(self, fleet=None):
        return len(self._memory or [])

    def get_shuffle_data_size(self, fleet=None):
        return len(self._memory or [])

    def get_pv_data_size(self):
        return len(self._memory or [])

    def _feeds(self):
        return self._batches(self._loaded("train_from_dataset"))


class QueueDataset(DatasetBase):
    """Streams its files (no shuffling: load them into an InMemoryDataset for that)."""

    def local_shuffle(self):
        raise NotImplementedError("QueueDataset does not support local shuffle: use InMemoryDataset")

    def global_shuffle(self, fleet=None):
        raise NotImplementedError("QueueDataset does not support global shuffle: use InMemoryDataset")


class FileInstantDataset(DatasetBase):
    """Streams its files instance by instance."""

    _feed_name = "MultiSlotFileInstantDataFeed"

    def local_shuffle(self):
        raise NotImplementedError("FileInstantDataset does not support local shuffle: use InMemoryDataset")

    def global_shuffle(self, fleet=None):
        raise NotImplementedError("FileInstantDataset does not support global shuffle: use InMemoryDataset")


class BoxPSDataset(InMemoryDataset):
    """An InMemoryDataset trained in passes (begin_pass / end_pass)."""

    def __init__(self):
        super().__init__()
        self.in_pass = False
        self.passes_done = 0

    def begin_pass(self):
        if self.in_pass:
            raise RuntimeError("BoxPSDataset.begin_pass: a pass is already running (call end_pass first)")
        self.in_pass = True

    def end_pass(self, need_save_delta):
        self.in_pass = False
        self.passes_done += 1
        self.need_save_delta = bool(need_save_delta)


class DatasetLoader:
    """DataLoader.from_dataset: iterates a dataset's feed dicts in groups of one per place;
    with drop_last, a batch smaller than batch_size and an incomplete group are dropped."""

    def __init__(self, dataset, places, drop_last=True):
        who = "DataLoader.from_dataset"
        if not isinstance(dataset, DatasetBase):
            raise TypeError(f"{who}: dataset must be a slot-file dataset (InMemoryDataset, QueueDataset, ...), "
                            f"got {type(dataset).__name__}")
        places = list(places) if isinstance(places, (list, tuple)) else [places]
        if not places:
            raise ValueError(f"{who}: places must name at least one place, got {places!r}")
        self.dataset, self.places, self.drop_last = dataset, places, bool(drop_last)

    def __iter__(self):
        group = []
        for feed in self.dataset._feeds():
            if self.drop_last and len(next(iter(feed.values()))) < self.dataset.proto_desc.batch_size:
                continue
            group.append(feed)
            if len(group) == len(self.places):
                yield group
                group = []
        if group and not self.drop_last:
            yield group

    def __call__(self):
        return iter(self)


_CLASSES = {c.__name__: c for c in (QueueDataset, InMemoryDataset, FileInstantDataset, BoxPSDataset)}


def run_from_dataset(executor, program, dataset, scope, fetch_list, fetch_info, print_period, for_test):
    """Executor.train_from_dataset / infer_from_dataset: runs `program` on each batch."""
    if not isinstance(dataset, DatasetBase):
        raise TypeError(f"Executor.{'infer' if for_test else 'train'}_from_dataset: dataset must be made by "
                        f"DatasetFactory().create_dataset, got {type(dataset).__name__}")
    fetch_list = list(fetch_list or [])
    fetch_info = list(fetch_info or [getattr(f, "name", str(f)) for f in fetch_list])
    if len(fetch_info) != len(fetch_list):
        raise ValueError(f"Executor.train_from_dataset: fetch_info has {len(fetch_info)} names for "
                         f"{len(fetch_list)} fetched variables")
    if print_period < 1:
        raise ValueError(f"Executor.train_from_dataset: print_period must be >= 1, got {print_period}")
    if for_test and program is not None:
        program = program.clone(for_test=True)
    for step, feed in enumerate(dataset._feeds()):
        outs = executor.run(program, feed=feed, fetch_list=fetch_list, scope=scope)
        if fetch_list and step % print_period == 0:
            print(", ".join(f"{n}: {np.asarray(o)}" for n, o in zip(fetch_info, outs)))
