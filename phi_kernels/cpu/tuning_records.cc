// Note [Tuning records]: the file of a table's recorded choices, per machine and build.
//
// Where: FLAGS_oar_tuning_cache names the directory ("0", "off" or "false": no records);
// empty (the default) means $XDG_CACHE_HOME/oar/tuning, else $HOME/.cache/oar/tuning.
// What: `<table>-<hash>.tsv`, whose hash is that of its first line, the signature every
// choice in it depends on: this library's build (its GNU build id), the CPU (cpuid's
// brand string, family, model and stepping), the kernel copies that run (Note [CPU
// dispatch]) and the caller's context. Another build or CPU reads another file, so a
// record is never taken where it was not timed. Then one `<key in hex>\t<choice>` line
// per record, appended with one write(2) each, so processes tuning at once interleave
// whole lines; a line that does not parse is skipped.
#include "phi_kernels/funcs/tuning_records.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "phi_kernels/cpu/dispatch/cpu_capability.h"

DEFINE_string(oar_tuning_cache, "",
              "Directory of the kernels' tuning records (Note [Tuning records]); empty: $XDG_CACHE_HOME/oar/tuning "
              "or ~/.cache/oar/tuning; 0 or off: none, every process times its candidates");

namespace oar::phi {
namespace {

constexpr size_t kMaxFileBytes = 8 << 20;  // a larger file is not ours: read as empty

// The GNU build id of the object this code is linked into, in hex ("" without one).
std::string build_id() {
  struct Find {
    uintptr_t addr;
    std::string id;
  } find{reinterpret_cast<uintptr_t>(&build_id), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
    auto* f = static_cast<Find*>(data);
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
      mine = ph.p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph.p_memsz;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type != PT_NOTE) continue;
      const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
      const char* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const char* name = p + sizeof(ElfW(Nhdr));
        const char* desc = name + ((n->n_namesz + 3) & ~3u);
        if (desc + n->n_descsz > end) break;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
          static const char* hex = "0123456789abcdef";
          for (uint32_t j = 0; j < n->n_descsz; ++j) {
            const auto b = static_cast<unsigned char>(desc[j]);
            f->id += hex[b >> 4], f->id += hex[b & 15];
          }
          return 1;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
      }
    }
    return 1;
      },
      &find);
  if (!find.id.empty()) return find.id;
  // No build id (a linker without --build-id): the object's path, size and time stand in.
  Dl_info info;
  struct stat st;
  if (dladdr(reinterpret_cast<void*>(&build_id), &info) == 0 || info.dli_fname == nullptr ||
      stat(info.dli_fname, &st) != 0)
    return "unknown";
  return std::string(info.dli_fname) + ':' + std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) +
         '.' + std::to_string(st.st_mtim.tv_nsec);
}

std::string cpu_signature() {
  unsigned r[12] = {};
  std::string brand;
  if (__get_cpuid(0x80000000u, &r[0], &r[1], &r[2], &r[3]) && r[0] >= 0x80000004u) {
    for (unsigned leaf = 0; leaf < 3; ++leaf)
      __get_cpuid(0x80000002u + leaf, &r[4 * leaf], &r[4 * leaf + 1], &r[4 * leaf + 2], &r[4 * leaf + 3]);
    brand.assign(reinterpret_cast<const char*>(r), sizeof r);
    brand.resize(std::strlen(brand.c_str()));
    while (!brand.empty() && brand.back() == ' ') brand.pop_back();
  }
  unsigned a = 0, b = 0, c = 0, d = 0;
  __get_cpuid(1, &a, &b, &c, &d);
  char ids[48];
  std::snprintf(ids, sizeof ids, " family %u model %u stepping %u", ((a >> 8) & 15) + ((a >> 20) & 255),
                ((a >> 4) & 15) | ((a >> 12) & 0xf0), a & 15);
  return brand + ids;
}

// What every record depends on besides the caller's context (tabs and newlines out).
const std::string& machine_signature() {
  static const std::string s = [] {
    std::string t = "build " + build_id() + "; cpu " + cpu_signature() + "; kernels " +
                    cpu::capability_name(cpu::active_capability());
    for (char& ch : t)
      if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
    return t;
  }();
  return s;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::string records_dir() {
  std::string dir = FLAGS_oar_tuning_cache;
  if (dir.empty()) {  // a C++ program that never read FLAGS_* from its environment
    if (const char* v = std::getenv("FLAGS_oar_tuning_cache")) dir = v;
  }
  if (dir == "0" || dir == "off" || dir == "false" || dir == "OFF" || dir == "False") return "";
  if (!dir.empty()) return dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return std::string(x) + "/oar/tuning";
  if (const char* h = std::getenv("HOME"); h && h[0] == '/') return std::string(h) + "/.cache/oar/tuning";
  return "";
}

std::string header_of(const std::string& context) {
  std::string c = context;
  for (char& ch : c)
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  return "# oar tuning records v1: " + machine_signature() + "; " + c;
}

std::string hex_of(const std::string& key) {
  static const char* hex = "0123456789abcdef";
  std::string h;
  h.reserve(2 * key.size());
  for (unsigned char b : key) h += hex[b >> 4], h += hex[b & 15];
  return h;
}

bool make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// One table's records as read from (and written to) one file.
struct Table {
  std::string path, header;
  bool loaded = false, valid_file = false;               // valid_file: the file exists with our header
  std::unordered_map<std::string, std::string> choices;  // hex key -> choice

  void load() {
    loaded = true;
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return;
    std::string text;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= kMaxFileBytes) text.append(buf, n);
    std::fclose(f);
    if (text.size() > kMaxFileBytes) return;
    size_t pos = text.find('\n');
    if (pos == std::string::npos || text.compare(0, pos, header) != 0) return;
    valid_file = true;
    while (++pos < text.size()) {
      const size_t end = text.find('\n', pos);
      if (end == std::string::npos) break;  // a line cut short (a writer killed mid-line)
      const size_t tab = text.find('\t', pos);
      if (tab != std::string::npos && tab > pos && tab + 1 < end) {
        const std::string key = text.substr(pos, tab - pos), choice = text.substr(tab + 1, end - tab - 1);
        bool ok = key.size() % 2 == 0 && choice.find('\t') == std::string::npos;
        for (char ch : key) ok = ok && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'));
        for (char ch : choice) ok = ok && ch > ' ' && ch < 127;
        if (ok) choices[key] = choice;
      }
      pos = end;
    }
  }

  // Whether the file now starts with our header (another process may have made it).
  bool has_header() const {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    std::string first(header.size() + 1, '\0');
    const size_t n = std::fread(first.data(), 1, first.size(), f);
    std::fclose(f);
    return n == first.size() && first.compare(0, header.size(), header) == 0 && first.back() == '\n';
  }

  void append(const std::string& hex_key, const std::string& choice) {
    choices[hex_key] = choice;
    const std::string line = hex_key + '\t' + choice + '\n';
    if (!valid_file) valid_file = has_header();
    if (valid_file) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd >= 0) {
        const bool ok = write_all(fd, line);
        ::close(fd);
        if (ok) return;
      }
    }
    // No file yet (or one that is not ours): a new one, with what this process knows, put
    // in place by a rename so that no reader sees it half written.
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || !make_dirs(path.substr(0, slash))) return;
    std::string text = header + '\n';
    for (const auto& [k, c] : choices) text += k + '\t' + c + '\n';
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const bool ok = write_all(fd, text);
    ::close(fd);
    if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) {
      valid_file = true;
    } else {
      std::remove(tmp.c_str());
    }
  }
};

std::mutex& tables_mu() {
  static std::mutex mu;
  return mu;
}

// The table for `table` under the current flag and context, null when records are off.
Table* table_for(const char* table, const std::string& context) {
  static auto* tables = new std::unordered_map<std::string, Table>();  // by path; never freed
  const std::string dir = records_dir();
  if (dir.empty()) return nullptr;
  const std::string header = header_of(context);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(header)));
  const std::string path = dir + '/' + table + '-' + hash + ".tsv";
  Table& t = (*tables)[path];
  if (!t.loaded) {
    t.path = path, t.header = header;
    t.load();
  }
  return &t;
}

}  // namespace

std::string recall_choice(const char* table, const std::string& context, const std::string& key) {
  std::lock_guard<std::mutex> lock(tables_mu());
  Table* t = table_for(table, context);
  if (t == nullptr) return "";
  auto it = t->choices.find(hex_of(key));
  return it == t->choices.end() ? "" : it->second;
}

void record_choice(const char* table, const std::string& context, const std::string& key, const std::string& choice) {
  std::lock_guard<std::mutex> lock(tables_mu());
  if (Table* t = table_for(table, context)) t->append(hex_of(key), choice);
}

std::string tuning_records_path(const char* table, const std::string& context) {
  std::lock_guard<std::mutex> lock(tables_mu());
  const Table* t = table_for(table, context);
  return t ? t->path : "";
}

}  // namespace oar::phi
