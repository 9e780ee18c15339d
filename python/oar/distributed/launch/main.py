"""The launcher: one worker process per rank, Paddle's environment for each, a log per worker
(log_dir/workerlog.N), and a supervisor that stops the job when a worker dies.

    python -m oar.distributed.launch --nproc_per_node 2 train.py --lr 0.1

When a worker exits non-zero or is killed, the others are stopped within seconds (SIGTERM,
then SIGKILL), and the whole group is started again, up to --max_restart times; after that the
launcher exits non-zero naming the rank and its exit code or signal. Several nodes meet through
a TCP store at --master, hosted by the launcher of node rank 0; the workers' own store then
takes a port that launcher finds free and publishes there. SLURM (SLURM_NNODES, SLURM_NODEID) and OpenMPI (OMPI_COMM_WORLD_SIZE,
OMPI_COMM_WORLD_RANK, one launcher per node) fill in --nnodes and --rank when not given."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

_POLL_S = 0.1
_TERM_GRACE_S = 3.0


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m oar.distributed.launch",
        description="Start a distributed Oar job: one process per rank (Paddle's launcher).")
    p.add_argument("--nproc_per_node", type=int, default=None,
                   help="worker processes on this node (default: one per --devices entry, else 1)")
    p.add_argument("--nnodes", type=int, default=None, help="number of nodes (default 1)")
    p.add_argument("--master", default=None,
                   help="host:port of the rendezvous store (default: 127.0.0.1 and a free port)")
    p.add_argument("--rank", type=int, default=None, help="this node's rank (default 0)")
    p.add_argument("--devices", "--gpus", dest="devices", default=None,
                   help="comma-separated device ids, one per worker")
    p.add_argument("--log_dir", default="log", help="where workerlog.N go (default ./log)")
    p.add_argument("--max_restart", type=int, default=3,
                   help="restarts of the whole group after a worker fails (default 3)")
    p.add_argument("--job_id", default="default", help="names the job in logs and store keys")
    p.add_argument("training_script", help="the script each worker runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _from_scheduler(args):
    """--nnodes/--rank from SLURM or OpenMPI when the user gave none."""
    env = os.environ
    if args.nnodes is None:
        for key in ("SLURM_NNODES", "OMPI_COMM_WORLD_SIZE"):
            if env.get(key, "").isdigit():
                args.nnodes = int(env[key])
                break
    if args.rank is None:
        for key in ("SLURM_NODEID", "OMPI_COMM_WORLD_RANK"):
            if env.get(key, "").isdigit():
                args.rank = int(env[key])
                break
    if args.master is None and env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        args.master = f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    args.nnodes = 1 if args.nnodes is None else args.nnodes
    args.rank = 0 if args.rank is None else args.rank


def _free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _local_ip(master_host):
    """The address of the interface that reaches the master (127.0.0.1 for loopback)."""
    if master_host.startswith("127.") or master_host == "localhost":
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((master_host, 1))  # UDP: no packet is sent
        return s.getsockname()[0]


def _check(args):
    errors = []
    if args.nproc_per_node is not None and args.nproc_per_node < 1:
        errors.append(f"--nproc_per_node must be >= 1, got {args.nproc_per_node}")
    if args.nnodes < 1:
        errors.append(f"--nnodes must be >= 1, got {args.nnodes}")
    if not 0 <= args.rank < args.nnodes:
        errors.append(f"--rank must be in [0, --nnodes={args.nnodes}), got {args.rank}")
    if args.max_restart < 0:
        errors.append(f"--max_restart must be >= 0, got {args.max_restart}")
    if args.nnodes > 1 and not args.master:
        errors.append("--master host:port is required with --nnodes > 1")
    if args.master:
        host, _, port = args.master.rpartition(":")
        if not host or not port.isdigit():
            errors.append(f"--master must be host:port, got {args.master!r}")
    if args.devices and args.nproc_per_node and len(args.devices.split(",")) < args.nproc_per_node:
        errors.append(f"--devices {args.devices!r} names fewer devices than --nproc_per_node "
                      f"{args.nproc_per_node}")
    if not os.path.exists(args.training_script):
        errors.append(f"training script {args.training_script!r} does not exist")
    if errors:
        raise SystemExit("oar.distributed.launch: " + "; ".join(errors))


def _endpoints(args, nproc, restart):
    """(master for the workers, every rank's endpoint): one node picks free local ports;
    several nodes exchange their addresses through a store at --master."""
    if args.nnodes == 1:
        host = args.master.rpartition(":")[0] if args.master else "127.0.0.1"
        ports = [_free_port(host) for _ in range(nproc)]
        master = args.master or f"{host}:{ports[0]}"
        return master, [f"{host}:{p}" for p in ports]
    from ... import _C
    host, _, port = args.master.rpartition(":")
    if not hasattr(_endpoints, "store"):
        _endpoints.store = _C.distributed.TCPStore(host, int(port), args.rank == 0, 1800.0)
    store = _endpoints.store
    me = _local_ip(host)
    mine = ",".join(f"{me}:{_free_port(me)}" for _ in range(nproc))
    prefix = f"launch/{args.job_id}/{restart}/"
    if args.rank == 0:
        # The workers' store: a port free on node 0 now, published to every node. A fixed
        # one (--master's port + 1) could be the local port of a live connection, which no
        # listener can take: the workers then failed to meet (seen once in CI).
        store.set(prefix + "master", f"{host}:{_free_port(host)}".encode())
    store.set(prefix + str(args.rank), mine.encode())
    eps = []
    for r in range(args.nnodes):
        eps += store.get(prefix + str(r), 1800.0).decode().split(",")
    return store.get(prefix + "master", 1800.0).decode(), eps


class _Job:
    def __init__(self, args, nproc):
        self.args = args
        self.nproc = nproc
        self.procs = []
        self.logs = []

    def start(self, restart):
        args, nproc = self.args, self.nproc
        master, eps = _endpoints(args, nproc, restart)
        world = len(eps)
        devices = args.devices.split(",") if args.devices else [str(i) for i in range(nproc)]
        os.makedirs(args.log_dir, exist_ok=True)
        self.procs, self.logs = [], []
        for local in range(nproc):
            rank = args.rank * nproc + local
            env = dict(os.environ)
            env.update({
                "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(world),
                "PADDLE_TRAINER_ENDPOINTS": ",".join(eps), "PADDLE_CURRENT_ENDPOINT": eps[rank],
                "PADDLE_MASTER": master, "PADDLE_LOCAL_RANK": str(local),
                "PADDLE_RANK_IN_NODE": str(local), "PADDLE_LOCAL_SIZE": str(nproc),
                "PADDLE_NNODES": str(args.nnodes), "PADDLE_JOB_ID": args.job_id,
                "PADDLE_RESTART_COUNT": str(restart), "PADDLE_LOCAL_DEVICE_IDS": devices[local],
                "PADDLE_WORLD_DEVICE_IDS": ",".join(devices),
            })
            log_path = os.path.join(args.log_dir, f"workerlog.{local}")
            log = open(log_path, "a" if restart else "w")
            if restart:
                log.write(f"\n===== restart {restart} =====\n")
                log.flush()
            cmd = [sys.executable, "-u", args.training_script] + args.training_script_args
            # A session per worker: stopping it reaches the processes it started too.
            self.procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True))
            self.logs.append((log, log_path))
        _say(f"job {args.job_id}: started ranks {args.rank * nproc}..{args.rank * nproc + nproc - 1} "
             f"of {world} (master {master}, logs in {args.log_dir}/workerlog.N)")

    def poll(self):
        """(None, None) while running; ('ok', None) when all exited 0; ('failed', (local, code))."""
        codes = [p.poll() for p in self.procs]
        for local, code in enumerate(codes):
            if code is not None and code != 0:
                return "failed", (local, code)
        if all(c == 0 for c in codes):
            return "ok", None
        return None, None

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                _signal(p, signal.SIGTERM)
        deadline = time.monotonic() + _TERM_GRACE_S
        for p in self.procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(p, signal.SIGKILL)
                p.wait()
        for log, _ in self.logs:
            log.close()


def _signal(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _say(msg):
    print(f"[oar.distributed.launch] {msg}", file=sys.stderr, flush=True)


def _describe(code):
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def launch(argv=None):
    args = _parser().parse_args(argv)
    _from_scheduler(args)
    _check(args)
    nproc = args.nproc_per_node or (len(args.devices.split(",")) if args.devices else 1)
    job = _Job(args, nproc)
    stop = {"sig": None}

    def on_signal(sig, _frame):
        stop["sig"] = sig

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    restart = 0
    job.start(restart)
    while True:
        time.sleep(_POLL_S)
        if stop["sig"] is not None:
            job.stop()
            _say(f"stopped by signal {signal.Signals(stop['sig']).name}")
            return 128 + stop["sig"]
        state, info = job.poll()
        if state is None:
            continue
        if state == "ok":
            job.stop()
            _say(f"job {args.job_id}: all {nproc} workers finished")
            return 0
        local, code = info
        rank = args.rank * nproc + local
        log_path = job.logs[local][1]
        job.stop()
        _say(f"rank {rank} (pid {job.procs[local].pid}) {_describe(code)}; stopped the other workers. "
             f"Last lines of {log_path}:\n{_tail(log_path)}")
        if restart < args.max_restart:
            restart += 1
            _say(f"restarting the job ({restart} of --max_restart {args.max_restart})")
            job.start(restart)
            continue
        _say(f"job {args.job_id} failed: rank {rank} {_describe(code)} "
             f"(after {restart} restart{'s' if restart != 1 else ''})")
        return code if code > 0 else 128 - code
