"""A shared config's free llama.cpp and cmake arguments cannot reach outside specbench's folders:
a flag that names a file for llama.cpp to read or write, and a cmake variable that runs a program or
writes elsewhere, are refused in one line naming the key (issue 58 item 1: the `args:` gap)."""

from __future__ import annotations

import pytest

from specbench.base.errors import ConfigError
from specbench.plan.options import FILE_FLAGS
from tests.helpers.sweeps import make_config


@pytest.mark.parametrize(
    ("sections", "where"),
    [
        ({"args": ["--log-file", "/home/me/notes.txt"]}, "args[0]"),
        ({"args": ["--no-warmup", "--log-file=/home/me/notes.txt"]}, "args[1]"),
        ({"args": ["-o", "../../x"]}, "args[0]"),
        ({"pairs": {"p": {"target": "big", "draft": "small", "args": ["--slot-save-path", "/tmp"]}}},
         "pairs.p.args[0]"),
        ({"llama_cpp": {"backend": "cpu", "args": ["--prompt-cache", "/etc/x"]}}, "llama_cpp.args[0]"),
        ({"sweep": {"method": ["draft"], "args": [{"label": "a", "args": ["-lcs", "/x"]}]}},
         "sweep.args[0].args[0]"),
    ],
)  # fmt: skip
def test_a_flag_that_names_a_file_is_refused_naming_its_key(tmp_path, sections, where):
    with pytest.raises(ConfigError) as exc:
        make_config(tmp_path, **sections)
    message = str(exc.value)
    assert "\n" not in message and where in message and "file or folder" in message, message


def test_every_file_flag_is_refused(tmp_path):
    """The list itself: each spelling is refused (a spelling dropped from the check fails here)."""
    for flag in sorted(FILE_FLAGS):
        with pytest.raises(ConfigError, match="file or folder"):
            make_config(tmp_path, args=[flag, "x"])


@pytest.mark.parametrize(
    "arg",
    [
        "-DCMAKE_RUNTIME_OUTPUT_DIRECTORY=/home/me",
        "-DCMAKE_C_COMPILER_LAUNCHER=/bin/rm",
        "-DCMAKE_CXX_COMPILER=/tmp/evil",
        "-DCMAKE_TOOLCHAIN_FILE=/tmp/t.cmake",
        "-DCMAKE_PROJECT_INCLUDE=/tmp/x.cmake",
        "-DCMAKE_INSTALL_PREFIX:PATH=/",
        "-C/tmp/cache.cmake",
        "--trace",
    ],
)
def test_a_cmake_argument_that_reaches_out_is_refused(tmp_path, arg):
    with pytest.raises(ConfigError) as exc:
        make_config(tmp_path, llama_cpp={"backend": "cpu", "cmake_args": [arg]})
    message = str(exc.value)
    assert "\n" not in message and "llama_cpp.cmake_args" in message, message


def test_build_options_pass(tmp_path):
    defines = ["-DGGML_NATIVE=OFF", "-DGGML_AVX2:BOOL=ON"]
    cfg = make_config(
        tmp_path, llama_cpp={"backend": "cpu", "cmake_args": defines}, args=["--no-warmup", "-ub", "512"]
    )
    assert cfg.builds[0].cmake_args == defines
