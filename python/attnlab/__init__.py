"""attnlab from Python: checkpoints, the PyTorch model, task data and results."""
