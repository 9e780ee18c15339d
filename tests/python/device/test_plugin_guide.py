"""docs/plugin_guide.md's walkthrough builds: its C blocks (the entry point, a kernel and
its registration) compile as one plugin source against the device headers with warnings
as errors, and its CMake block builds that source as a plugin project against the Oar
build's exported OarDevice package; the library exports only oar_init_plugin and, filling
only the slots the guide's blocks show, is refused naming the first missing required
slot. Every `oar.` name the guide, Note [Devices] and the README's devices section cite
exists."""
import os
import re
import subprocess

import pytest

import oar
from build_tree import ROOT, build_dirs

GUIDE = os.path.join(ROOT, "docs", "plugin_guide.md")
DOCS = [GUIDE, os.path.join(ROOT, "docs", "notes", "devices.md"), os.path.join(ROOT, "README.md")]

# What the guide's blocks leave to the reader: the slot functions they name and the
# condition in the kernel's example.
PRELUDE = """
#include <oar/device_ext.h>
#include <oar/kernel_ext.h>
static int launch_failed = 0;
static OAR_Status my_initialize(void) { return OAR_SUCCESS; }
static OAR_Status my_register_kernels(const OAR_KernelApi* api);
"""


def blocks(lang):
    text = open(GUIDE).read()
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


def plugin_source():
    c = blocks("c")
    assert len(c) == 2, "the guide's C blocks changed: update this test"
    return PRELUDE + "\n".join(c)


def test_the_c_blocks_compile_as_one_plugin(tmp_path):
    src = tmp_path / "my_dev.c"
    src.write_text(plugin_source())
    out = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
                          "-fsyntax-only", "-I", os.path.join(ROOT, "backends", "include"), str(src)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_cmake_block_builds_the_plugin_and_the_runtime_names_what_is_missing(tmp_path):
    cmake = blocks("cmake")
    assert len(cmake) == 1, "the guide's CMake block changed: update this test"
    (tmp_path / "CMakeLists.txt").write_text(cmake[0])
    (tmp_path / "my_dev.c").write_text(plugin_source())
    config = [os.path.join(d, "cmake") for d in build_dirs()
              if os.path.exists(os.path.join(d, "cmake", "OarDeviceConfig.cmake"))]
    assert config, f"no build tree with cmake/OarDeviceConfig.cmake among {build_dirs()}"
    build = tmp_path / "build"
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(build), f"-DOarDevice_DIR={config[0]}",
                 "-DCMAKE_C_COMPILER=cc"],
                ["cmake", "--build", str(build)]):
        out = subprocess.run(cmd, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
    lib = build / "liboar_my_dev.so"
    assert lib.exists()
    syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert [ln.split()[-1] for ln in syms.splitlines() if " T " in ln] == ["oar_init_plugin"]
    with pytest.raises(Exception, match=r"liboar_my_dev\.so'\): device 'my_dev', plugin ABI 1\.\d+, "
                                        r"runtime ABI 1\.\d+: .*required slot OAR_DeviceInterface\.finalize is null"):
        oar._plugins.load_plugin(str(lib))
    assert "my_dev" not in oar.device.get_all_custom_device_type()


def test_every_oar_name_the_docs_cite_exists():
    missing = []
    for path in DOCS:
        text = open(path).read()
        if path.endswith("README.md"):
            text = text[text.index("## Devices"):]
            text = text[:text.index("\n## ", 3)]
        for name in sorted(set(re.findall(r"\boar\.[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]", text))):
            obj = oar
            try:
                for part in name.split(".")[1:]:
                    obj = getattr(obj, part)
            except AttributeError:
                missing.append(f"{os.path.basename(path)}: {name}")
    assert not missing, missing
