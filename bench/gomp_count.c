// LD_PRELOAD shim: counts libgomp's GOMP_parallel calls that ask for more than one
// thread (an OpenMP region that may wake a worker), by the caller's shared object and
// symbol, then forwards to the real GOMP_parallel. Used by bench/omp_regions.py
// (Note [OpenMP regions in the CNN step], docs/notes/thread_pool.md):
//   gcc -O2 -shared -fPIC -o /tmp/gomp_count.so bench/gomp_count.c -ldl
//   LD_PRELOAD=/tmp/gomp_count.so python3 bench/omp_regions.py
// gomp_count_total() returns the count so far (gomp_count_all(): every call, any thread count), gomp_count_reset() zeroes it and
// gomp_count_dump() prints the callers to stderr (ctypes.CDLL(None) finds them).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef void (*gomp_parallel_fn)(void (*)(void*), void*, unsigned, unsigned);

#define MAX_SITES 256
static struct {
  void* ret;
  long n;
} sites[MAX_SITES];
static long total, all_calls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  static gomp_parallel_fn real;
  if (!real) real = (gomp_parallel_fn)dlsym(RTLD_NEXT, "GOMP_parallel");
  __atomic_add_fetch(&all_calls, 1, __ATOMIC_RELAXED);
  const int want = num_threads ? (int)num_threads : omp_get_max_threads();
  if (want > 1 && !omp_in_parallel()) {
    void* ret = __builtin_return_address(0);
    pthread_mutex_lock(&mu);
    ++total;
    for (int i = 0; i < MAX_SITES; ++i) {
      if (sites[i].ret == ret || sites[i].ret == NULL) {
        sites[i].ret = ret;
        ++sites[i].n;
        break;
      }
    }
    pthread_mutex_unlock(&mu);
  }
  real(fn, data, num_threads, flags);
}

long gomp_count_total(void) { return total; }

/// Every GOMP_parallel call, whatever its thread count.
long gomp_count_all(void) { return all_calls; }

void gomp_count_reset(void) {
  pthread_mutex_lock(&mu);
  total = 0;
  all_calls = 0;
  memset(sites, 0, sizeof sites);
  pthread_mutex_unlock(&mu);
}

void gomp_count_dump(void) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_SITES && sites[i].ret; ++i) {
    Dl_info info;
    const char *obj = "?", *sym = "?";
    if (dladdr(sites[i].ret, &info)) {
      if (info.dli_fname) obj = info.dli_fname;
      if (info.dli_sname) sym = info.dli_sname;
    }
    fprintf(stderr, "  %8ld  %s  %s\n", sites[i].n, strrchr(obj, '/') ? strrchr(obj, '/') + 1 : obj, sym);
  }
  pthread_mutex_unlock(&mu);
}
