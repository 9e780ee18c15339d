"""Build no-op stand-ins for the CUDA libraries that PyPI's torch wheel links against.

PyPI only has the CUDA build of torch for Linux x86_64; its libraries cannot even be
loaded without libcudart, libcublas, libcudnn, ... (about 2.3 GB of nvidia-* wheels).
A CPU benchmark never calls them, so we put tiny shared objects with the same SONAMEs,
symbol versions and symbol names into torch/lib (found first through torch's RPATH,
ahead of any system CUDA). Every stub returns 100 (cudaErrorNoDevice): torch sees no GPU.

Usage: python torch_cuda_stubs.py <site-packages>/torch/lib
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

CUDA = re.compile(r"^lib(cu|nv|nccl)")  # libcudart, libcublas, libcudnn, libnvrtc, libnccl, ...


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout


def main(libdir):
    libdir = os.path.abspath(libdir)
    torch_libs = glob.glob(os.path.join(libdir, "*.so*"))
    torch_libs += glob.glob(os.path.join(os.path.dirname(libdir), "*.so"))  # torch/_C*.so
    present = set(os.listdir(libdir))
    needed = {lib: re.findall(r"\(NEEDED\).*\[(.+)\]", sh("readelf", "-d", lib)) for lib in torch_libs}
    stubs = {n: set() for deps in needed.values() for n in deps if CUDA.match(n) and n not in present}
    if not stubs:
        return
    # Version needs: version name -> library that must define it (e.g. NVSHMEM -> libnvshmem_host.so.3).
    owner = {}
    for lib in torch_libs:
        for f, v in re.findall(r"File: (\S+)  Cnt: \d+\n\s+\S+\s+Name: (\S+)", sh("readelf", "-V", lib)):
            if f in stubs:
                owner[v] = f
    # Symbols really defined somewhere: torch itself, python, and the non-CUDA system libraries.
    objs = torch_libs + [os.path.realpath(sys.executable)]
    for line in sh("ldd", *objs).splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not CUDA.match(m.group(1)):
            objs.append(m.group(2))
    defined = set()
    for obj in set(objs):
        defined.update(l.split()[-1].split("@")[0] for l in sh("nm", "-D", "--defined-only", obj).splitlines())
    for lib in torch_libs:
        for line in sh("nm", "-D", "--undefined-only", lib).splitlines():
            kind, sym = line.split()[-2:]
            name, _, version = sym.partition("@")
            if kind != "U" or name in defined:
                continue
            if version in owner:
                stubs[owner[version]].add(name)
            elif not version:  # unversioned: give it to every stubbed dependency of this lib
                for n in needed[lib]:
                    if n in stubs:
                        stubs[n].add(name)
    with tempfile.TemporaryDirectory() as tmp:
        src, vmap = os.path.join(tmp, "stub.c"), os.path.join(tmp, "stub.map")
        for soname, syms in sorted(stubs.items()):
            with open(src, "w") as f:
                for i, s in enumerate(sorted(syms)):
                    f.write(f'int s{i}(void) __asm__("{s}");\nint s{i}(void) {{ return 100; }}\n')
            cmd = ["gcc", "-shared", "-fPIC", "-o", os.path.join(libdir, soname), src, f"-Wl,-soname,{soname}"]
            versions = [v for v, f in owner.items() if f == soname]
            if versions:
                with open(vmap, "w") as f:
                    f.write(f"{versions[0]} {{ global: *; }};\n")
                cmd.append(f"-Wl,--version-script={vmap}")
            subprocess.run(cmd, check=True)
            print(f"torch_cuda_stubs: {soname} ({len(syms)} symbols)")


if __name__ == "__main__":
    main(sys.argv[1])
