"""``python -m worker.rpc``: the RPC server process that ``corral rpc-server`` runs."""

from worker.host.openmp_spin import bound_openmp_spinning

bound_openmp_spinning()  # before llama.cpp loads: its compute threads spin as a worker's do

from worker.rpc.server import main  # noqa: E402 (after the environment it depends on)

main()
