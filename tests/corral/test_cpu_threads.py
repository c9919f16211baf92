"""llama-server's default thread count: physical cores, performance cores on hybrid CPUs."""

from __future__ import annotations

from pathlib import Path

from corral.cpu_threads import default_threads


def _sysfs(root: Path, siblings: list[str]) -> Path:
    for cpu, text in enumerate(siblings):
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "thread_siblings").write_text(text + "\n")
    return root


def test_hyperthreads_of_one_core_count_once(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path / "cpu", ["03", "03", "0c", "0c"])  # 2 cores, 2 threads each
    assert default_threads(sysfs, tmp_path / "absent") == 2


def test_on_a_hybrid_cpu_only_performance_cores_count(tmp_path: Path) -> None:
    # cpus 0-3: two performance cores with hyperthreads; 4-7: four efficiency cores.
    sysfs = _sysfs(tmp_path / "cpu", ["03", "03", "0c", "0c", "10", "20", "40", "80"])
    performance = tmp_path / "cpu_core_cpus"
    performance.write_text("0-3\n")
    assert default_threads(sysfs, performance) == 2


def test_without_sysfs_the_logical_cpus_halved_above_four(tmp_path: Path) -> None:
    nothing = tmp_path / "nothing"
    assert default_threads(nothing, nothing, logical_cpus=4) == 4
    assert default_threads(nothing, nothing, logical_cpus=16) == 8
