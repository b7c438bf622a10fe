"""Hugging Face fetching with the real huggingface_hub client against a local Hub server."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest

from specbench.base.errors import ModelError
from specbench.models.cache import hf_cache_dir
from specbench.models.resolve import resolve_models
from specbench.models.spec import HfSource, ModelSpec
from tests.models.tiny_gguf import write_tiny_gguf

TOKEN = "hf_testSECRETvalue123"


def _hf(repo: str, **kw) -> dict[str, ModelSpec]:
    return {"m": ModelSpec(hf=HfSource(repo=repo, **kw))}


def _resolve(specs):
    return resolve_models(specs, base_dir=Path("."))["m"]


def _files_in_cache() -> list[Path]:
    root = hf_cache_dir()
    return [p for p in root.rglob("*") if p.is_file() and ("blobs" in p.parts or "snapshots" in p.parts)]


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_tiny_gguf(tmp_path / "src" / "tiny.gguf", n_tensors=40)


def test_one_file_fetched_verified_and_cached(hub, tiny):
    commit = hub.add_commit("org/tiny", {"tiny.gguf": tiny, "README.md": b"# tiny\n"})
    seen: list[tuple[str, int, int | None]] = []
    specs = _hf("org/tiny", file="tiny.gguf")
    model = resolve_models(specs, Path("."), progress=lambda *a: seen.append(a))["m"]
    assert seen[-1] == ("org/tiny/tiny.gguf", tiny.stat().st_size, tiny.stat().st_size)  # bytes, for the bar
    assert model.path.read_bytes() == tiny.read_bytes()
    assert model.sha256 == hashlib.sha256(tiny.read_bytes()).hexdigest()
    assert model.revision == commit
    assert model.metadata.vocab_size == 300 and model.metadata.architecture == "llama"
    assert str(model.path).startswith(str(hf_cache_dir()))
    gets = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert len(gets) == 1
    again = _resolve(_hf("org/tiny", file="tiny.gguf"))  # nothing fetched twice
    assert again.path == model.path
    assert len([r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]) == 1


def test_split_set_in_subfolder(hub, tmp_path):
    first = write_tiny_gguf(tmp_path / "src" / "model-Q4.gguf", n_tensors=3, split_max_tensors=1)
    shards = {f"Q4/{p.name}": p for p in sorted(first.parent.glob("model-Q4-*.gguf"))}
    assert len(shards) == 3
    other = write_tiny_gguf(tmp_path / "src" / "model-Q8.gguf")
    hub.add_commit("org/split", {**shards, "Q8/model-Q8.gguf": other})
    model = _resolve(_hf("org/split", pattern="Q4/*.gguf"))
    assert [p.name for p in model.files] == [Path(n).name for n in shards]
    assert model.path.name == "model-Q4-00001-of-00003.gguf"
    assert model.metadata.n_shards == 3 and model.metadata.parameter_count == 3 * 8 * 16
    # naming one shard also fetches the whole set
    model2 = _resolve(_hf("org/split", file="Q4/model-Q4-00002-of-00003.gguf"))
    assert model2.path == model.path and len(model2.files) == 3


def test_split_set_missing_a_shard_on_the_hub(hub, tmp_path):
    first = write_tiny_gguf(tmp_path / "src" / "m.gguf", n_tensors=3, split_max_tensors=1)
    shards = {p.name: p for p in sorted(first.parent.glob("m-*.gguf")) if "00002" not in p.name}
    hub.add_commit("org/holey", shards)
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/holey", pattern="*.gguf"))
    assert "missing 1 of 3 shards" in _one_line(exc) and "m-00002-of-00003.gguf" in str(exc.value)


def test_pinned_revision(hub, tmp_path):
    old = write_tiny_gguf(tmp_path / "v1" / "m.gguf", seed=1)
    new = write_tiny_gguf(tmp_path / "v2" / "m.gguf", seed=2)
    c1 = hub.add_commit("org/rev", {"m.gguf": old})
    c2 = hub.add_commit("org/rev", {"m.gguf": new})
    pinned = _resolve(_hf("org/rev", file="m.gguf", revision=c1))
    latest = _resolve(_hf("org/rev", file="m.gguf"))
    assert (pinned.revision, latest.revision) == (c1, c2)
    assert pinned.path.read_bytes() == old.read_bytes()
    assert latest.path.read_bytes() == new.read_bytes()
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/rev", file="m.gguf", revision="no-such-branch"))
    assert "revision 'no-such-branch' not found" in _one_line(exc)


def test_checksum_mismatch_is_refused_and_nothing_cached(hub, tiny):
    hub.add_commit("org/bad", {"tiny.gguf": tiny})
    hub.lie_sha256.add("org/bad/tiny.gguf")
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/bad", file="tiny.gguf"))
    assert "sha256 mismatch" in _one_line(exc)
    assert _files_in_cache() == []


def test_gated_repo_401_and_403_never_show_the_token(hub, tiny, monkeypatch):
    hub.add_commit("org/gated", {"tiny.gguf": tiny}, gated_token=TOKEN)
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/gated", file="tiny.gguf"))
    text = _one_line(exc)
    assert "licence" in text and "HF_TOKEN" in text and "401" in text
    wrong = "hf_wrongSECRET456"
    monkeypatch.setenv("HF_TOKEN", wrong)
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/gated", file="tiny.gguf"))
    text = _one_line(exc)
    assert "licence" in text and "403" in text and wrong not in text and "SECRET" not in text
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    model = _resolve(_hf("org/gated", file="tiny.gguf"))
    assert model.path.read_bytes() == tiny.read_bytes()
    assert TOKEN not in model.model_dump_json()
    assert any(r.authorization == f"Bearer {TOKEN}" for r in hub.requests)


def test_404_repo_and_file_list_what_exists(hub, tiny, tmp_path):
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/nothing", file="x.gguf"))
    assert "org/nothing not found" in _one_line(exc)
    other = write_tiny_gguf(tmp_path / "src" / "other-Q8_0.gguf")
    hub.add_commit("org/tiny", {"tiny-Q4_0.gguf": tiny, "other-Q8_0.gguf": other, "README.md": b"x"})
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/tiny", file="tiny-Q5_K_M.gguf"))
    text = _one_line(exc)
    assert "tiny-Q5_K_M.gguf is not in" in text and "tiny-Q4_0.gguf" in text and "other-Q8_0.gguf" in text
    assert "README.md" not in text
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/tiny", pattern="*.gguf"))
    assert "matches 2 models" in _one_line(exc)


def test_interrupted_download_resumes_with_range(hub, tmp_path):
    # huggingface_hub writes in 10 MiB chunks: the file must be bigger for a resume to have a start
    big = write_tiny_gguf(tmp_path / "src" / "big.gguf", n_tensors=1, tensor_shape=(1024, 3200))
    hub.add_commit("org/big", {"big.gguf": big})
    cut = 11 << 20
    hub.drop_once["org/big/big.gguf"] = cut
    model = _resolve(_hf("org/big", file="big.gguf"))
    assert model.sha256 == hashlib.sha256(big.read_bytes()).hexdigest()
    ranges = [r.range for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert len(ranges) == 2 and ranges[0] is None
    start = int(ranges[1].removeprefix("bytes=").rstrip("-"))
    assert 0 < start <= cut


def test_download_that_keeps_breaking_is_one_line_and_caches_nothing(hub, tiny):
    hub.add_commit("org/tiny", {"tiny.gguf": tiny})
    hub.drop_always["org/tiny/tiny.gguf"] = 1000
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/tiny", file="tiny.gguf"))
    assert "download of org/tiny/tiny.gguf broke off" in _one_line(exc)
    assert _files_in_cache() == []


def test_offline_and_unreachable_use_the_cache(hub, tiny, monkeypatch):
    commit = hub.add_commit("org/tiny", {"tiny.gguf": tiny})
    first = _resolve(_hf("org/tiny", file="tiny.gguf"))
    n_requests = len(hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = _resolve(_hf("org/tiny", pattern="tiny*.gguf"))
    assert (offline.path, offline.revision) == (first.path, commit)
    assert len(hub.requests) == n_requests  # offline: not one request
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.stop()
    unreachable = _resolve(_hf("org/tiny", file="tiny.gguf"))
    assert unreachable.path == first.path and unreachable.sha256 == first.sha256


def test_unreachable_with_empty_cache_is_one_line(empty_home, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/tiny", file="tiny.gguf"))
    text = _one_line(exc)
    assert "cannot reach the Hugging Face Hub" in text and "not in the cache" in text
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/tiny", file="tiny.gguf"))
    assert "HF_HUB_OFFLINE is set" in _one_line(exc)


def test_not_enough_disk_is_refused_before_downloading(hub, tiny):
    hub.add_commit("org/huge", {"tiny.gguf": tiny})
    hub.claim_size["org/huge/tiny.gguf"] = 1 << 60  # an exabyte
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/huge", file="tiny.gguf"))
    assert "not enough disk space" in _one_line(exc)
    assert not [r for r in hub.requests if "/resolve/" in r.path]


def test_hf_cache_follows_hf_home(hub, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    hub.add_commit("org/tiny", {"tiny.gguf": tiny})
    model = _resolve(_hf("org/tiny", file="tiny.gguf"))
    assert str(model.path).startswith(str(tmp_path / "hfhome" / "hub"))


def test_a_download_broken_in_one_run_resumes_in_the_next(hub, tmp_path):
    """The bytes of a transfer that broke off for good stay on disk; the next run asks for the rest."""
    big = write_tiny_gguf(tmp_path / "src" / "big.gguf", n_tensors=1, tensor_shape=(1024, 512))
    hub.add_commit("org/big", {"big.gguf": big})
    cut = 100_000
    hub.drop_always["org/big/big.gguf"] = cut
    with pytest.raises(ModelError) as exc:
        _resolve(_hf("org/big", file="big.gguf"))
    assert "broke off" in _one_line(exc) and "resume" in _one_line(exc)
    first = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    kept = cut * len(first)
    assert _files_in_cache() == []  # nothing half-done where a reader would take it for the file
    del hub.drop_always["org/big/big.gguf"]
    hub.requests.clear()
    model = _resolve(_hf("org/big", file="big.gguf"))  # the next run
    assert model.sha256 == hashlib.sha256(big.read_bytes()).hexdigest()
    [again] = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert again.range == f"bytes={kept}-" and 0 < kept < big.stat().st_size
    assert not list(hf_cache_dir().rglob("*.part"))


@pytest.mark.parametrize(
    ("commit", "name"), [("c" * 40, "../../../../x.gguf"), ("c" * 40, "/tmp/x.gguf"), ("../..", "x.gguf")]
)
def test_a_hub_name_that_leaves_the_cache_is_refused_before_anything_moves(tmp_path, commit, name):
    """The Hub's own file names and commit (a mirror set in HF_ENDPOINT answers what it likes) are
    joined only inside the repo's cache folder."""
    from specbench.base.paths import UnsafePath
    from specbench.models.hfresume import place_in_cache

    storage = tmp_path / "hub" / "models--org--tiny"
    part = storage / "partial" / ("a" * 64 + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"GGUF")
    with pytest.raises(UnsafePath):
        place_in_cache(part, storage, "a" * 64, commit, name)
    assert part.read_bytes() == b"GGUF" and not (storage / "blobs").exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [part.name]


@pytest.mark.parametrize(
    ("sha", "listed", "words"),
    [
        ("c" * 40, "../../../../x.gguf", "no file in Hugging Face repo"),  # never chosen
        ("c" * 40, "/tmp/x.gguf", "no file in Hugging Face repo"),
        ("../../..", "tiny.gguf", "which is no commit"),
    ],
)
def test_a_hub_answer_that_would_leave_the_cache_is_refused(empty_home, monkeypatch, sha, listed, words):
    """A mirror (HF_ENDPOINT) answers what it likes: a listed name or a commit that would lead out of
    the cache is never used, and nothing is written."""
    from types import SimpleNamespace

    from huggingface_hub import HfApi

    from specbench.models.hf import fetch_hf

    sibling = SimpleNamespace(rfilename=listed, size=4, lfs=SimpleNamespace(size=4, sha256="a" * 64))
    info = SimpleNamespace(sha=sha, siblings=[sibling])
    monkeypatch.setattr(HfApi, "model_info", lambda *a, **k: info)
    with pytest.raises(ModelError) as exc:
        fetch_hf(HfSource(repo="org/tiny", pattern="*.gguf"))
    assert words in str(exc.value) and "\n" not in str(exc.value)
    assert not empty_home.exists() or not any(p.is_file() for p in empty_home.rglob("*"))


def test_select_files_takes_a_whole_split_set_or_names_its_missing_shards():
    from specbench.models.hf import RemoteFile, select_files

    names = ["Q4/m-00001-of-00003.gguf", "Q4/m-00003-of-00003.gguf", "one.gguf", "Q4/m-00002-of-00003.gguf"]
    remote = [RemoteFile(name=n) for n in names]
    src = HfSource(repo="org/m", pattern="Q4/*.gguf")
    assert [f.name for f in select_files(src, remote)] == sorted(names[:2] + names[3:])
    assert [f.name for f in select_files(HfSource(repo="org/m", file="one.gguf"), remote)] == ["one.gguf"]
    missing = (
        r"set Q4/m-00001-of-00003.gguf in org/m@main is missing 1 of 3 shards \(Q4/m-00002-of-00003.gguf\)"
    )
    with pytest.raises(ModelError, match=missing):
        select_files(src, remote[:3])


def test_an_error_without_a_message_is_still_one_line():
    """huggingface_hub and httpx raise some errors with an empty message: the line names the type
    (it was an IndexError traceback)."""
    from specbench.models.hf import HfSource, _hub_error

    src = HfSource(repo="o/m", file="m.gguf")
    assert str(_hub_error(src, OSError())) == "fetching o/m failed: OSError"
    assert str(_hub_error(src, ValueError("bad\nmore"))) == "fetching o/m failed: ValueError: bad"
