"""Which machine facts keep a run from being resumed elsewhere (pyperf's checked metadata)."""

from __future__ import annotations

from specbench.machine.envinfo import EnvInfo, GpuInfo
from specbench.results.manifest import machine_differences


def env(hostname: str | None = "box-a", cpu: str = "AMD EPYC", gpus: tuple[str, ...] = (), **more) -> EnvInfo:
    return EnvInfo(
        hostname=hostname, os="Linux", arch="x86_64", cpu_model=cpu, cpu_cores=more.get("cores", 2),
        gpus=[GpuInfo(name=g, driver=more.get("driver", "550")) for g in gpus], python="3.11",
        specbench_version="0.1.0", backend="cpu",
    )  # fmt: skip


def test_the_same_machine_has_no_differences_even_with_other_cores_or_driver():
    then = env(gpus=("NVIDIA H100",), cores=2, driver="550")
    assert machine_differences(then, env(gpus=("NVIDIA H100",), cores=16, driver="560")) == []


def test_hostname_cpu_and_gpus_are_each_named_with_both_values():
    then = env("box-a", "AMD EPYC", ("NVIDIA H100",))
    now = env("box-b", "Intel Xeon", ("NVIDIA H100", "NVIDIA H100"))
    assert machine_differences(then, now) == [
        "hostname box-a, here box-b",
        "CPU AMD EPYC, here Intel Xeon",
        "GPUs NVIDIA H100, here NVIDIA H100, NVIDIA H100",
    ]
    assert machine_differences(env(gpus=()), env(gpus=("NVIDIA L4",))) == ["GPUs none, here NVIDIA L4"]


def test_a_manifest_without_a_hostname_compares_the_rest():
    assert machine_differences(env(hostname=None), env("box-b")) == []
    assert machine_differences(env(hostname=None), env("box-b", cpu="Other")) == ["CPU AMD EPYC, here Other"]


def test_a_shard_label_is_i_of_n_and_nothing_else(tmp_path):
    """merge names a shard's folder after its label (shards/shard-i-of-N): a manifest that says
    ``1/../../x`` would have had merge write outside its --out."""
    import pytest
    from pydantic import ValidationError

    from specbench.results.manifest import Manifest, MergedShard
    from tests.helpers.fakeruns import manifest

    good = manifest(tmp_path / "run", env()).model_dump(mode="json")
    assert Manifest.model_validate({**good, "shard": "2/3"}).shard == "2/3"
    for bad in ("1/../../x", "../1/2", "1/2/3", "0/2", "1/2\n"):
        with pytest.raises(ValidationError):
            Manifest.model_validate({**good, "shard": bad})
        with pytest.raises(ValidationError):
            MergedShard(shard=bad, run_id="r", status="complete", n_samples=1)
