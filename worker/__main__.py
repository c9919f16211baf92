import os

# ggml's OpenMP threads busy-wait between two decodes by default. In a Python worker the gap
# between decodes is longer than in llama-server, so on a loaded machine the spinning threads
# starved the event loop and the engine thread: 8 tok/s instead of 52 on 2 busy cores. It has
# to be set before llama.cpp's libraries load; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from worker.main import main  # after the environment it depends on

main()
