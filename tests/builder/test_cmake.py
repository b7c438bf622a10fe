"""specbench.builder.cmake: what a failed build log shows the user, and progress from ninja/make output."""

import sys

from specbench.builder.cmake import cache_fits, compile_failure, error_lines, parse_step, stream_step


def test_cmake_errors_keep_their_message():
    log = 'CMake Error at x/CMakeLists.txt:178 (target_link_libraries):\n  Target "ggml-cuda" links to:\n\n'
    log += "    CUDA::cublas\n\n  but the target was not found.\n-- Configuring incomplete\n"
    [line] = error_lines(log)
    assert "CUDA::cublas" in line and "but the target was not found." in line and "incomplete" not in line
    long = (
        "CMake Error at y.txt:1:\n" + "".join(f"  line {i}\n\n" for i in range(1, 7)) + "CMake Error: two\n"
    )
    assert error_lines(long) == ["CMake Error at y.txt:1: line 1 line 2 line 3 line 4", "CMake Error: two"]


def test_error_lines_keep_the_last_compiler_errors(tmp_path):
    log = "[1/3] ok\nfoo.cpp:1:2: error: first\nwarning: meh\nFAILED: foo.o\nbar.cpp:3:4: error: second\n"
    assert error_lines(log) == ["foo.cpp:1:2: error: first", "FAILED: foo.o", "bar.cpp:3:4: error: second"]
    path = tmp_path / "build.log"
    path.write_text(log + "".join(f"baz.cpp:{i}:1: error: more\n" for i in range(9)))
    failure = compile_failure("compiling llama.cpp", path)
    assert failure.details == [f"baz.cpp:{i}:1: error: more" for i in range(1, 9)]  # the last 8 are shown
    assert str(failure).startswith("compiling llama.cpp failed (foo.cpp:1:2: error: first); full log:")


def test_progress_steps_from_ninja_and_make():
    assert parse_step("[12/222] Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o") == (12, 222)
    assert parse_step("[ 45%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o") == (45, 100)
    assert parse_step("-- Configuring done") is None


def test_a_build_step_gets_no_secret_and_the_c_locale(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_buildSECRET")
    monkeypatch.setenv("GITHUB_TOKEN", "gh_buildSECRET")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    log = tmp_path / "build.log"
    show = "import os; print(sorted(os.environ.items()))"
    assert stream_step([sys.executable, "-c", show], log, None, "build") == 0
    text = log.read_text()
    assert "buildSECRET" not in text and "('LC_ALL', 'C')" in text and "NINJA_STATUS" in text


def test_a_build_folder_is_reused_only_from_the_same_source_and_generator(tmp_path):
    """cmake refuses another -S or generator for a configured folder: the build wipes it first."""
    src, cache = tmp_path / "src", tmp_path / "CMakeCache.txt"
    cache.write_text(f"CMAKE_GENERATOR:INTERNAL=Ninja\nCMAKE_HOME_DIRECTORY:INTERNAL={src}\n")
    assert cache_fits(cache, src, ninja=True)
    assert not cache_fits(cache, src, ninja=False)  # Ninja gone from PATH since
    assert not cache_fits(cache, tmp_path / "tree", ninja=True)  # configured in place by an older specbench
    cache.write_text("CMAKE_GENERATOR:INTERNAL=Unix Makefiles\n")
    assert not cache_fits(cache, src, ninja=False)  # no source recorded
