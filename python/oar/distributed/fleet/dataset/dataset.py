"""Paddle's paddle.distributed datasets (InMemoryDataset, QueueDataset, ...): the
keyword-argument API of paddle.distributed.fleet.dataset (init, update_settings,
_init_distributed_settings and the private _set_* setters) over the reading, parsing,
shuffling and batching of oar.base.dataset, whose objects Executor.train_from_dataset runs.

    dataset = oar.distributed.InMemoryDataset()
    dataset.init(batch_size=32, use_var=[x, y], pipe_command="python gen.py")
    dataset.set_filelist(["a.txt", "b.txt"])
    dataset.load_into_memory()
    exe.train_from_dataset(main_program, dataset)

The parameter-server parts (a global shuffle across trainers, pv merging, BoxPS passes)
reduce to their one-trainer meaning, as in oar.base.dataset."""
from ....base import dataset as _base

__all__ = []

_BASE_KEYS = ("batch_size", "thread_num", "use_var", "pipe_command", "input_type", "fs_name", "fs_ugi",
              "download_cmd")


def _unknown(who, kwargs, known):
    bad = sorted(set(kwargs) - set(known))
    if bad:
        raise TypeError(f"{who}: unknown settings {bad} (known: {sorted(known)})")


class _Settings:
    """The keyword API shared by every dataset class (mixed in before the base class)."""

    def init(self, batch_size=1, thread_num=1, use_var=None, pipe_command="cat", input_type=0, fs_name="",
             fs_ugi="", download_cmd="cat"):
        """Sets a new dataset up: batch size, reader threads, the slot variables (in the
        files' slot order), the pipe command, the input type and the file system."""
        self._set_batch_size(batch_size)
        self._set_thread(thread_num)
        self._set_use_var(use_var or [])
        self._set_pipe_command(pipe_command)
        self._set_input_type(input_type)
        self._set_hdfs_config(fs_name, fs_ugi)
        self._set_download_cmd(download_cmd)

    def _set_use_var(self, var_list):
        if isinstance(var_list, (str, bytes)) or not isinstance(var_list, (list, tuple)):
            raise TypeError(f"{self._who('init')}: use_var must be a list of static variables, got "
                            f"{type(var_list).__name__}")
        del self.proto_desc.slots[:]  # the slots are replaced, not added to
        self._use_vars = []
        self.set_use_var(var_list)

    def _set_hdfs_config(self, fs_name, fs_ugi):
        if fs_name or fs_ugi:
            self.set_hdfs_config(fs_name, fs_ugi)

    def _set_download_cmd(self, download_cmd):
        _base._check_str(download_cmd, self._who("init"), "download_cmd")
        # "cat" (Paddle's default) reads the file as it is; another command fetches it
        self.download_cmd = None if download_cmd == "cat" else download_cmd

    def _desc(self):
        return self.desc()


for _name in ("pipe_command", "batch_size", "thread", "input_type", "fea_eval", "queue_num", "parse_ins_id",
              "parse_content", "fleet_send_batch_size", "fleet_send_sleep_seconds", "merge_by_lineid",
              "feed_type", "rank_offset", "pv_batch_size", "parse_logkey", "merge_by_sid", "enable_pv_merge"):
    def _alias(self, *args, _n=_name, **kwargs):
        return getattr(self, "set_" + _n)(*args, **kwargs)
    _alias.__name__ = "_set_" + _name
    setattr(_Settings, "_set_" + _name, _alias)
del _name


class DatasetBase(_Settings, _base.DatasetBase):
    """What every dataset has (Paddle's paddle.distributed.fleet.DatasetBase)."""


class QueueDataset(_Settings, _base.QueueDataset):
    """Streams its files through the pipe command at training time."""


class FileInstantDataset(_Settings, _base.FileInstantDataset):
    """Streams its files instance by instance."""


class InMemoryDataset(_Settings, _base.InMemoryDataset):
    """Loads its files into memory (load_into_memory), where they can be shuffled."""

    _DIST_KEYS = ("merge_size", "parse_ins_id", "parse_content", "fleet_send_batch_size",
                  "fleet_send_sleep_seconds", "fea_eval", "candidate_size")

    def init(self, **kwargs):
        """DatasetBase.init's settings, plus data_feed_type and queue_num."""
        _unknown(self._who("init"), kwargs, _BASE_KEYS + ("data_feed_type", "queue_num"))
        super().init(**{k: v for k, v in kwargs.items() if k in _BASE_KEYS})
        self.set_feed_type(kwargs.get("data_feed_type", "MultiSlotInMemoryDataFeed"))
        if kwargs.get("queue_num", -1) > 0:
            self.set_queue_num(kwargs["queue_num"])

    def _init_distributed_settings(self, **kwargs):
        """Settings for many trainers: merge_size (instances of one line id merged), parse_ins_id,
        parse_content, fleet_send_batch_size / _sleep_seconds, fea_eval with candidate_size."""
        _unknown(self._who("_init_distributed_settings"), kwargs, self._DIST_KEYS)
        self._apply(kwargs)

    def update_settings(self, **kwargs):
        """Changes any setting of init or _init_distributed_settings."""
        _unknown(self._who("update_settings"), kwargs, _BASE_KEYS + ("data_feed_type", "queue_num") + self._DIST_KEYS)
        for key, setter in (("pipe_command", self.set_pipe_command), ("batch_size", self.set_batch_size),
                            ("thread_num", self.set_thread), ("use_var", self._set_use_var),
                            ("input_type", self.set_input_type), ("download_cmd", self._set_download_cmd),
                            ("data_feed_type", self.set_feed_type), ("queue_num", self.set_queue_num)):
            if key in kwargs:
                setter(kwargs[key])
        if "fs_name" in kwargs or "fs_ugi" in kwargs:
            self._set_hdfs_config(kwargs.get("fs_name", ""), kwargs.get("fs_ugi", ""))
        self._apply(kwargs)

    def _apply(self, kwargs):
        if kwargs.get("merge_size", -1) > 0:
            self.set_merge_by_lineid(kwargs["merge_size"])
        if "parse_ins_id" in kwargs:
            self.set_parse_ins_id(kwargs["parse_ins_id"])
        if "parse_content" in kwargs:
            self.set_parse_content(kwargs["parse_content"])
        if kwargs.get("fleet_send_batch_size"):
            self.set_fleet_send_batch_size(kwargs["fleet_send_batch_size"])
        if kwargs.get("fleet_send_sleep_seconds"):
            self.set_fleet_send_sleep_seconds(kwargs["fleet_send_sleep_seconds"])
        if kwargs.get("fea_eval"):
            self.set_fea_eval(kwargs.get("candidate_size", 10000), True)


class BoxPSDataset(InMemoryDataset, _base.BoxPSDataset):
    """An InMemoryDataset trained in passes (begin_pass / end_pass); init also takes
    rank_offset, pv_batch_size, parse_logkey, merge_by_sid and enable_pv_merge."""

    _BOX_KEYS = ("rank_offset", "pv_batch_size", "parse_logkey", "merge_by_sid", "enable_pv_merge")

    def init(self, **kwargs):
        _unknown(self._who("init"), kwargs, _BASE_KEYS + ("data_feed_type", "queue_num") + self._BOX_KEYS)
        super().init(**{k: v for k, v in kwargs.items() if k not in self._BOX_KEYS})
        for key in self._BOX_KEYS:
            if key in kwargs:
                getattr(self, "set_" + key)(kwargs[key])
