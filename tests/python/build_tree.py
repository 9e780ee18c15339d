"""Where the tests find what the C++ build made besides the Python package (the predictor's
example programs, the sample device's build): the build that scripts/dev_env.sh points the
tests at ($OAR_BUILD: a development or sanitizer build) first, else the pip build's trees
under build/ (scripts/setup.sh)."""
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dirs():
    """The build trees to look in, the one the running `oar` was built in first."""
    dirs = []
    own = os.environ.get("OAR_BUILD")
    if own and os.path.isdir(own):
        dirs.append(own)
    dirs += [d for d in sorted(glob.glob(os.path.join(ROOT, "build", "cp3*"))) if d not in dirs]
    return dirs


def built(relpath):
    """The path of `relpath` (e.g. 'inference/oar_run_model') in the first build tree that has
    it; an AssertionError naming the trees searched when none does."""
    dirs = build_dirs()
    for d in dirs:
        path = os.path.join(d, relpath)
        if os.path.exists(path):
            return path
    raise AssertionError(f"{relpath} was not built (searched {dirs or 'no build tree'}; "
                         "scripts/setup.sh builds it)")


def asan_runtime_loaded():
    """Whether AddressSanitizer's runtime is in this process (scripts/sanitize.sh preloads it).
    GCC 12's runtime has no fork handler for its own allocator's locks, so a fork while
    another thread allocates can hang the child inside ASan (Note [Fork safety]): tests that
    start worker processes use the 'forkserver' start method under it."""
    with open("/proc/self/maps") as f:
        return "libasan" in f.read()


def worker_start_method():
    """DataLoader(multiprocessing_context=...) for the tests' worker processes: the default
    (fork) except under ASan (asan_runtime_loaded): 'forkserver', whose server imports oar
    once, so each worker starts as fast as a forked one."""
    if not asan_runtime_loaded():
        return None
    import multiprocessing

    multiprocessing.set_forkserver_preload(["oar"])  # before the server starts, else no-op
    return "forkserver"
