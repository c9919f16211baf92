"""Devices: the GPU options, llama.cpp's fit, what the model holds where (docs/serving.md)."""
