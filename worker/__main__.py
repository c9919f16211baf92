from worker.host.import_fence import fence_unused_modules
from worker.host.openmp_spin import bound_openmp_spinning

# ggml's OpenMP threads spin between two decodes, and how long decides this worker's speed.
bound_openmp_spinning()
fence_unused_modules()  # before structlog and Litestar look for them

from worker.main import main  # noqa: E402 (after the environment and the fence it depends on)

main()
