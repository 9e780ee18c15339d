"""The PSLib fleet for one trainer process with no parameter servers: the queries answer
for that single worker, and the training calls run locally."""


class PSLib:
    """Fleet of one worker (rank 0 of 1) and no servers."""

    def __init__(self):
        self._initialized = False

    def init(self, role_maker=None):
        self._initialized = True

    def is_worker(self):
        return True

    def is_server(self):
        return False

    def is_first_worker(self):
        return True

    def worker_index(self):
        return 0

    def worker_num(self):
        return 1

    def server_num(self):
        return 0

    def worker_endpoints(self, to_string=False):
        return "" if to_string else []

    def server_endpoints(self, to_string=False):
        return "" if to_string else []

    def barrier_worker(self):
        """Waits for every worker: there is only this one."""

    def init_worker(self):
        self._initialized = True

    def stop_worker(self):
        self._initialized = False

    def init_server(self, model_dir=None, **kwargs):
        raise RuntimeError("PSLib fleet: this process runs one trainer and no parameter server; init_server needs "
                           "a parameter-server deployment")

    def run_server(self):
        raise RuntimeError("PSLib fleet: this process runs one trainer and no parameter server; run_server needs "
                           "a parameter-server deployment")


fleet = PSLib()
